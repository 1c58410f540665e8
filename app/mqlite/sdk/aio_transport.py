"""The asyncio transport: a pool of keep-alive HTTP/1.1 connections on asyncio streams.

Answers are parsed by ``httptools`` (llhttp, the parser Node.js ships, already installed
with ``uvicorn[standard]``): no hand-written HTTP parsing, and ~1.5 µs per answer where
h11 (pure Python) costs ~50 µs. Every read is bounded, so a hostile or broken server
costs a clear error, never unbounded memory or time:

- the response head (status line + headers) is at most ``MAX_HEAD_BYTES`` and
  ``MAX_HEADERS`` header lines;
- the body (Content-Length, chunked or close-delimited) is at most ``max_body_bytes``;
  it is never pre-allocated from a declared size, and llhttp refuses malformed or
  overflowing chunk sizes;
- the whole exchange has a deadline (``timeout``; a long poll's includes its wait), and
  once an answer has begun each read must arrive within ``idle_timeout``.

No thread: a parked long poll costs one idle socket. Failures map to the same
``ConnectFailed`` (nothing sent) and ``ExchangeFailed`` (maybe sent) as the sync
transport, so the retry rules are shared.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from dataclasses import dataclass

import httptools

from mqlite.sdk.endpoint import Endpoint
from mqlite.sdk.transport import IDLE_LIMIT_S, ConnectFailed, ExchangeFailed

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 100
# A Receive of 256 messages at the default 1 MiB body cap is ~350 MB of base64; a Peek of
# 1000 could be more, which is what ``max_body_bytes`` is for.
MAX_BODY_BYTES = 512 * 1024 * 1024
READ_SIZE = 64 * 1024


class ProtocolError(Exception):
    """The peer's answer is not HTTP/1.1 we accept (malformed, or over a bound)."""


class _Answer:
    """httptools' callbacks fill this in; the reader loop checks the bounds. A 1xx
    interim answer is forgotten when it completes: the real one follows on the stream."""

    __slots__ = (
        "body",
        "done",
        "framed",
        "head_done",
        "headers",
        "keep_alive",
        "max_body",
        "parser",
        "size",
        "status",
        "trailing",
    )

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self.parser = httptools.HttpResponseParser(self)
        self.done = False
        self.trailing = False  # bytes after the answer: the stream is not reusable
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers = 0
        self.framed = False  # Content-Length or chunked: EOF before the end is truncation
        self.head_done = False
        self.keep_alive = False
        self.size = 0
        self.body: list[bytes] = []

    def on_message_begin(self) -> None:
        if self.done:
            self.trailing = True

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers += 1
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self.framed = True

    def on_headers_complete(self) -> None:
        self.head_done = True
        self.status = self.parser.get_status_code()
        # llhttp answers this for the message being parsed: ask before it completes
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self.size += len(body)
        if self.size <= self.max_body:
            self.body.append(body)

    def on_message_complete(self) -> None:
        if 100 <= self.status < 200 and not self.done:
            self._reset()
        else:
            self.done = True


async def read_response(
    reader: asyncio.StreamReader,
    budget: asyncio.Timeout,
    *,
    deadline: float,
    idle_timeout: float,
    max_body: int,
) -> tuple[int, bytes, bool]:
    """(status, body, keep_alive) of one answer, skipping 1xx interim answers.

    ``budget`` (the exchange's timeout, due at loop time ``deadline``) is moved after
    every read to ``idle_timeout`` from now, never past ``deadline``: one timer per
    exchange, not one per read."""
    loop = asyncio.get_running_loop()
    answer = _Answer(max_body)
    head_bytes = 0
    while not answer.done:
        data = await reader.read(READ_SIZE)
        if not data:
            if answer.head_done and not answer.framed:
                break  # a close-delimited body ends at EOF
            raise ProtocolError("connection closed before the answer was complete")
        budget.reschedule(min(deadline, loop.time() + idle_timeout))
        head_bytes = 0 if answer.head_done else head_bytes + len(data)
        try:
            answer.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            raise ProtocolError(f"malformed answer: {exc}") from None
        if answer.headers > MAX_HEADERS:
            raise ProtocolError(f"answer has over {MAX_HEADERS} header lines")
        if not answer.head_done and head_bytes > MAX_HEAD_BYTES:
            raise ProtocolError(f"answer head over {MAX_HEAD_BYTES} bytes")
        if answer.size > max_body:
            raise ProtocolError(f"answer body over {max_body} bytes")
    keep_alive = answer.done and answer.framed and answer.keep_alive and not answer.trailing
    return answer.status, b"".join(answer.body), keep_alive


@dataclass(slots=True)
class _Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    since: float = 0.0

    def usable(self, now: float) -> bool:
        return (
            now - self.since < IDLE_LIMIT_S
            and not self.reader.at_eof()
            and not self.writer.is_closing()
        )

    def close(self) -> None:
        self.writer.close()


class AsyncPool:
    """Keep-alive connections to one endpoint for one event loop."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        maxsize: int,
        ssl_context: ssl.SSLContext | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.endpoint = endpoint
        self.maxsize = maxsize
        self.max_body_bytes = max_body_bytes
        self._ssl: ssl.SSLContext | None = None
        if endpoint.scheme == "https":
            self._ssl = ssl_context or ssl.create_default_context()
        self._idle: list[_Conn] = []
        self._closed = False

    async def _new(self, timeout: float) -> _Conn:
        ep = self.endpoint
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(ep.host, ep.port, ssl=self._ssl)
        except (OSError, TimeoutError) as exc:
            raise ConnectFailed(exc) from exc
        return _Conn(reader, writer)

    async def _get(self, timeout: float) -> _Conn:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if conn.usable(now):
                return conn
            conn.close()
        return await self._new(timeout)

    async def request(
        self, head: bytes, body: bytes, timeout: float, connect_timeout: float
    ) -> tuple[int, bytes]:
        """Send ``head`` (request line + headers, ending in a blank line) and ``body``;
        ``timeout`` bounds the exchange, ``connect_timeout`` connecting and each read of
        an answer once it has begun."""
        conn = await self._get(connect_timeout)
        deadline = asyncio.get_running_loop().time() + timeout
        try:
            async with asyncio.timeout_at(deadline) as budget:
                conn.writer.write(head + body)
                await conn.writer.drain()
                status, data, keep_alive = await read_response(
                    conn.reader,
                    budget,
                    deadline=deadline,
                    idle_timeout=connect_timeout,
                    max_body=self.max_body_bytes,
                )
        except (OSError, TimeoutError, ProtocolError) as exc:
            conn.close()
            raise ExchangeFailed(exc) from exc
        except BaseException:
            conn.close()  # cancelled mid-exchange: the stream is unusable
            raise
        if keep_alive and not self._closed and len(self._idle) < self.maxsize:
            conn.since = time.monotonic()
            self._idle.append(conn)
        else:
            conn.close()
        return status, data

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        for conn in idle:
            with contextlib.suppress(OSError, ssl.SSLError):
                await conn.writer.wait_closed()
