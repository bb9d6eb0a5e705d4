# SPDX-License-Identifier: Apache-2.0
"""Raw CRI calls on containerd's socket without a gRPC library: curl speaks
HTTP/2 (h2c) and the protobuf is written and read by hand, field by field.
Shared by test_containerd17.py (its GetContainerEvents streams) and
test_faults_restart.py (what containerd's CRI says of one container)."""

import os
import subprocess


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pb_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint((field << 3) | 2) + varint(len(data)) + data


def pb_fields(buf):
    """[(field, wire type, value)] of one message's top level."""
    out, i = [], 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(buf, i)
        elif wt == 2:
            n, i = read_varint(buf, i)
            v, i = buf[i : i + n], i + n
        elif wt == 1:
            v, i = buf[i : i + 8], i + 8
        elif wt == 5:
            v, i = buf[i : i + 4], i + 4
        else:
            raise AssertionError(f"protobuf wire type {wt}")
        out.append((f, wt, v))
    return out


def read_varint(buf, i):
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def grpc_frame(msg):
    return b"\0" + len(msg).to_bytes(4, "big") + msg


def curl_argv(sock, method, body_path):
    """curl's argv for RuntimeService/`method` on `sock` with the gRPC frame in `body_path`."""
    return [
        "curl", "-sS", "-N", "--http2-prior-knowledge", "--unix-socket", sock,
        "-H", "content-type: application/grpc", "-H", "te: trailers",
        "--data-binary", "@" + body_path, "-o", "-", f"http://localhost/runtime.v1.RuntimeService/{method}",
    ]  # fmt: skip


def cri_unary(sock, tmp, method, msg, timeout=60):
    """One unary call: the response message's bytes; AssertionError unless grpc-status 0."""
    path = os.path.join(tmp, "req")
    with open(path, "wb") as f:
        f.write(grpc_frame(msg))
    p = subprocess.run(
        curl_argv(sock, method, path) + ["--max-time", str(timeout), "-D", "-"],
        capture_output=True,
        timeout=timeout + 10,
    )
    hdr, _, body = p.stdout.partition(b"\r\n\r\n")
    if p.returncode != 0 or b"grpc-status: 0" not in p.stdout:
        raise AssertionError(f"{method}: curl exit {p.returncode}: {p.stdout[-300:]!r} {p.stderr!r}")
    return body[5 : 5 + int.from_bytes(body[1:5], "big")] if len(body) >= 5 else b""


CONTAINER_STATES = {0: "CONTAINER_CREATED", 1: "CONTAINER_RUNNING", 2: "CONTAINER_EXITED", 3: "CONTAINER_UNKNOWN"}


def container_state(sock, tmp, cid, timeout=10):
    """ContainerStatus(cid).status.state as its CRI name ("CONTAINER_RUNNING", ...)."""
    resp = cri_unary(sock, tmp, "ContainerStatus", pb_bytes(1, cid), timeout)
    status = next((v for f, _, v in pb_fields(resp) if f == 1), b"")
    # ContainerStatus.state is field 3; proto3 leaves out the 0 (CREATED).
    state = next((v for f, wt, v in pb_fields(status) if f == 3 and wt == 0), 0)
    return CONTAINER_STATES.get(state, f"state {state}")
