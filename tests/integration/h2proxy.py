# SPDX-License-Identifier: Apache-2.0
"""An HTTP/2 (h2c, prior knowledge) proxy on a unix socket that can hold gRPC calls.

    python3 -B tests/integration/h2proxy.py --listen PATH --upstream SOCK
    python3 -B tests/integration/h2proxy.py --self-test

It sits between a gRPC client (cubelet) and a server (containerd): every
client connection gets its own connection to --upstream, and frames flow
both ways, except that a call matching a *hold rule* never reaches the
server. Its HEADERS, DATA, RST_STREAM, WINDOW_UPDATE and PRIORITY frames are
swallowed, so the client sees a call that hangs until it gives up (its
deadline: RST_STREAM). HTTP/2 allows the gap this leaves in the stream ids the
server sees. The connection-level flow-control window that the swallowed DATA
used is given back to the client with a WINDOW_UPDATE, as the server would
have done.

HPACK is stateful, so every client header block is decoded (in order, held or
not) and the forwarded ones are encoded again with the proxy's own encoder:
dropping a block then leaves both sides' tables in sync. Server-to-client
frames pass through untouched (the server never answers a stream it never saw,
so its encoder and the client's decoder stay in step); only its SETTINGS are
read, for the header table size.

A rule matches a request's :path and, optionally, a substring of its body
(the gRPC message bytes: a pod name, say). A stream whose rule needs the body
waits until its END_STREAM (or 1 MiB of body) before it is forwarded or held;
frames that arrive meanwhile wait behind it, so the server still sees header
blocks and new stream ids in order.

Control: JSON lines on stdin, one reply per line on stdout ({"reply": op,
"seq": n, ...}), and events on stdout as they happen:

    {"op": "hold", "rule": "r1", "path": "/runtime.v1.RuntimeService/CreateContainer", "body": "fhang-a"}
    {"op": "unhold", "rule": "r1"}      (or no "rule": every rule)
    {"op": "trace", "path": "/runtime.v1.RuntimeService/Status"}
                                        report every forwarded call of that path
    {"op": "vanish", "unlink": true}    close every connection, stop listening,
                                        unlink the socket (false: leave the
                                        file, so connect() gets ECONNREFUSED)
    {"op": "return"}                    listen again on the same path
    {"op": "stats"}                     counters and the held streams
    {"op": "quit"}

    {"event": "listening", "path": ...}
    {"event": "conn", "id": n, "t": monotonic}     a client connected
    {"event": "held", "conn": n, "stream": id, "rule": ..., "path": ..., "grpc_timeout": ..., "t": ...}
    {"event": "call", "conn": n, "stream": id, "path": ..., "t": ...}   a traced call forwarded
    {"event": "reply", "conn": n, "stream": id, "path": ..., "t": ...}  its answer ended (END_STREAM)
    {"event": "rst", "conn": n, "stream": id, "error": code, "after": s, "t": ...}
                                        the client reset a held stream, `after`
                                        seconds after its HEADERS arrived
    {"event": "error", "conn": n, "what": ...}     protocol error: connection closed

Timestamps are time.monotonic() (CLOCK_MONOTONIC, comparable across
processes on the same machine). A held stream is forgotten when its rule is
removed; it is never forwarded later (its id is below ids already opened).
"""

import argparse
import asyncio
import json
import os
import struct
import sys
import time

try:
    import hpack
except ImportError:  # pragma: no cover - the test's setup installs it
    sys.stderr.write("h2proxy.py: the Python module hpack is missing (Debian: apt-get install python3-hpack)\n")
    raise SystemExit(2)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20
SETTINGS_HEADER_TABLE_SIZE = 0x1
# Frames the proxy writes: never above the HTTP/2 minimum max frame size.
MAX_OUT_FRAME = 16384
# A rule that needs the body decides at END_STREAM or after this much.
MAX_BODY_WAIT = 1 << 20
# The proxy's encoder never uses a larger dynamic table than this.
OWN_TABLE_SIZE = 4096


class ProtocolError(Exception):
    pass


def frame(ftype, flags, sid, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, ftype, flags, sid & 0x7FFFFFFF) + payload


def parse_header(h):
    """(length, type, flags, stream id) of a 9-byte frame header."""
    hi, lo, ftype, flags, sid = struct.unpack(">BHBBI", h)
    return (hi << 16) | lo, ftype, flags, sid & 0x7FFFFFFF


def strip_padding(flags, payload, what):
    if not flags & PADDED:
        return payload
    if not payload:
        raise ProtocolError(f"{what}: PADDED with an empty payload")
    pad = payload[0]
    if pad > len(payload) - 1:
        raise ProtocolError(f"{what}: padding {pad} longer than the payload ({len(payload) - 1})")
    return payload[1 : len(payload) - pad]


class Rule:
    def __init__(self, name, path, body=None):
        self.name = name
        self.path = path.encode() if isinstance(path, str) else path
        self.body = body.encode() if isinstance(body, str) else body


class Pending:
    """A new stream whose fate waits for its body."""

    def __init__(self, sid, flags, headers, rule, t):
        self.sid = sid
        self.flags = flags  # END_STREAM of its HEADERS
        self.headers = headers
        self.rule = rule
        self.t = t
        self.frames = []  # its raw frames after HEADERS, in order
        self.body = b""
        self.data_len = 0  # flow-controlled bytes (padding included)


class ClientToServer:
    """The client-to-server half of one connection, as a pure function of
    the frames fed in: feed() returns (bytes for the server, bytes for the
    client). Events go to `emit(dict)`."""

    def __init__(self, rules, emit, conn_id=0, clock=time.monotonic, traces=()):
        self.rules = rules  # dict name -> Rule, shared and live
        self.traces = traces  # paths (bytes) whose forwarded calls are reported
        self.emit = emit
        self.conn_id = conn_id
        self.clock = clock
        self.dec = hpack.Decoder()
        self.enc = hpack.Encoder()
        self.held = {}  # stream id -> {"rule", "path", "t"}
        self.cont = None  # (stream id, flags, [fragments]) while a block is continued
        self.pending = None
        self.queue = []  # raw frames that arrived behind self.pending
        self.forwarded = {}  # path -> calls forwarded
        self.traced = {}  # stream id -> path, of traced calls not answered yet
        self.n_held = 0
        self.out_server = []
        self.out_client = []

    # -- settings the server sent (its decoder's table size) ----------------

    def server_table_size(self, size):
        # The client encodes for the server's decoder: we decode what it
        # sends. Its shrink comes with its next block after it has seen these
        # SETTINGS, so a block in flight may still use the old size.
        self.dec.max_allowed_table_size = max(size, self.dec.header_table_size)
        # Our own encoder must fit in the server's decoder table.
        want = min(size, OWN_TABLE_SIZE)
        if want != self.enc.header_table_size:
            self.enc.header_table_size = want

    def forget_held(self):
        """Held streams of removed rules: their ids stay swallowed, their
        records go (a later RST is swallowed silently)."""
        for sid, h in self.held.items():
            if h["rule"] not in self.rules:
                h["forgotten"] = True

    # -- the frame path ------------------------------------------------------

    def feed(self, ftype, flags, sid, payload):
        self.out_server, self.out_client = [], []
        self._feed(ftype, flags, sid, payload)
        return b"".join(self.out_server), b"".join(self.out_client)

    def _feed(self, ftype, flags, sid, payload):
        p = self.pending
        if p is not None and not (sid == p.sid and ftype in (DATA, RST_STREAM, PRIORITY, WINDOW_UPDATE)):
            self.queue.append((ftype, flags, sid, payload))
            return
        if self.cont is not None:
            csid, cflags, frags = self.cont
            if ftype != CONTINUATION or sid != csid:
                raise ProtocolError(f"stream {csid}: header block interrupted by a frame of type {ftype} on stream {sid}")
            frags.append(payload)
            if flags & END_HEADERS:
                self.cont = None
                self._headers(csid, cflags, b"".join(frags))
            return
        if ftype == HEADERS:
            if sid == 0:
                raise ProtocolError("HEADERS on stream 0")
            block = strip_padding(flags, payload, f"HEADERS on stream {sid}")
            if flags & PRIORITY_FLAG:
                if len(block) < 5:
                    raise ProtocolError(f"HEADERS on stream {sid}: PRIORITY flag without its 5 bytes")
                block = block[5:]
            if flags & END_HEADERS:
                self._headers(sid, flags, block)
            else:
                self.cont = (sid, flags, [block])
            return
        if ftype == CONTINUATION:
            raise ProtocolError(f"CONTINUATION on stream {sid} without a HEADERS before it")
        if ftype == PUSH_PROMISE:
            raise ProtocolError("PUSH_PROMISE from a client")
        if sid in self.held:
            self._swallow(ftype, flags, sid, payload)
            return
        if p is not None and sid == p.sid:
            self._pending_frame(ftype, flags, sid, payload)
            return
        self.out_server.append(frame(ftype, flags, sid, payload))

    def _headers(self, sid, flags, block):
        try:
            headers = self.dec.decode(block, raw=True)
        except hpack.HPACKError as e:
            raise ProtocolError(f"stream {sid}: HPACK: {e}") from e
        if sid in self.held:  # trailers of a held stream: decoded, dropped
            return
        path = next((v for k, v in headers if k == b":path"), b"")
        rule = next((r for r in self.rules.values() if r.path == path), None)
        if rule is None:
            self._send_headers(sid, flags, headers)
            return
        p = Pending(sid, flags & END_STREAM, headers, rule, self.clock())
        if rule.body is None or flags & END_STREAM:
            self._decide(p)
        else:
            self.pending = p

    def _send_headers(self, sid, flags, headers):
        raw_path = next((v for k, v in headers if k == b":path"), b"")
        path = raw_path.decode(errors="replace")
        self.forwarded[path] = self.forwarded.get(path, 0) + 1
        if raw_path in self.traces:
            self.traced[sid] = path
            self.emit({"event": "call", "conn": self.conn_id, "stream": sid, "path": path, "t": self.clock()})
        block = self.enc.encode(headers)
        first, rest = block[:MAX_OUT_FRAME], block[MAX_OUT_FRAME:]
        es = flags & END_STREAM
        self.out_server.append(frame(HEADERS, es | (0 if rest else END_HEADERS), sid, first))
        while rest:
            chunk, rest = rest[:MAX_OUT_FRAME], rest[MAX_OUT_FRAME:]
            self.out_server.append(frame(CONTINUATION, 0 if rest else END_HEADERS, sid, chunk))

    def _pending_frame(self, ftype, flags, sid, payload):
        p = self.pending
        p.frames.append((ftype, flags, sid, payload))
        if ftype == DATA:
            p.data_len += len(payload)
            p.body += strip_padding(flags, payload, f"DATA on stream {sid}")
            if flags & END_STREAM or len(p.body) >= MAX_BODY_WAIT or p.rule.body in p.body:
                self._decide(p)
        elif ftype == RST_STREAM:
            # Given up before its body was complete: nothing of it left, so
            # the server never hears of it; swallowing it all is the same.
            self._decide(p, force_hold=True)

    def _decide(self, p, force_hold=False):
        rule = p.rule
        hold = force_hold or rule.body is None or rule.body in p.body
        # A rule removed meanwhile no longer holds (unless the client reset it).
        if rule.name not in self.rules and not force_hold:
            hold = False
        self.pending = None
        if hold:
            timeout = next((v for k, v in p.headers if k == b"grpc-timeout"), b"").decode(errors="replace")
            path = rule.path.decode(errors="replace")
            self.held[p.sid] = {"rule": rule.name, "path": path, "t": p.t}
            self.n_held += 1
            self.emit(
                {
                    "event": "held",
                    "conn": self.conn_id,
                    "stream": p.sid,
                    "rule": rule.name,
                    "path": path,
                    "grpc_timeout": timeout,
                    "t": p.t,
                }
            )
            for f in p.frames:
                self._swallow(*f)
        else:
            self._send_headers(p.sid, p.flags, p.headers)
            for f in p.frames:
                self.out_server.append(frame(*f))
        queued, self.queue = self.queue, []
        for f in queued:
            self._feed(*f)

    def _swallow(self, ftype, flags, sid, payload):
        h = self.held[sid]
        if ftype == DATA and payload:
            # Give the connection window back, as the server would have.
            self.out_client.append(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", len(payload))))
        elif ftype == RST_STREAM and "rst" not in h:
            now = self.clock()
            h["rst"] = now
            code = struct.unpack(">I", payload[:4])[0] if len(payload) >= 4 else None
            if not h.get("forgotten"):
                self.emit(
                    {
                        "event": "rst",
                        "conn": self.conn_id,
                        "stream": sid,
                        "rule": h["rule"],
                        "path": h["path"],
                        "error": code,
                        "after": round(now - h["t"], 4),
                        "t": now,
                    }
                )


class ServerToClient:
    """Splits the server's bytes into frames (so that the proxy's own
    WINDOW_UPDATEs go in between whole frames) and reads its SETTINGS."""

    def __init__(self, c2s):
        self.c2s = c2s

    def frame_seen(self, ftype, flags, sid, payload):
        if ftype in (HEADERS, DATA) and flags & END_STREAM and sid in self.c2s.traced:
            path = self.c2s.traced.pop(sid)
            self.c2s.emit(
                {"event": "reply", "conn": self.c2s.conn_id, "stream": sid, "path": path, "t": self.c2s.clock()}
            )
        elif ftype == RST_STREAM:
            self.c2s.traced.pop(sid, None)
        if ftype == SETTINGS and not flags & ACK:
            if len(payload) % 6:
                raise ProtocolError(f"server SETTINGS of {len(payload)} bytes")
            for i in range(0, len(payload), 6):
                ident, value = struct.unpack(">HI", payload[i : i + 6])
                if ident == SETTINGS_HEADER_TABLE_SIZE:
                    self.c2s.server_table_size(value)


# ---------------------------------------------------------------------------
# The asyncio proxy


class Proxy:
    def __init__(self, listen, upstream):
        self.listen = listen
        self.upstream = upstream
        self.rules = {}
        self.traces = set()
        self.server = None
        self.conns = {}  # id -> Conn
        self.next_conn = 1
        self.n_conns = 0
        self.closed_conns = []  # (id, forwarded, held) of connections gone

    def emit(self, obj):
        sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
        sys.stdout.flush()

    async def start(self):
        self.server = await asyncio.start_unix_server(self.accept, path=self.listen)
        self.emit({"event": "listening", "path": self.listen, "t": time.monotonic()})

    def vanish(self, unlink=True):
        if self.server is not None:
            self.server.close()
            self.server = None
        if unlink:
            try:
                os.unlink(self.listen)
            except FileNotFoundError:
                pass
        n = len(self.conns)
        for c in list(self.conns.values()):
            c.close()
        return n

    async def accept(self, reader, writer):
        cid = self.next_conn
        self.next_conn += 1
        self.n_conns += 1
        self.emit({"event": "conn", "id": cid, "t": time.monotonic()})
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self.upstream)
        except OSError as e:
            self.emit({"event": "error", "conn": cid, "what": f"upstream {self.upstream}: {e}"})
            writer.close()
            return
        conn = Conn(self, cid, reader, writer, up_reader, up_writer)
        self.conns[cid] = conn
        try:
            await conn.run()
        finally:
            self.conns.pop(cid, None)
            self.closed_conns.append(
                {"id": cid, "forwarded": conn.c2s.forwarded, "held": conn.c2s.n_held}
            )

    def stats(self):
        held, forwarded = [], {}
        conns = [
            {"id": c.cid, "forwarded": c.c2s.forwarded, "held": c.c2s.n_held} for c in self.conns.values()
        ] + self.closed_conns
        for c in conns:
            for k, v in c["forwarded"].items():
                forwarded[k] = forwarded.get(k, 0) + v
        for c in self.conns.values():
            for sid, h in c.c2s.held.items():
                held.append({"conn": c.cid, "stream": sid, **h})
        return {
            "listening": self.server is not None,
            "connections_open": len(self.conns),
            "connections_total": self.n_conns,
            "forwarded": forwarded,
            "held_total": sum(c["held"] for c in conns),
            "held_open": held,
            "rules": sorted(self.rules),
        }

    async def control(self):
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while True:
            line = await reader.readline()
            if not line:
                return
            line = line.strip()
            if not line:
                continue
            try:
                cmd = json.loads(line)
                if not isinstance(cmd, dict):
                    raise ValueError("not an object")
                reply = await self.command(cmd)
            except (ValueError, KeyError, TypeError) as e:
                reply = {"error": f"{type(e).__name__}: {e}", "line": line.decode(errors="replace")}
                cmd = {}
            reply.setdefault("reply", cmd.get("op"))
            if "seq" in cmd:
                reply["seq"] = cmd["seq"]
            self.emit(reply)
            if cmd.get("op") == "quit":
                return

    async def command(self, cmd):
        op = cmd["op"]
        if op == "hold":
            name = cmd.get("rule") or cmd["path"]
            self.rules[name] = Rule(name, cmd["path"], cmd.get("body"))
            return {"ok": True, "rule": name}
        if op == "unhold":
            name = cmd.get("rule")
            if name is None:
                self.rules.clear()
            elif self.rules.pop(name, None) is None:
                return {"error": f"no rule {name!r}"}
            for c in self.conns.values():
                c.c2s.forget_held()
            return {"ok": True}
        if op == "trace":
            self.traces.add(cmd["path"].encode())
            return {"ok": True}
        if op == "vanish":
            n = self.vanish(bool(cmd.get("unlink", True)))
            return {"ok": True, "closed": n, "t": time.monotonic()}
        if op == "return":
            if self.server is not None:
                return {"error": "already listening"}
            await self.start()
            return {"ok": True, "t": time.monotonic()}
        if op == "stats":
            return {"ok": True, **self.stats()}
        if op == "quit":
            return {"ok": True}
        return {"error": f"unknown op {op!r}"}


class Conn:
    def __init__(self, proxy, cid, reader, writer, up_reader, up_writer):
        self.proxy = proxy
        self.cid = cid
        self.reader, self.writer = reader, writer
        self.up_reader, self.up_writer = up_reader, up_writer
        self.c2s = ClientToServer(proxy.rules, proxy.emit, cid, traces=proxy.traces)
        self.s2c = ServerToClient(self.c2s)
        self.tasks = []

    async def run(self):
        self.tasks = [asyncio.ensure_future(self.pump_client()), asyncio.ensure_future(self.pump_server())]
        await asyncio.wait(self.tasks, return_when=asyncio.FIRST_COMPLETED)
        self.close()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def close(self):
        for t in self.tasks:
            t.cancel()
        for w in (self.writer, self.up_writer):
            try:
                w.close()
            except Exception:  # noqa: BLE001 - already closed
                pass

    async def read_frame(self, reader):
        h = await reader.readexactly(9)
        n, ftype, flags, sid = parse_header(h)
        payload = await reader.readexactly(n) if n else b""
        return ftype, flags, sid, payload

    async def pump_client(self):
        try:
            pre = await self.reader.readexactly(len(PREFACE))
            if pre != PREFACE:
                raise ProtocolError(f"bad client preface {pre!r}")
            self.up_writer.write(pre)
            while True:
                f = await self.read_frame(self.reader)
                to_server, to_client = self.c2s.feed(*f)
                if to_server:
                    self.up_writer.write(to_server)
                if to_client:
                    self.writer.write(to_client)
                await self.up_writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except ProtocolError as e:
            self.proxy.emit({"event": "error", "conn": self.cid, "what": f"client: {e}"})

    async def pump_server(self):
        try:
            while True:
                f = await self.read_frame(self.up_reader)
                self.s2c.frame_seen(*f)
                self.writer.write(frame(*f))
                await self.writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except ProtocolError as e:
            self.proxy.emit({"event": "error", "conn": self.cid, "what": f"server: {e}"})


async def serve(listen, upstream):
    p = Proxy(listen, upstream)
    await p.start()
    try:
        await p.control()  # until stdin closes or "quit"
    finally:
        p.vanish(True)


# ---------------------------------------------------------------------------
# Self-test of the frame path (no sockets)


def self_test():
    events = []
    rules = {}
    c2s = ClientToServer(rules, events.append, 1, clock=lambda: 100.0)
    client_enc = hpack.Encoder()
    server_dec = hpack.Decoder()

    def req(path, extra=()):
        return [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "x"),
                ("content-type", "application/grpc"), ("grpc-timeout", "4000m"), *extra]

    def grpc_msg(body):
        return b"\0" + struct.pack(">I", len(body)) + body

    def frames_of(buf):
        out = []
        while buf:
            n, ftype, flags, sid = parse_header(buf[:9])
            out.append((ftype, flags, sid, buf[9 : 9 + n]))
            buf = buf[9 + n :]
        return out

    def server_sees(buf):
        """Decodes the server's view: [(type, sid, headers or payload, flags)]."""
        out, cont = [], None
        for ftype, flags, sid, payload in frames_of(buf):
            if ftype in (HEADERS, CONTINUATION):
                cont = (cont or b"") + payload
                if flags & END_HEADERS:
                    out.append(("H", sid, dict(server_dec.decode(cont)), flags & END_STREAM))
                    cont = None
            else:
                out.append((ftype, sid, payload, flags))
        return out

    def send(ftype, flags, sid, payload):
        return c2s.feed(ftype, flags, sid, payload)

    def call(sid, path, body, split=False, padded=False, extra=()):
        block = client_enc.encode(req(path, extra))
        srv, cli = b"", b""
        if split:
            a, b = block[: len(block) // 2], block[len(block) // 2 :]
            for f in (send(HEADERS, 0, sid, a), send(CONTINUATION, END_HEADERS, sid, b)):
                srv, cli = srv + f[0], cli + f[1]
        else:
            flags, pl = END_HEADERS, block
            if padded:
                flags |= PADDED | PRIORITY_FLAG
                pl = bytes([3]) + b"\0\0\0\1\x10" + block + b"\0\0\0"
            s, c = send(HEADERS, flags, sid, pl)
            srv, cli = srv + s, cli + c
        s, c = send(DATA, END_STREAM, sid, grpc_msg(body))
        return srv + s, cli + c

    # 1. Plain calls pass through, with CONTINUATION and padding.
    s, c = call(1, "/runtime.v1.RuntimeService/Version", b"v1")
    v = server_sees(s)
    assert v[0][0] == "H" and v[0][2][":path"] == "/runtime.v1.RuntimeService/Version", v
    assert v[1] == (DATA, 1, grpc_msg(b"v1"), END_STREAM), v
    assert c == b""
    s, c = call(3, "/runtime.v1.RuntimeService/Status", b"", split=True, padded=False)
    assert server_sees(s)[0][2][":path"] == "/runtime.v1.RuntimeService/Status"
    s, c = call(5, "/runtime.v1.RuntimeService/Status", b"", padded=True)
    v = server_sees(s)
    assert v[0][2]["grpc-timeout"] == "4000m" and v[0][1] == 5, v

    # 2. A path rule holds the call: nothing reaches the server, the window
    #    comes back to the client, and its RST is reported, not forwarded.
    rules["c"] = Rule("c", "/runtime.v1.RuntimeService/CreateContainer")
    s, c = call(7, "/runtime.v1.RuntimeService/CreateContainer", b"pod-a", extra=[("x-new", "1")])
    assert s == b"", s
    wu = frames_of(c)
    assert wu == [(WINDOW_UPDATE, 0, 0, struct.pack(">I", len(grpc_msg(b"pod-a"))))], wu
    assert events[-1]["event"] == "held" and events[-1]["stream"] == 7 and events[-1]["grpc_timeout"] == "4000m"
    # The next call reuses the held block's new table entry ("x-new"): the
    # proxy re-encodes, so the server decodes it right despite the gap.
    s, c = call(9, "/runtime.v1.RuntimeService/ListContainers", b"", extra=[("x-new", "1")])
    v = server_sees(s)
    assert v[0][1] == 9 and v[0][2]["x-new"] == "1", v
    s, c = send(RST_STREAM, 0, 7, struct.pack(">I", 8))
    assert s == b"" and events[-1]["event"] == "rst" and events[-1]["error"] == 8, events[-1]
    s, c = send(WINDOW_UPDATE, 0, 7, struct.pack(">I", 10))
    assert s == b""

    # 3. A body rule: another pod's call passes, the named pod's is held;
    #    frames behind an undecided stream keep their order.
    rules.clear()
    rules["b"] = Rule("b", "/runtime.v1.RuntimeService/CreateContainer", "pod-b")
    s, _ = call(11, "/runtime.v1.RuntimeService/CreateContainer", b"pod-a")
    v = server_sees(s)
    assert [x[1] for x in v] == [11, 11] and v[0][2][":path"].endswith("CreateContainer"), v
    block = client_enc.encode(req("/runtime.v1.RuntimeService/CreateContainer"))
    s1, _ = send(HEADERS, END_HEADERS, 13, block)
    s2, _ = send(PING, 0, 0, b"12345678")  # queued behind stream 13
    s3, _ = send(HEADERS, END_HEADERS, 15, client_enc.encode(req("/runtime.v1.RuntimeService/Status")))
    assert s1 == s2 == s3 == b"", (s1, s2, s3)
    s4, c4 = send(DATA, END_STREAM, 13, grpc_msg(b"xx pod-b xx"))
    v = server_sees(s4)
    assert v[0][0] == PING and v[1][0] == "H" and v[1][1] == 15, v
    assert events[-1]["stream"] == 13 and frames_of(c4)[0][0] == WINDOW_UPDATE
    s, _ = send(DATA, END_STREAM, 15, grpc_msg(b""))
    assert server_sees(s)[0][1] == 15
    # Not the named pod: forwarded whole, in order.
    block = client_enc.encode(req("/runtime.v1.RuntimeService/CreateContainer"))
    assert send(HEADERS, END_HEADERS, 17, block)[0] == b""
    s, _ = send(DATA, END_STREAM, 17, grpc_msg(b"pod-c"))
    v = server_sees(s)
    assert [(x[0], x[1]) for x in v] == [("H", 17), (DATA, 17)], v

    # 4. The server's SETTINGS shrink the tables; the proxy's encoder says so.
    ServerToClient(c2s).frame_seen(SETTINGS, 0, 0, struct.pack(">HI", SETTINGS_HEADER_TABLE_SIZE, 256))
    server_dec.max_allowed_table_size = 256
    client_enc.header_table_size = 256  # the client follows too
    s, _ = call(19, "/runtime.v1.RuntimeService/Version", b"")
    assert server_sees(s)[0][2][":path"].endswith("Version")
    assert server_dec.header_table_size == 256

    # 5. A traced call is reported when forwarded and when its answer ends.
    c2s.traces = {b"/runtime.v1.RuntimeService/Status"}
    call(21, "/runtime.v1.RuntimeService/Status", b"")
    assert events[-1]["event"] == "call" and events[-1]["stream"] == 21, events[-1]
    s2c = ServerToClient(c2s)
    s2c.frame_seen(HEADERS, END_HEADERS, 21, b"\x88")
    assert events[-1]["event"] == "call"
    s2c.frame_seen(HEADERS, END_HEADERS | END_STREAM, 21, b"\x88")
    assert events[-1]["event"] == "reply" and events[-1]["stream"] == 21, events[-1]

    # 6. Protocol errors are named.
    for bad, want in (
        ((CONTINUATION, END_HEADERS, 21, b""), "without a HEADERS"),
        ((HEADERS, END_HEADERS | PADDED, 21, b"\x09abc"), "padding 9 longer"),
        ((HEADERS, END_HEADERS, 0, b""), "HEADERS on stream 0"),
    ):
        try:
            ClientToServer({}, events.append).feed(*bad)
        except ProtocolError as e:
            assert want in str(e), (want, e)
        else:
            raise AssertionError(f"no error for {bad}")
    t = ClientToServer({}, events.append)
    t.feed(HEADERS, 0, 1, b"\x82")
    try:
        t.feed(PING, 0, 0, b"12345678")
    except ProtocolError as e:
        assert "interrupted" in str(e)
    else:
        raise AssertionError("an interrupted header block passed")
    print("h2proxy self-test: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", help="unix socket path to listen on")
    ap.add_argument("--upstream", help="unix socket path of the server")
    ap.add_argument("--self-test", action="store_true", help="test the frame path and exit")
    a = ap.parse_args()
    if a.self_test:
        self_test()
        return
    if not a.listen or not a.upstream:
        ap.error("--listen and --upstream are required")
    asyncio.run(serve(a.listen, a.upstream))


if __name__ == "__main__":
    main()
