"""Small HTTP/2-over-TLS server shared by the fake providers (tests only).

Real HTTP/2 (the `h2` library, ALPN "h2" only) on 127.0.0.1, one asyncio task per stream, so that a
handler may hang forever (returns None) while the other streams of the same connection still answer.

Streams are answered concurrently, as a provider's front end does: every request that arrived in one
read is handled in the same event-loop turn, and all the frames produced in that turn (answers,
WINDOW_UPDATEs, SETTINGS) leave in one write at its end. (Writing each answer on its own, as this
server did before, hands a multiplexing client one wake-up per answer; libcurl's cost per wake-up
grows with the streams in flight, so the client's CPU per request measured against such a server is
mostly the server's pacing, not the client's work: docs/bench.md.) The initial SETTINGS are APNs':
HEADER_TABLE_SIZE 4096, INITIAL_WINDOW_SIZE 65535, MAX_FRAME_SIZE 16384, MAX_HEADER_LIST_SIZE 8000,
and MAX_CONCURRENT_STREAMS --initial-streams.

A handler is `async def handle(req: Request) -> Response | None`. It may also return the string
"reset" to reset the stream (RST_STREAM INTERNAL_ERROR), "goaway" to send GOAWAY (last stream = this
one, debug data {"reason":"Shutdown"}) and close the connection, "drop" to close the TCP connection,
"rst" to abort it with a TCP RST (SO_LINGER 0), or "freeze" to stop reading and writing on the
connection for good (a server that stops answering; the socket stays open). A handler may call
`req.protocol.drain(req.stream_id)`: a graceful GOAWAY (NO_ERROR, last stream = that one) written at
once; streams at or below it are still answered, the connection closes when the last of them is, and
nothing above it is processed.

Every accepted TCP+TLS connection is written to the JSONL log as {"kind": "connection", "conn": n},
so tests can count connections (multiplexing check); every stream refused for exceeding the
advertised SETTINGS_MAX_CONCURRENT_STREAMS as {"kind": "refused", "conn": n}; every PING received
as {"kind": "ping", "conn": n} (h2 acknowledges it); the client's first SETTINGS as
{"kind": "client_settings", "conn": n, "initial_window_size": v} (which client it was). The bound port is written to --port-file
(atomically) and to stdout as "PORT <n>".
"""
import argparse
import asyncio
import json
import os
import socket
import ssl
import struct
import sys

import fast_hpack
import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import hyperframe.frame


class Request:
    """One received stream: method, path, lower-case headers (list of pairs and a dict), body bytes."""

    def __init__(self, conn_id, stream_id, header_pairs, body, protocol=None):
        self.protocol = protocol
        self.conn_id = conn_id
        self.stream_id = stream_id
        self.header_pairs = header_pairs
        self.headers = {}
        for name, value in header_pairs:
            self.headers.setdefault(name, value)
        self.method = self.headers.get(":method", "")
        self.path = self.headers.get(":path", "")
        self.body = body

    def count(self, name):
        """How many times header `name` was sent (duplicate detection)."""
        return sum(1 for n, _ in self.header_pairs if n == name)


class Response:
    """An answer: status, extra headers (list of pairs), body bytes."""

    def __init__(self, status, body=b"", headers=None):
        self.status = status
        self.body = body if isinstance(body, bytes) else body.encode()
        self.headers = headers or []

    @staticmethod
    def json(status, obj, headers=None):
        hdrs = [("content-type", "application/json")] + (headers or [])
        return Response(status, json.dumps(obj, separators=(",", ":")).encode(), hdrs)


class JsonlLog:
    """Append-only JSON-lines log (one object per line, flushed at once)."""

    def __init__(self, path):
        self.path = path
        self.file = open(path, "a", encoding="utf-8") if path else None

    def write(self, obj):
        if self.file is None:
            return
        self.file.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self.file.flush()


class H2Protocol(asyncio.Protocol):
    def __init__(self, server):
        self.server = server
        self.transport = None
        self.conn = None
        self.streams = {}
        self.active = 0
        self.tasks = {}
        self.limit = server.initial_streams
        self.window_open = asyncio.Event()
        self.flush_pending = False
        self.frozen = False
        self.settings_logged = False
        self.goaway_last = None  # set by drain(): nothing above it is processed

    def connection_made(self, transport):
        self.transport = transport
        self.server.connections += 1
        self.conn_id = self.server.connections
        self.server.log.write({"kind": "connection", "conn": self.conn_id})
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config=config)
        # h2 itself tolerates many streams; the advertised limit is enforced here with REFUSED_STREAM
        # (RFC 9113 §5.1.2), since a client may open streams before it has seen our SETTINGS.
        self.conn.local_settings = h2.settings.Settings(
            client=False, initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 10000})
        self.conn.initiate_connection()
        codes = h2.settings.SettingCodes
        self.conn.update_settings({codes.HEADER_TABLE_SIZE: 4096, codes.MAX_CONCURRENT_STREAMS: self.limit,
                                   codes.INITIAL_WINDOW_SIZE: 65535, codes.MAX_FRAME_SIZE: 16384,
                                   codes.MAX_HEADER_LIST_SIZE: 8000})
        self.flush()

    def raise_stream_limit(self):
        """Advertises --max-streams (APNs does this once a request with a valid token was accepted)."""
        if self.limit != self.server.max_streams:
            self.limit = self.server.max_streams
            self.conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: self.limit})
            self.schedule_flush()

    def drain(self, last_stream_id):
        """Graceful GOAWAY (NO_ERROR, `last_stream_id`), written after what is pending; see the module doc."""
        self.flush()
        self.goaway_last = last_stream_id
        frame = hyperframe.frame.GoAwayFrame(stream_id=0, last_stream_id=last_stream_id, error_code=0,
                                             additional_data=b'{"reason":"Shutdown"}')
        self.transport.write(frame.serialize())

    def close_if_drained(self):
        if self.goaway_last is None or self.transport.is_closing():
            return
        if any(sid <= self.goaway_last for sid in list(self.tasks) + list(self.streams)):
            return
        self.flush()
        self.transport.close()

    def flush(self):
        self.flush_pending = False
        if self.frozen:
            return
        data = self.conn.data_to_send()
        if data and not self.transport.is_closing():
            self.transport.write(data)

    def schedule_flush(self):
        """Writes what is pending at the end of this event-loop turn, once, whatever number of
        streams answered in it (the stream tasks started by one read all run before it)."""
        if not self.flush_pending:
            self.flush_pending = True
            asyncio.get_running_loop().call_soon(self.flush)

    def data_received(self, data):
        if self.frozen:
            return
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.flush()
            self.transport.close()
            return
        for ev in events:
            if isinstance(ev, h2.events.RequestReceived):
                if self.active >= self.limit:
                    self.conn.reset_stream(ev.stream_id, error_code=h2.errors.ErrorCodes.REFUSED_STREAM)
                    self.server.log.write({"kind": "refused", "conn": self.conn_id})
                    continue
                self.active += 1
                self.streams[ev.stream_id] = (list(ev.headers), bytearray())
            elif isinstance(ev, h2.events.DataReceived):
                if ev.stream_id in self.streams:
                    self.streams[ev.stream_id][1].extend(ev.data)
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                if ev.stream_id in self.streams:
                    headers, body = self.streams.pop(ev.stream_id)
                    req = Request(self.conn_id, ev.stream_id, headers, bytes(body), self)
                    self.tasks[ev.stream_id] = asyncio.ensure_future(self.dispatch(req))
            elif isinstance(ev, h2.events.StreamReset):
                if self.streams.pop(ev.stream_id, None) is not None:
                    self.active -= 1
                elif ev.stream_id in self.tasks:
                    self.tasks[ev.stream_id].cancel()  # e.g. a client timeout on a hanging stream
            elif isinstance(ev, h2.events.WindowUpdated):
                self.window_open.set()
            elif isinstance(ev, h2.events.PingReceived):
                self.server.log.write({"kind": "ping", "conn": self.conn_id})
            elif isinstance(ev, h2.events.RemoteSettingsChanged) and not self.settings_logged:
                self.settings_logged = True
                window = ev.changed_settings.get(h2.settings.SettingCodes.INITIAL_WINDOW_SIZE)
                self.server.log.write({"kind": "client_settings", "conn": self.conn_id,
                                       "initial_window_size": window.new_value if window else None})
            elif isinstance(ev, h2.events.ConnectionTerminated):
                self.transport.close()
        self.schedule_flush()

    def connection_lost(self, exc):
        self.window_open.set()
        for task in list(self.tasks.values()):
            task.cancel()

    async def dispatch(self, req):
        try:
            await self.answer(req)
        finally:
            self.active -= 1
            self.tasks.pop(req.stream_id, None)
            self.close_if_drained()

    async def answer(self, req):
        if self.transport.is_closing() or self.frozen:
            return  # after a GOAWAY: streams above its last-stream-id are not processed (RFC 9113 §6.8)
        if self.goaway_last is not None and req.stream_id > self.goaway_last:
            return
        try:
            resp = await self.server.handler(req)
        except Exception as e:  # a fake bug must show up as a 500, not a silent hang
            resp = Response(500, ("fake error: %r" % (e,)).encode())
        if resp is None or self.transport.is_closing() or self.frozen:
            return
        try:
            if resp == "reset":
                self.conn.reset_stream(req.stream_id, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR)
                self.schedule_flush()
                return
            if resp == "goaway":  # as APNs does when shutting down: GOAWAY with the reason as debug data
                self.conn.close_connection(error_code=h2.errors.ErrorCodes.NO_ERROR,
                                           additional_data=b'{"reason":"Shutdown"}', last_stream_id=req.stream_id)
                self.flush()
                self.transport.close()
                return
            if resp == "drop":  # TCP connection closed with no HTTP/2 goodbye
                self.transport.close()
                return
            if resp == "rst":  # TCP connection aborted: the client reads ECONNRESET
                sock = self.transport.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.transport.abort()
                return
            if resp == "freeze":  # stops reading and writing; the connection stays open
                self.frozen = True
                self.transport.pause_reading()
                return
            headers = [(":status", str(resp.status)), ("content-length", str(len(resp.body)))] + resp.headers
            self.conn.send_headers(req.stream_id, headers, end_stream=not resp.body)
            if resp.body:
                await self.send_body(req.stream_id, resp.body)
            self.schedule_flush()
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
            return

    async def send_body(self, stream_id, body):
        while body:
            if self.transport.is_closing():
                return
            window = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
            if window <= 0:
                self.window_open.clear()
                await self.window_open.wait()
                continue
            chunk, body = body[:window], body[window:]
            self.conn.send_data(stream_id, chunk, end_stream=not body)
            self.schedule_flush()


class H2Server:
    """Runs `handler` behind HTTP/2 + TLS on 127.0.0.1."""

    def __init__(self, handler, log, max_streams=100, initial_streams=None):
        self.handler = handler
        self.log = log
        self.max_streams = max_streams
        self.initial_streams = initial_streams or max_streams
        self.connections = 0


def common_arguments(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--cert", required=True, help="server certificate chain PEM (see mkcerts.py)")
    p.add_argument("--key", required=True, help="server private key PEM")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = any free port)")
    p.add_argument("--port-file", help="file that receives the bound port number")
    p.add_argument("--log", help="append-only JSONL log of connections and accepted requests")
    p.add_argument("--max-streams", type=int, default=100, help="SETTINGS_MAX_CONCURRENT_STREAMS")
    p.add_argument("--initial-streams", type=int, help="streams allowed on a new connection until the "
                   "handler calls raise_stream_limit() (APNs: 1 until a valid token); default --max-streams")
    return p


def serve(args, handler, log):
    """Binds, publishes the port, and serves until killed."""
    fast_hpack.install()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(args.cert, args.key)
    ctx.set_alpn_protocols(["h2"])
    server = H2Server(handler, log, args.max_streams, args.initial_streams)

    async def main():
        loop = asyncio.get_running_loop()
        srv = await loop.create_server(lambda: H2Protocol(server), "127.0.0.1", args.port, ssl=ctx)
        port = srv.sockets[0].getsockname()[1]
        if args.port_file:
            tmp = args.port_file + ".tmp"
            with open(tmp, "w") as f:
                f.write(str(port))
            os.replace(tmp, args.port_file)
        print("PORT %d" % port, flush=True)
        async with srv:
            await srv.serve_forever()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)

