"""One kept-alive HTTP/1.1 client connection on a socket, for the remote store's Hrana
client (``hrana.py``).

Why not ``http.client``: it sends a request's head and body in two writes and parses the
answer's head with ``email.parser``, about a third of the client's time per statement
(profiled; tests/bench/remote_bench.py measures the result). This sends each request in
one write and reads only what Hrana answers need (``Content-Length`` or chunked bodies,
``Connection: close``), every line and body bounded; the socket timeout bounds every
connect, write and read.
"""

from __future__ import annotations

import select
import socket
import ssl


class NotSent(ConnectionError):
    """The request did not reach the server whole (the connect or the write failed): the
    server cannot have run it, so a retry is safe whatever it carries."""


MAX_RESPONSE_BYTES = 256 * 1024 * 1024  # one pipeline's answer; the engine's reads are bounded
_MAX_LINE = 8192  # one line of an answer's head
_MAX_HEADERS = 100


class HttpConnection:
    """A connection to ``host:port`` (TLS if ``tls``); ``closed`` once the server said so."""

    def __init__(self, host: str, port: int, tls: bool, timeout_s: float) -> None:
        try:
            sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as exc:
            raise NotSent(f"connect: {type(exc).__name__}: {exc}") from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tls:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        except OSError as exc:
            sock.close()
            raise NotSent(f"TLS handshake: {type(exc).__name__}: {exc}") from exc
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._file = sock.makefile("rb")
        self.closed = False

    def post(self, head: bytes, body: bytes) -> tuple[int, bytes]:
        """Send one request in one write and read its answer. A failed write raises
        ``NotSent`` (the body's length is declared, so a server that got part of it ran
        nothing); a failure after the write is an ``OSError``/``ValueError`` (ambiguous)."""
        try:
            self._sock.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        except OSError as exc:
            self.close()
            raise NotSent(f"send: {type(exc).__name__}: {exc}") from exc
        status_line = self._line()
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ValueError(f"not an HTTP answer: {status_line[:80]!r}")
        status = int(parts[1])
        length: int | None = None
        chunked = False
        for _ in range(_MAX_HEADERS):
            line = self._line()
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value
            elif name == b"connection" and value == b"close":
                self.closed = True
        else:
            raise ValueError("the answer's head has too many lines")
        if chunked:
            return status, self._chunks()
        if length is None:
            self.closed = True
            return status, self._exactly(-1)
        return status, self._exactly(length)

    def _line(self) -> bytes:
        line = self._file.readline(_MAX_LINE + 1)
        if not line:
            raise ConnectionResetError("the server closed the connection")
        if len(line) > _MAX_LINE:
            raise ValueError("a line of the answer's head is too long")
        return line

    def _exactly(self, length: int) -> bytes:
        if length > MAX_RESPONSE_BYTES:
            raise ValueError(f"an answer of {length} bytes is over the limit")
        if length < 0:
            data = self._file.read(MAX_RESPONSE_BYTES + 1)
            if len(data) > MAX_RESPONSE_BYTES:
                raise ValueError("the answer is over the limit")
            return data
        data = self._file.read(length)
        if len(data) < length:
            raise ConnectionResetError("the answer was cut")
        return data

    def _chunks(self) -> bytes:
        out = bytearray()
        while size := int(self._line().split(b";", 1)[0], 16):
            out += self._exactly(size)
            self._line()  # the CRLF after each chunk
            if len(out) > MAX_RESPONSE_BYTES:
                raise ValueError("the answer is over the limit")
        while self._line() not in (b"\r\n", b"\n"):
            pass  # trailers
        return bytes(out)

    def dropped(self) -> bool:
        """The idle connection has something to read: the server closed it (EOF or a
        reset) or sent what nobody asked for. Either way it must not carry a request: on a
        dead connection the request's fate would be unknown (an OutcomeUnknown for a
        COMMIT) where a new connection makes it certain."""
        try:
            readable, _, _ = select.select([self._sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def close(self) -> None:
        self.closed = True
        self._file.close()
        self._sock.close()
