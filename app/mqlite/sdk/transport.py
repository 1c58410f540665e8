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
import struct
import threading
import time

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


# Plain TCP on a POSIX system keeps its socket in blocking mode and lets the kernel time
# out each send and read (SO_SNDTIMEO / SO_RCVTIMEO): a Python socket timeout costs a
# poll(2) before every sendto and recvfrom, two extra system calls per request for the
# same bound. TLS (and Windows) keep Python's socket timeout.
_KERNEL_TIMEOUTS = hasattr(select, "poll") and hasattr(socket, "SO_RCVTIMEO")


def _timeval(seconds: float) -> bytes:
    whole = int(seconds)
    return struct.pack("ll", whole, int((seconds - whole) * 1e6))


class _Conn:
    """One keep-alive connection: its socket, the poller that checks it before reuse
    (registered once), its answer parser, the read/send timeout set on it and when it
    went idle."""

    __slots__ = ("answer", "kernel", "poller", "since", "sock", "timeout")

    def __init__(self, sock: socket.socket, kernel: bool, max_body: int) -> None:
        self.sock = sock
        self.answer = Answer(max_body)  # reused: the connection goes back only when clean
        self.kernel = kernel  # timeouts by SO_RCVTIMEO/SO_SNDTIMEO, not Python's
        self.timeout = -1.0
        self.since = 0.0
        self.poller: select.poll | None = None
        if hasattr(select, "poll"):
            self.poller = select.poll()
            self.poller.register(sock, select.POLLIN)

    def dropped(self) -> bool:
        """True if the idle socket is readable: the peer closed it (EOF) or sent junk. An
        idle keep-alive connection has nothing to read, so readable means unusable."""
        try:
            if self.poller is not None:
                return bool(self.poller.poll(0))
            readable, _, _ = select.select([self.sock], [], [], 0)
            return bool(readable)
        except (OSError, ValueError):
            return True

    def set_timeout(self, timeout: float) -> None:
        """Bound each send and read by ``timeout`` seconds (system calls only on a change)."""
        self.timeout = timeout
        if self.kernel:
            tv = _timeval(timeout)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
        else:
            self.sock.settimeout(timeout)


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
        self._idle: list[_Conn] = []
        self._lock = threading.Lock()
        self._closed = False

    def _new(self) -> _Conn:
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
            kernel = _KERNEL_TIMEOUTS and ep.scheme == "http"
            if kernel:
                sock.settimeout(None)  # blocking: the kernel's timeouts bound each call
            return _Conn(sock, kernel, self.max_body_bytes)
        except OSError as exc:
            sock.close()
            raise ConnectFailed(exc) from exc

    def _get(self) -> _Conn:
        now = time.monotonic()
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._new()
            if now - conn.since < IDLE_LIMIT_S and not conn.dropped():
                return conn
            conn.sock.close()

    def _put(self, conn: _Conn) -> None:
        conn.since = time.monotonic()
        with self._lock:
            if not self._closed and len(self._idle) < self.maxsize:
                self._idle.append(conn)
                return
        conn.sock.close()

    def request(self, data: bytes, timeout: float) -> tuple[int, bytes]:
        """POST once (``data`` = request line, headers, blank line and body); (status,
        body).

        ``ConnectFailed`` when nothing was sent, ``ExchangeFailed`` after that.
        """
        conn = self._get()
        sock = conn.sock
        try:
            if conn.timeout != timeout:
                conn.set_timeout(timeout)
            sock.sendall(data)
            answer = conn.answer
            answer.next()
            recv = sock.recv
            while not answer.feed(recv(READ_SIZE)):
                pass
        except BlockingIOError as exc:  # SO_RCVTIMEO/SO_SNDTIMEO expired
            sock.close()
            timed_out = TimeoutError("timed out")  # the words of a Python socket timeout
            timed_out.__cause__ = exc
            raise ExchangeFailed(timed_out) from timed_out
        except (OSError, ProtocolError) as exc:
            sock.close()
            raise ExchangeFailed(exc) from exc
        except BaseException:
            sock.close()  # e.g. KeyboardInterrupt mid-exchange: the stream is unusable
            raise
        if answer.reusable():
            self._put(conn)
        else:
            sock.close()
        return answer.status, answer.value()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.sock.close()
