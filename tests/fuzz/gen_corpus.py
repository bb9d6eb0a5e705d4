#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpora of tests/fuzz (corpus/<target>/<name>).

Deterministic: running it again rewrites the same files. Files it does not
know (reproducers of fixed bugs, named regress-*) are left alone.
Usage: python3 tests/fuzz/gen_corpus.py [corpus-dir]
"""
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- protobuf, by hand (field numbers from runtime/cri/api.proto) -----------

def varint(n):
    n &= (1 << 64) - 1  # negative int32/int64: ten bytes, two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_int(num, v):
    return varint(num << 3) + varint(v)


def f_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return varint(num << 3 | 2) + varint(len(b)) + b


f_str = f_bytes
f_msg = f_bytes


def f_map(num, d):
    return b"".join(f_msg(num, f_str(1, k) + f_str(2, v)) for k, v in d.items())


def sandbox_meta(name="web-node-1", uid="0123456789abcdef0123456789abcdef", ns="default"):
    return f_str(1, name) + f_str(2, uid) + f_str(3, ns) + f_int(4, 0)


def sandbox_status(sid="sb-1", ip="10.88.0.5", state=0):
    net = f_str(1, ip) + f_msg(2, f_str(1, "fd00::5"))
    return (f_str(1, sid) + f_msg(2, sandbox_meta()) + f_int(3, state) +
            f_int(4, 1700000000123456789) + f_msg(5, net) +
            f_map(7, {"io.kubernetes.pod.name": "web-node-1", "app": "web"}) +
            f_map(8, {"kubernetes.io/config.source": "file"}))


def container_status(cid="ctr-1", state=2, exit_code=-1):
    return (f_str(1, cid) + f_msg(2, f_str(1, "nginx") + f_int(2, 3)) + f_int(3, state) +
            f_int(4, 1700000000000000000) + f_int(5, 1700000001000000000) +
            f_int(6, 1700000002000000000) + f_int(7, exit_code) +
            f_msg(8, f_str(1, "docker.io/library/nginx:1.25")) +
            f_str(9, "sha256:" + "ab" * 32) + f_str(10, "Error") +
            f_str(11, b"exit status \xff\x00 1") +
            f_map(12, {"io.kubernetes.container.name": "nginx"}) +
            f_map(13, {"io.kubernetes.container.restartCount": "3"}))


def container(cid="ctr-1", state=1):
    return (f_str(1, cid) + f_str(2, "sb-1") + f_msg(3, f_str(1, "nginx") + f_int(2, 0)) +
            f_msg(4, f_str(1, "docker.io/library/nginx:1.25")) + f_str(5, "sha256:" + "cd" * 32) +
            f_int(6, state) + f_int(7, 1700000000000000000) +
            f_map(8, {"io.kubernetes.pod.uid": "0123"}) + f_map(9, {"a": ""}))


def event(cid="ctr-1", etype=1):
    return (f_str(1, cid) + f_int(2, etype) + f_int(3, 1700000003000000000) +
            f_msg(4, sandbox_status()) + f_msg(5, container_status(cid, 1, 0)))


def cri_seeds():
    t = "fuzz_cri_decode"
    cond = lambda ty, ok, reason="", msg="": f_msg(1, f_str(1, ty) + f_int(2, 1 if ok else 0) +
                                                   f_str(3, reason) + f_str(4, msg))
    seeds = {
        "00-version": b"\x00" + f_str(1, "0.1.0") + f_str(2, "containerd") + f_str(3, "v1.7.13") +
        f_str(4, "v1"),
        "01-status": b"\x01" + f_msg(1, cond("RuntimeReady", True) + cond(
            "NetworkReady", False, "NetworkPluginNotReady", "cni config uninitialized")),
        "01-status-one-condition": b"\x01" + f_msg(1, cond("RuntimeReady", True)),
        "02-run-pod-sandbox": b"\x02" + f_str(1, "sb-1"),
        "02-run-pod-sandbox-empty-id": b"\x02",
        "03-pod-sandbox-status": b"\x03" + f_msg(1, sandbox_status()) +
        f_msg(3, container_status()) + f_int(4, 1700000004000000000),
        "03-pod-sandbox-status-no-metadata": b"\x03" + f_msg(1, f_str(1, "sb-1")),
        "04-list-pod-sandbox": b"\x04" + b"".join(
            f_msg(1, f_str(1, "sb-%d" % i) + f_msg(2, sandbox_meta("p%d" % i)) + f_int(3, i % 2) +
                  f_int(4, 1700000000000000000 + i) + f_map(5, {"k": "v%d" % i}) +
                  f_map(6, {"x": "y"}) + f_str(7, "runc")) for i in range(3)),
        "05-create-container": b"\x05" + f_str(1, "ctr-1"),
        "06-list-containers": b"\x06" + f_msg(1, container()) + f_msg(1, container("ctr-2", 2)),
        "06-list-containers-bad-state": b"\x06" + f_msg(1, container("ctr-3", 7)),
        "07-container-status": b"\x07" + f_msg(1, container_status()),
        "07-container-status-no-metadata": b"\x07" + f_msg(1, f_str(1, "ctr-1") + f_int(3, 0)),
        "08-image-status": b"\x08" + f_msg(1, f_str(1, "sha256:" + "ef" * 32) +
                                           f_str(2, "docker.io/library/nginx:1.25") +
                                           f_str(3, "docker.io/library/nginx@sha256:" + "01" * 32) +
                                           f_int(4, 67108864)),
        "08-image-status-absent": b"\x08",
        "08-image-status-no-size": b"\x08" + f_msg(1, f_str(1, "sha256:00")),
        "09-pull-image": b"\x09" + f_str(1, "sha256:" + "ef" * 32),
        "0a-container-event": b"\x0a" + event(),
        "0a-container-event-deleted-bare": b"\x0a" + f_str(1, "ctr-9") + f_int(2, 3),
        "0a-container-event-unknown-type": b"\x0a" + f_str(1, "ctr-9") + f_int(2, 17),
        "0c-empty": b"\x0c",
        "0c-empty-unknown-field": b"\x0c" + f_str(15, "ignored"),
        "0d-exec-sync": b"\x0d" + f_str(1, "PATH=/bin\nHOME=/root\n") + f_str(2, "") +
        f_int(3, 0),
        "0d-exec-sync-failed": b"\x0d" + f_str(2, "sh: nope: not found\n") + f_int(3, 127),
        "0d-exec-sync-nul-bytes": b"\x0d" + f_str(1, "a\x00b") + f_int(3, -1),
        # wire.c's rules that protobuf-c sets (issue 18): a nested message given twice
        # (merged), a bool in another wire type, a length prefix past 32 bits.
        "07-container-status-metadata-twice": b"\x07" + f_msg(1, container_status() + f_msg(
            2, f_str(1, "other")) + f_msg(14, f_str(1, "/dev/termination-log") + f_str(3, "\x01"))),
        "04-list-pod-sandbox-long-length": b"\x04" + b"\x3a\x8a\x80\x80\x80\x30" + b"\x00" * 10,
        "truncated-varint": b"\x07\x0a\x80",
        "wrong-wire-type": b"\x04" + varint(1 << 3 | 0) + varint(5),
    }
    stream = b""
    for m in (event("ctr-1", 0), event("ctr-1", 1), f_str(1, "x") + f_int(2, 42),
              event("ctr-1", 2), b"\x0a\x05ab"):
        stream += struct.pack(">H", len(m)) + m
    seeds["0b-events-stream"] = b"\x0b" + stream
    for name, data in seeds.items():
        write(t, name, data)


# --- gRPC server bytes (see fuzz_grpc_frames.c for the format) --------------

DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, END_HEADERS, PADDED = 0x1, 0x4, 0x8
GRPC_MSG = 0x80  # op bit: DATA payload gets a gRPC prefix
RAW_HPACK = 0x40


def rec(op, flags, payload=b""):
    if isinstance(payload, str):
        payload = payload.encode()
    return bytes([op, flags]) + struct.pack(">H", len(payload)) + payload


def hdrs(*lines, flags=END_HEADERS, stream_sel=0):
    return rec(HEADERS | stream_sel << 4, flags, "\n".join(lines))


OK_HEADERS = hdrs(":status=200", "content-type=application/grpc")
TRAILERS_OK = hdrs("grpc-status=0", flags=END_HEADERS | END_STREAM)


def prefixed(msg, flag=0, length=None):
    return bytes([flag]) + struct.pack(">I", len(msg) if length is None else length) + msg


def grpc_seeds():
    t = "fuzz_grpc_frames"
    version = f_str(1, "0.1.0") + f_str(2, "containerd") + f_str(3, "v1.7.13") + f_str(4, "v1")
    ev = event()
    two = prefixed(ev) + prefixed(ev[:40])
    seeds = {
        "unary-ok": b"\x00" + OK_HEADERS + rec(DATA | GRPC_MSG, 0, version) + TRAILERS_OK,
        "unary-empty-message": b"\x00" + OK_HEADERS + rec(DATA | GRPC_MSG, 0) + TRAILERS_OK,
        "unary-trailers-only-not-found": b"\x00" + hdrs(
            ":status=200", "content-type=application/grpc", "grpc-status=5",
            "grpc-message=container%20%22abc%22%20not%20found%3A%20%zz%4",
            flags=END_HEADERS | END_STREAM),
        "unary-split-prefix": b"\x00" + OK_HEADERS + rec(DATA, 0, prefixed(version)[:3]) +
        rec(DATA, 0, prefixed(version)[3:12]) + rec(DATA, 0, prefixed(version)[12:]) + TRAILERS_OK,
        "unary-split-chunk1": bytes([1 << 2]) + OK_HEADERS + rec(DATA | GRPC_MSG, 0, version) +
        TRAILERS_OK,
        "unary-end-in-data": b"\x00" + OK_HEADERS + rec(DATA, END_STREAM, prefixed(version)),
        "unary-two-messages": b"\x00" + OK_HEADERS + rec(DATA, 0, prefixed(version) * 2) +
        TRAILERS_OK,
        "unary-no-message": b"\x00" + OK_HEADERS + TRAILERS_OK,
        "unary-ended-in-prefix": b"\x00" + OK_HEADERS + rec(DATA, 0, b"\x00\x00\x00") +
        TRAILERS_OK,
        "unary-compressed": b"\x00" + OK_HEADERS + rec(DATA, 0, prefixed(version, 1)) + TRAILERS_OK,
        "unary-bad-flags": b"\x00" + OK_HEADERS + rec(DATA, 0, prefixed(version, 0x80)) +
        TRAILERS_OK,
        "unary-too-large": b"\x00" + OK_HEADERS + rec(DATA, 0, prefixed(b"", 0, 0x7FFFFFFF)) +
        TRAILERS_OK,
        "unary-http-503": b"\x00" + hdrs(":status=503", "grpc-message=overloaded",
                                         flags=END_HEADERS | END_STREAM),
        "unary-bad-status": b"\x00" + hdrs(":status=2x0", flags=END_HEADERS | END_STREAM),
        "unary-html": b"\x00" + hdrs(":status=200", "content-type=text/html",
                                     flags=END_HEADERS | END_STREAM),
        "unary-content-type-plus": b"\x00" + hdrs(
            ":status=200", "content-type=application/grpc+proto") +
        rec(DATA | GRPC_MSG, 0, version) + hdrs("grpc-status=0", "grpc-message=",
                                                flags=END_HEADERS | END_STREAM),
        "unary-grpc-status-invalid": b"\x00" + OK_HEADERS + rec(DATA | GRPC_MSG, 0, version) +
        hdrs("grpc-status=1x", flags=END_HEADERS | END_STREAM),
        "unary-grpc-status-big": b"\x00" + OK_HEADERS +
        hdrs("grpc-status=999", "grpc-message=%F0%9F%92%A5", flags=END_HEADERS | END_STREAM),
        "unary-no-grpc-status": b"\x00" + OK_HEADERS + rec(DATA | GRPC_MSG, END_STREAM, version),
        "unary-rst-refused": b"\x00" + rec(RST_STREAM, 0, struct.pack(">I", 7)),
        "unary-rst-after-headers": b"\x00" + OK_HEADERS + rec(RST_STREAM, 0, struct.pack(">I", 2)),
        "unary-goaway": b"\x00" + rec(GOAWAY | 1 << 4, 0, struct.pack(">II", 0, 0) +
                                     b"graceful shutdown\x01") ,
        "unary-goaway-after-answer": b"\x00" + OK_HEADERS + rec(DATA | GRPC_MSG, 0, version) +
        rec(GOAWAY | 1 << 4, 0, struct.pack(">II", 1, 11) + b"calm") + TRAILERS_OK,
        "unary-ping-settings-window": b"\x00" + rec(PING | 1 << 4, 0, b"12345678") +
        rec(SETTINGS | 1 << 4, 0, struct.pack(">HI", 3, 100) + struct.pack(">HI", 4, 65535)) +
        rec(WINDOW_UPDATE | 1 << 4, 0, struct.pack(">I", 1000)) + OK_HEADERS +
        rec(DATA | GRPC_MSG, 0, version) + TRAILERS_OK,
        "unary-continuation": b"\x00" + hdrs(":status=200", flags=0) +
        rec(CONTINUATION, END_HEADERS, b"\x5f\x10application/grpc") + rec(DATA | GRPC_MSG, 0,
                                                                           version) + TRAILERS_OK,
        "unary-raw-hpack": b"\x00" + rec(HEADERS | RAW_HPACK, END_HEADERS, b"\x88") +
        rec(DATA | GRPC_MSG, 0, version) + TRAILERS_OK,
        "unary-padded-data": b"\x00" + OK_HEADERS + rec(DATA, PADDED, b"\x03" + prefixed(version) +
                                                        b"\x00\x00\x00") + TRAILERS_OK,
        "unary-no-preface": b"\x02" + OK_HEADERS + rec(DATA | GRPC_MSG, 0, version) + TRAILERS_OK,
        "unary-other-stream": b"\x00" + hdrs(":status=200", stream_sel=2) + OK_HEADERS +
        rec(DATA | GRPC_MSG, 0, version) + TRAILERS_OK,
        "stream-events": b"\x01" + OK_HEADERS + rec(DATA, 0, two) +
        rec(DATA | GRPC_MSG, 0, ev) + TRAILERS_OK,
        "stream-events-chunked": bytes([1 | 7 << 2]) + OK_HEADERS + rec(DATA, 0, two[:30]) +
        rec(DATA, 0, two[30:]) + hdrs("grpc-status=14", "grpc-message=shutting%20down",
                                      flags=END_HEADERS | END_STREAM),
        "stream-unimplemented": b"\x01" + hdrs(":status=200", "content-type=application/grpc",
                                               "grpc-status=12", flags=END_HEADERS | END_STREAM),
        "stream-dropped": b"\x01" + OK_HEADERS + rec(DATA | GRPC_MSG, 0, ev),
        "empty": b"",
        "mode-only": b"\x01",
    }
    for name, data in seeds.items():
        write(t, name, data)


# --- manifests ---------------------------------------------------------------

FULL_JSON = """{
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "web", "namespace": "kube-system", "uid": "abc-123",
               "labels": {"tier": "front", "app": "web"},
               "annotations": {"b": "2", "a": "1", "kubernetes.io/config.hash": "x"}},
  "spec": {"restartPolicy": "OnFailure", "hostNetwork": true,
           "terminationGracePeriodSeconds": 5,
           "initContainers": [{"name": "init", "image": "busybox@sha256:0123",
                               "command": ["sh", "-c", "exit 0"]}],
           "containers": [{"name": "nginx", "image": "nginx", "args": ["-g", "daemon off;"],
                           "imagePullPolicy": "Never"}]}
}
"""


def manifest_seeds():
    t = "fuzz_manifest"
    # Byte 0 picks the file name: 0 .yaml, 1 .yml, 2 .json, 3 none.
    for name in sorted(os.listdir(os.path.join(ROOT, "examples", "manifests"))):
        with open(os.path.join(ROOT, "examples", "manifests", name), "rb") as f:
            write(t, "example-" + name, b"\x00" + f.read())
    # the real-world static pods of the e2e test: every v1 field kind (issue 14)
    for name in sorted(os.listdir(os.path.join(ROOT, "tests", "e2e", "manifests"))):
        with open(os.path.join(ROOT, "tests", "e2e", "manifests", name), "rb") as f:
            write(t, "real-" + name, b"\x00" + f.read())
    seeds = {
        "full.json": b"\x02" + FULL_JSON.encode(),
        "flow.yml": b"\x01" + b"{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: "
                              b"{containers: [{name: c, image: 'busybox:latest'}]}}\n",
        "anchors.yaml": b"\x00" + b"""apiVersion: v1
kind: Pod
metadata: {name: &n anchored, labels: &l {a: b, c: d}, annotations: *l}
spec:
  containers:
  - &c {name: one, image: "img:1", command: [sleep, "10"]}
  - {name: two, image: *n}
""",
        "merge-key.yaml": b"\x00" + b"metadata: &m {name: x}\nspec: {<<: *m, containers: []}\n",
        "typed-scalars.yaml": b"\x00" + b"""metadata:
  name: yes
spec:
  hostNetwork: "true"
  terminationGracePeriodSeconds: 1e3
  restartPolicy: Sometimes
  containers: [{name: 0x1f, image: ~}]
""",
        "two-docs.yaml": b"\x00" + b"metadata: {name: a}\n---\nmetadata: {name: b}\n",
        "deep.json": b"\x02" + b"[" * 70 + b"]" * 70,
        "invalid-utf8.yaml": b"\x00" + b"metadata: {name: \"caf\xc3\x28\"}\n",
        "tabs-and-bom.yaml": b"\x00" + b"\xef\xbb\xbfmetadata:\n\tname: x\n",
        "not-object.json": b"\x02" + b"[1, 2, 3]",
        "empty": b"\x00",
        "unterminated.json": b"\x02" + b'{"metadata": {"name": "a\\u00',
        "tags.yaml": b"\x03" + b"!!map {? !!str metadata : {name: !!str 12}, spec: !custom {}}\n",
        "spec-warnings.yaml": b"\x00" + b"""apiVersion: v1
kind: Pod
metadata: {name: w, ownerReferences: [{kind: Node}]}
spec:
  tolerations: [{operator: Exists}]
  schedulerName: other
  activeDeadlineSeconds: 5
  dnsPolicy: None
  dnsConfig: {nameservers: [1.1.1.1], options: [{name: ndots, value: "2"}]}
  hostAliases: [{ip: "::1", hostnames: [a]}]
  securityContext: {sysctls: [{name: net.ipv4.ip_forward, value: "1"}], supplementalGroups: [1]}
  volumes: [{name: v}, {name: h, hostPath: {path: /tmp, type: Socket}}, {name: s, secret: {}}]
  containers:
  - name: c
    image: busybox
    typo: 1
    ports: [{containerPort: 80, name: http}]
    env: [{name: A, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}]
    resources: {limits: {cpu: 1.5e3m, memory: 1Ei, example.com/gpu: "2"}, requests: {example.com/gpu: 2}}
    volumeMounts: [{name: v, mountPath: /v, subPathExpr: $(POD)}]
    lifecycle: {preStop: {tcpSocket: {port: http}}}
    startupProbe: {grpc: {port: 9000}, periodSeconds: 3}
    securityContext: {capabilities: {add: [SYS_ADMIN]}, seccompProfile: {type: Unconfined}}
""",
    }
    for name, data in seeds.items():
        write(t, name, data)


# --- pleg-replay scripts -------------------------------------------------------

def replay_seeds():
    t = "fuzz_replay"
    for sub in ("", "bad"):
        d = os.path.join(ROOT, "tests", "scenarios", sub)
        for name in sorted(os.listdir(d)):
            if name.endswith(".jsonl"):
                shutil.copyfile(os.path.join(d, name),
                                os.path.join(OUT, t, ("bad-" if sub else "") + name))
    write(t, "edge-clock", '{"op":"advance","ns":1000000000000000000}\n' * 8 +
          '{"op":"relist"}\n{"op":"healthy"}\n')
    write(t, "edge-nul", '{"op":"relist"}\n{"op":"ev\x00ents"}\n')
    write(t, "edge-config-late", '{"op":"relist"}\n{"op":"config","evented":true}\n')


# --- HTTP requests ----------------------------------------------------------------

def http_seeds():
    t = "fuzz_http"
    get = lambda path, extra="": "GET %s HTTP/1.1\r\nHost: 127.0.0.1:10255\r\n%s\r\n" % (path, extra)
    seeds = {
        "healthz": get("/healthz"),
        "healthz-verbose": get("/healthz?verbose"),
        "healthz-exclude": get("/healthz?verbose&exclude=pleg"),
        "metrics": get("/metrics", "Accept: text/plain\r\n"),
        "pods": get("/pods"),
        "node": get("/node"),
        "head": "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        "post": "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
        "chunked": "PUT /pods HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "5\r\nhello\r\n0\r\n\r\n",
        "http10": "GET /healthz HTTP/1.0\r\n\r\n",
        "pipelined": get("/healthz") + get("/metrics") + get("/nope"),
        "keepalive-close": get("/pods", "Connection: keep-alive\r\n") +
        get("/node", "Connection: close\r\n"),
        "path-dotdot": get("/%2e%2e/healthz"),
        "path-nul-escape": get("/healthz%00x"),
        "path-raw-nul": "GET /healthz\x00junk HTTP/1.1\r\nHost: x\r\n\r\n",
        "path-double-slash": get("//healthz/"),
        "absolute-uri": get("http://127.0.0.1/healthz"),
        "expect-continue": "POST /healthz HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                           "Content-Length: 3\r\n\r\nabc",
        "no-host": "GET /healthz HTTP/1.1\r\n\r\n",
        "bare-lf": "GET /healthz HTTP/1.1\nHost: x\n\n",
        "folded-header": "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  continued\r\n\r\n",
        "big-header": get("/healthz", "X-Big: " + "a" * 17000 + "\r\n"),
        "many-headers": get("/healthz", "".join("X-%d: v\r\n" % i for i in range(300))),
        "partial": "GET /heal",
        "http2-preface": "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "garbage": "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
    }
    for name, data in seeds.items():
        write(t, name, data.encode("latin-1"))


if __name__ == "__main__":
    os.makedirs(os.path.join(OUT, "fuzz_replay"), exist_ok=True)
    cri_seeds()
    grpc_seeds()
    manifest_seeds()
    replay_seeds()
    http_seeds()
