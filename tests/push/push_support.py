"""A webhook receiver for the push tests: a real HTTP/1.1 server on 127.0.0.1 whose answer
per request is chosen by the test (``behave``), recording every request it got, and the
Standard Webhooks verification written independently of mqlite.push.signing (from the
scheme's text: HMAC-SHA256 over "{id}.{timestamp}.{body}" keyed by the base64 decoding of
the secret after ``whsec_``, compared in constant time against each ``v1,`` signature)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import http.server
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Got:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)


# An answer: (status, headers, body) or a callable doing its own thing with the handler.
Answer = tuple[int, dict[str, str], bytes]
Behaviour = Callable[[Got, "http.server.BaseHTTPRequestHandler"], Answer | None]


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """Standard Webhooks, independently: True iff one v1 signature matches."""
    assert secret.startswith("whsec_")
    key = base64.b64decode(secret[len("whsec_") :])
    msg_id, ts = headers["webhook-id"], headers["webhook-timestamp"]
    mac = hmac.new(key, msg_id.encode() + b"." + ts.encode() + b"." + body, hashlib.sha256)
    expected = base64.b64encode(mac.digest())
    for part in headers["webhook-signature"].split(" "):
        version, _, sig = part.partition(",")
        if version == "v1" and hmac.compare_digest(sig.encode(), expected):
            return True
    return False


class Receiver:
    """``behave(fn)`` sets the answer; ``got`` lists requests; ``active`` counts those in
    progress (max seen in ``peak``, per ``mqlite-group-id`` in ``group_peak``)."""

    def __init__(self) -> None:
        self.got: list[Got] = []
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0
        self.group_active: dict[str, int] = {}
        self.group_peak: dict[str, int] = {}
        self.behaviour: Behaviour = lambda g, h: (204, {}, b"")
        self.conns: list[socket.socket] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length", "0"))
                got = Got(
                    self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(n)
                )
                group = got.headers.get("mqlite-group-id", "")
                with receiver.lock:
                    receiver.got.append(got)
                    receiver.active += 1
                    receiver.peak = max(receiver.peak, receiver.active)
                    c = receiver.group_active.get(group, 0) + 1
                    receiver.group_active[group] = c
                    receiver.group_peak[group] = max(receiver.group_peak.get(group, 0), c)
                try:
                    answer = receiver.behaviour(got, self)
                finally:
                    # Out of progress BEFORE the answer is written: once it is, the broker
                    # may post the group's next message, which must not count as overlap.
                    with receiver.lock:
                        receiver.active -= 1
                        receiver.group_active[group] -= 1
                try:
                    if answer is not None:
                        status, headers, body = answer
                        self.send_response(status)
                        for k, v in headers.items():
                            self.send_header(k, v)
                        self.send_header("content-length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

            def handle(self) -> None:
                # A peer that died mid-request (the SIGKILL test): not an error here, and
                # finish() must still run so the connection's files close.
                with contextlib.suppress(ConnectionError):
                    super().handle()

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True
            # socketserver's default backlog of 5 reset some of 16 connections opened at
            # once (a push target's slots connecting together): not what is under test.
            request_queue_size = 128

            def get_request(self) -> tuple[socket.socket, Any]:
                conn, addr = super().get_request()
                receiver.conns.append(conn)  # closed by close(), even mid-request
                return conn, addr

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def behave(self, fn: Behaviour) -> None:
        self.behaviour = fn

    def answer(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.behaviour = lambda g, h: (status, headers or {}, b"")

    def wait_for(self, n: int, timeout_s: float = 10.0) -> list[Got]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.got) >= n:
                    return list(self.got)
            time.sleep(0.01)
        raise AssertionError(f"the receiver got {len(self.got)} requests, expected {n}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        for conn in self.conns:  # keep-alive or held connections of daemon threads
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()


class RawServer:
    """A TCP server with a hostile handler (never answers, trickles, floods, resets)."""

    def __init__(self, handle: Callable[[socket.socket], None]) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.handle = handle
        self.conns: list[socket.socket] = []
        self.accepted = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with contextlib.suppress(OSError):
                self.handle(conn)
        finally:
            conn.close()  # never left to the garbage collector (a ResourceWarning in a later test)

    def close(self) -> None:
        self.closed = True
        self.sock.close()
        for c in self.conns:
            with contextlib.suppress(OSError):
                c.close()
