"""The synchronous transport: a thread-safe pool of keep-alive ``http.client`` connections.

Why ``http.client`` (stdlib): measured on single-message Sends against a local broker it
costs the least client CPU per request (~190 µs vs ~310 µs for urllib3 and ~600 µs for
httpx, see tests/bench/sdk_bench.py ``--libs``), needs no dependency, and everything the
other two add (redirects, cookies, content decoding, their own retries) is something this
client must not do anyway. What they add that matters — pooling, stale-connection checks,
timeouts — is the few lines below.

Each request borrows one connection (LIFO, so the warmest one), sends request line,
headers and body in ONE write (``HTTPConnection.request`` makes two, which costs the broker
an extra read and the client an extra syscall),
parses the answer with ``http.client.HTTPResponse``, and returns the connection unless the
broker said ``Connection: close``. An idle connection the broker has closed is detected before reuse
(a non-blocking peek sees EOF) and replaced, so keep-alive expiry never costs a request.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass

from mqlite import defaults
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
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.maxsize = maxsize
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
            sock.settimeout(timeout)
            sock.sendall(head + body)
            resp = http.client.HTTPResponse(sock, method="POST")
            try:
                resp.begin()
                data = resp.read()
            finally:
                resp.close()
            status = resp.status
            will_close = resp.will_close
        except (OSError, http.client.HTTPException) as exc:
            sock.close()
            raise ExchangeFailed(exc) from exc
        except BaseException:
            sock.close()  # e.g. KeyboardInterrupt mid-exchange: the stream is unusable
            raise
        if will_close:
            sock.close()
        else:
            self._put(sock)
        return status, data

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for item in idle:
            item.sock.close()
