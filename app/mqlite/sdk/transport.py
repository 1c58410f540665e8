"""The synchronous transport: a thread-safe pool of keep-alive sockets speaking HTTP/1.1.

Why raw sockets and ``answer.Answer`` (llhttp through ``httptools``): measured on
single-message Sends against a local broker, ``http.client`` spent ~100 µs of client CPU
per answer in its ``email``-based header parsing alone (~190 µs per Send in all; urllib3
~310 µs, httpx ~600 µs; see tests/bench/sdk_bench.py ``--libs``), while llhttp parses
an answer in ~1.5 µs. Everything those libraries add beyond parsing (redirects, cookies,
content decoding, their own retries) is something this client must not do anyway; what
matters — pooling, stale-connection checks, timeouts, TLS — is the few lines below.

Each request borrows one connection (LIFO, so the warmest one), sends request line,
headers and body in ONE write (one syscall, one read on the broker), feeds what each
read returns to the bounded parser (the head, header count and body are capped there:
a hostile server costs a ``ProtocolError``, never unbounded memory), and returns the
connection unless the broker said ``Connection: close`` or the answer was not framed.
``timeout`` bounds connecting and each read, as ``http.client``'s did. An idle
connection the broker has closed is detected before reuse (a non-blocking poll sees EOF)
and replaced, so keep-alive expiry never costs a request.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass

from mqlite import defaults
from mqlite.sdk.answer import MAX_BODY_BYTES, READ_SIZE, Answer, ProtocolError
from mqlite.sdk.endpoint import Endpoint

DEFAULT_TIMEOUT_S = 30.0
# The broker closes a connection idle for HEAD_TIMEOUT_S (5 s): drop ours a second
# earlier, so a request never races the broker's close on a reused connection.
IDLE_LIMIT_S = defaults.HEAD_TIMEOUT_S - 1.0
POOL_SIZE = 16


class ConnectFailed(Exception):
    """Opening a connection failed: nothing was sent."""


class ExchangeFailed(Exception):
    """The connection failed after the request may have been (partly) sent."""


@dataclass(slots=True)
class _Idle:
    sock: socket.socket
    since: float


def _dropped(sock: socket.socket | None) -> bool:
    """True if an idle socket is readable: the peer closed it (EOF) or sent junk. An idle
    keep-alive connection has nothing to read, so readable means unusable."""
    if sock is None:
        return True
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)
    except (OSError, ValueError):
        return True


class Pool:
    """Keep-alive connections to one endpoint, safe to share between threads."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        maxsize: int = POOL_SIZE,
        ssl_context: ssl.SSLContext | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.maxsize = maxsize
        self.max_body_bytes = max_body_bytes
        self._ssl = ssl_context
        self._idle: list[_Idle] = []
        self._lock = threading.Lock()
        self._closed = False

    def _new(self) -> socket.socket:
        ep = self.endpoint
        try:
            sock = socket.create_connection((ep.host, ep.port), timeout=self.timeout)
        except OSError as exc:
            raise ConnectFailed(exc) from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if ep.scheme == "https":
                ctx = self._ssl or ssl.create_default_context()
                sock = ctx.wrap_socket(sock, server_hostname=ep.host)
        except OSError as exc:
            sock.close()
            raise ConnectFailed(exc) from exc
        return sock

    def _get(self) -> socket.socket:
        now = time.monotonic()
        while True:
            with self._lock:
                idle = self._idle.pop() if self._idle else None
            if idle is None:
                return self._new()
            if now - idle.since < IDLE_LIMIT_S and not _dropped(idle.sock):
                return idle.sock
            idle.sock.close()

    def _put(self, sock: socket.socket) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self.maxsize:
                self._idle.append(_Idle(sock, time.monotonic()))
                return
        sock.close()

    def request(self, head: bytes, body: bytes, timeout: float) -> tuple[int, bytes]:
        """POST once (``head`` = request line + headers + blank line); (status, body).

        ``ConnectFailed`` when nothing was sent, ``ExchangeFailed`` after that.
        """
        sock = self._get()
        try:
            if sock.gettimeout() != timeout:  # settimeout is a syscall: only on a change
                sock.settimeout(timeout)
            sock.sendall(head + body)
            answer = Answer(self.max_body_bytes)
            recv = sock.recv
            while not answer.feed(recv(READ_SIZE)):
                pass
        except (OSError, ProtocolError) as exc:
            sock.close()
            raise ExchangeFailed(exc) from exc
        except BaseException:
            sock.close()  # e.g. KeyboardInterrupt mid-exchange: the stream is unusable
            raise
        if answer.reusable():
            self._put(sock)
        else:
            sock.close()
        return answer.status, answer.value()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for item in idle:
            item.sock.close()
