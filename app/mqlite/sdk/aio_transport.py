"""The asyncio transport: a pool of keep-alive HTTP/1.1 connections on asyncio streams.

Answers are parsed and bounded by ``answer.Answer`` (llhttp through ``httptools``, the
same parser as the sync transport): the head, the header count and the body are capped
there. This module adds the time bounds: the whole exchange has a deadline (``timeout``;
a long poll's includes its wait), and once an answer has begun each read must arrive
within ``idle_timeout``.

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

from mqlite.sdk.answer import (
    MAX_BODY_BYTES,
    MAX_HEAD_BYTES,
    MAX_HEADERS,
    READ_SIZE,
    Answer,
    ProtocolError,
)
from mqlite.sdk.endpoint import Endpoint
from mqlite.sdk.transport import IDLE_LIMIT_S, ConnectFailed, ExchangeFailed

__all__ = ["MAX_BODY_BYTES", "MAX_HEADERS", "MAX_HEAD_BYTES", "AsyncPool", "ProtocolError"]


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
    answer = Answer(max_body)
    while True:
        data = await reader.read(READ_SIZE)
        if data:
            budget.reschedule(min(deadline, loop.time() + idle_timeout))
        if answer.feed(data):
            return answer.status, answer.value(), answer.reusable()


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
