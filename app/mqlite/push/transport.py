"""The HTTP client of push delivery: one kept-alive HTTP/1.1 connection per delivery
slot, on asyncio streams, opened through the egress guard.

Why not httpx (what push used first): profiled under load, httpx + httpcore + anyio cost
~1.5 ms of the push thread's CPU per POST, and httpcore's pool checks every connection it
holds (a ``getpeername`` and a poll each) when a request starts and when it ends, so one
pool of N connections costs O(N) syscalls per POST -- push got SLOWER with more in flight
(259 / 249 / 84 msgs/s at 1 / 8 / 64, against the SDK Receiver's 448 / 1,182 / 1,168).
A webhook needs one request shape and three facts of the answer (the status, a
``Retry-After``, where the answer ends), which is what this reads; the house already does
the same for the remote store (engine/http1.py).

The egress guard is exact: every NEW connection resolves the name itself, checks every
answer (``Egress.check_addresses``) and connects to an address it checked, while TLS
still verifies the certificate for, and sends SNI with, the URL's host name. A name
re-bound to 127.0.0.1 after CreatePush is refused at connect time. A kept-alive
connection is reused only for the same origin, for at most ``KEEPALIVE_S`` idle, and
only after an answer whose end was certain: a ``Content-Length`` of at most 64 KiB (read
whole), or a 204/304. Any other answer (chunked, no length, longer, ``Connection:
close``, HTTP/1.0) is not read past its head: the connection is dropped, so at most the
64 KiB head bound is ever read. No proxy is used and redirects are never followed.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote, urlsplit

from mqlite import defaults, errors
from mqlite.engine.egress import Egress, literal

# Idle keep-alive kept under the common 5 s server default (Node's keepAliveTimeout): a
# connection the server is closing just then would fail its next POST (a retry).
KEEPALIVE_S = 4.0
MAX_HEAD_BYTES = defaults.PUSH_MAX_RESPONSE_BYTES  # an answer's head, status to blank line
MAX_INTERIM = 8  # 1xx answers skipped before the final one
_PATH_SAFE = "".join(chr(c) for c in range(0x21, 0x7F))  # visible ASCII stays as it is


class ConnectFailed(ConnectionError):
    """No connection was made: the name did not resolve, every address refused it or
    failed (TCP or TLS), or the egress guard refused the target."""


class EgressRefused(ConnectFailed):
    """The egress guard refused every address of the target (no connection was made)."""


class ProtocolError(Exception):
    """The answer is not HTTP/1.x (a malformed status line, header or length)."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a target's POSTs go, parsed once per URL (the URL was checked at CreatePush)."""

    tls: bool
    host: str  # as in the URL: what TLS verifies and the resolver looks up
    port: int
    head: bytes  # "POST <path> HTTP/1.1\r\nhost: <host>\r\n"


@lru_cache(maxsize=1024)
def endpoint(url: str) -> Endpoint:
    parts = urlsplit(url)
    tls = parts.scheme.lower() == "https"
    host = parts.hostname or ""
    port = parts.port or (443 if tls else 80)
    try:  # an IPv6 literal in brackets; a name in its ASCII (IDNA) form
        name = f"[{host}]" if ":" in host else host.encode("idna").decode("ascii")
    except UnicodeError:  # (CreatePush resolved it, so this is rare) sent as written
        name = host
    authority = name if parts.port is None else f"{name}:{port}"
    target = quote(parts.path or "/", safe=_PATH_SAFE)
    if parts.query:
        target += "?" + quote(parts.query, safe=_PATH_SAFE)
    return Endpoint(tls, host, port, f"POST {target} HTTP/1.1\r\nhost: {authority}\r\n".encode())


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    retry_after: str  # the raw header, "" when absent


def ssl_context() -> ssl.SSLContext:
    """Certificate-verifying TLS with certifi's CA bundle (a runtime dependency: the same
    bundle httpx used, so push trusts what it trusted before), else the system's."""
    try:
        import certifi
    except ImportError:  # pragma: no cover - certifi is a runtime dependency
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


async def resolve(host: str, port: int) -> list[str]:
    """DNS for one new connection (never cached here: a re-bound name is seen)."""
    ip = literal(host)
    if ip is not None:
        return [str(ip)]
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise ConnectFailed(f"host {host!r} does not resolve ({exc})") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class _Connection:
    __slots__ = ("endpoint", "reader", "used_at", "writer")

    def __init__(
        self, ep: Endpoint, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.endpoint, self.reader, self.writer = ep, reader, writer
        self.used_at = time.monotonic()

    def reusable_for(self, ep: Endpoint) -> bool:
        return (
            self.endpoint == ep
            and time.monotonic() - self.used_at < KEEPALIVE_S
            and not self.reader.at_eof()
            and not self.writer.is_closing()
        )

    def drop(self) -> None:
        self.writer.transport.abort()  # no TLS close_notify wait, no linger


async def connect(egress: Egress, ep: Endpoint, context: ssl.SSLContext) -> _Connection:
    addresses = await resolve(ep.host, ep.port)
    try:
        egress.check_addresses(ep.host, addresses)
    except errors.InvalidArgument as exc:
        raise EgressRefused(exc.message.removeprefix("push url: ")) from None
    failure: OSError | None = None
    for address in addresses:  # every one checked above: any may be connected to
        try:
            reader, writer = await asyncio.open_connection(
                address,
                ep.port,
                ssl=context if ep.tls else None,
                server_hostname=ep.host if ep.tls else None,
                limit=MAX_HEAD_BYTES,
            )
        except OSError as exc:
            failure = exc
            continue
        # TCP_NODELAY: the receiver's delayed ACK would add ~40 ms to a small POST.
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Connection(ep, reader, writer)
    assert failure is not None
    raise ConnectFailed(f"{type(failure).__name__}: {failure}") from failure


class Slot:
    """One delivery slot's connection: at most one, kept alive between its POSTs."""

    __slots__ = ("_conn", "_context", "_egress")

    def __init__(self, egress: Egress, context: ssl.SSLContext) -> None:
        self._egress, self._context = egress, context
        self._conn: _Connection | None = None

    async def post(self, ep: Endpoint, headers: dict[str, str], body: bytes) -> Answer:
        """One exchange; the caller bounds it with its deadline (a cancellation drops the
        connection: its state is unknown)."""
        conn = self._conn
        self._conn = None
        if conn is not None and not conn.reusable_for(ep):
            conn.drop()
            conn = None
        if conn is None:
            conn = await connect(self._egress, ep, self._context)
        keep = False
        try:
            lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            conn.writer.write(ep.head + f"{lines}content-length: {len(body)}\r\n\r\n".encode())
            conn.writer.write(body)
            await conn.writer.drain()
            answer, keep = await _read_answer(conn.reader)
        finally:
            if keep:
                conn.used_at = time.monotonic()
                self._conn = conn
            else:
                conn.drop()
        return answer

    def close(self) -> None:
        if self._conn is not None:
            self._conn.drop()
            self._conn = None


async def _read_answer(reader: asyncio.StreamReader) -> tuple[Answer, bool]:
    """(the answer, whether the connection may carry another request)."""
    for _ in range(MAX_INTERIM + 1):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            raise ProtocolError(f"answer head over {MAX_HEAD_BYTES} bytes") from None
        except asyncio.IncompleteReadError:
            raise ConnectionError("the server closed the connection before answering") from None
        status, version, fields = _parse_head(head)
        if not 100 <= status < 200 or status == 101:
            break
    else:
        raise ProtocolError(f"more than {MAX_INTERIM} interim (1xx) answers")
    answer = Answer(status, fields.get("retry-after", ""))
    if version != "HTTP/1.1" or "close" in fields.get("connection", "").lower():
        return answer, False
    if status in (204, 304):
        return answer, True
    length = fields.get("content-length")
    if "transfer-encoding" in fields or length is None or not length.isdigit():
        return answer, False  # where it ends is not certain: not read, not reused
    n = int(length)
    if n > defaults.PUSH_MAX_RESPONSE_BYTES - len(head):
        return answer, False  # a long answer is dropped with its connection
    try:
        await reader.readexactly(n)
    except asyncio.IncompleteReadError:
        return answer, False
    return answer, True


def _parse_head(head: bytes) -> tuple[int, str, dict[str, str]]:
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        raise ProtocolError("answer head is not text") from None
    lines = text.split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if version not in ("HTTP/1.1", "HTTP/1.0") or not code.isdigit() or len(code) != 3:
        raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    fields: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise ProtocolError(f"malformed header line: {line[:80]!r}")
        key, value = name.lower(), value.strip()
        if key == "content-length" and fields.get(key, value) != value:
            raise ProtocolError("conflicting content-length headers")
        fields[key] = value
    return int(code), version, fields


class Slots:
    """A target's slots: at most ``size`` taken at once (the dispatcher keeps at most
    ``max_in_flight`` deliveries), each with its own connection, made on first use (a
    target at 256 that never sees load opens none)."""

    def __init__(self, egress: Egress, size: int, context: ssl.SSLContext) -> None:
        self.size = size
        self._egress, self._context = egress, context
        self._idle: list[Slot] = []
        self._all: list[Slot] = []

    def take(self) -> Slot:
        if self._idle:
            return self._idle.pop()
        slot = Slot(self._egress, self._context)
        self._all.append(slot)
        return slot

    def give(self, slot: Slot) -> None:
        self._idle.append(slot)

    def close(self) -> None:
        for slot in self._all:
            slot.close()
        self._all.clear()
        self._idle.clear()
