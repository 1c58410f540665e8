"""The asyncio transport: a pool of keep-alive HTTP/1.1 connections on asyncio streams.

A deliberately small HTTP/1.1 client (the broker speaks exactly this: ``POST`` with a
JSON body, answers with ``Content-Length``; chunked answers from a proxy and
``Connection: close`` are handled too). No dependency, no thread: a parked long poll costs
one idle socket. Failures map to the same ``ConnectFailed`` (nothing sent) and
``ExchangeFailed`` (maybe sent) as the sync transport, so the retry rules are shared.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from dataclasses import dataclass

from mqlite.sdk.endpoint import Endpoint
from mqlite.sdk.transport import IDLE_LIMIT_S, ConnectFailed, ExchangeFailed

MAX_HEAD_BYTES = 64 * 1024


class ProtocolError(Exception):
    """The peer's answer is not HTTP/1.1 we understand."""


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


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """(status, body, keep_alive) of one answer, skipping 1xx interim answers."""
    while True:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError(f"bad status line {lines[0][:80]!r}")
        status = int(parts[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if not 100 <= status < 200:
            break
    conn_hdr = headers.get("connection", "").lower()
    keep_alive = "close" not in conn_hdr and (parts[0] != "HTTP/1.0" or "keep-alive" in conn_hdr)
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                break
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        return status, b"".join(chunks), keep_alive
    if "content-length" in headers:
        return status, await reader.readexactly(int(headers["content-length"])), keep_alive
    return status, await reader.read(), False  # delimited by close


class AsyncPool:
    """Keep-alive connections to one endpoint for one event loop."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        maxsize: int,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.maxsize = maxsize
        self._ssl: ssl.SSLContext | None = None
        if endpoint.scheme == "https":
            self._ssl = ssl_context or ssl.create_default_context()
        self._idle: list[_Conn] = []
        self._closed = False

    async def _new(self, timeout: float) -> _Conn:
        ep = self.endpoint
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    ep.host, ep.port, ssl=self._ssl, limit=MAX_HEAD_BYTES
                )
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
        """Send ``head`` (request line + headers, ending in a blank line) and ``body``."""
        conn = await self._get(connect_timeout)
        try:
            async with asyncio.timeout(timeout):
                conn.writer.write(head + body)
                await conn.writer.drain()
                status, data, keep_alive = await _read_response(conn.reader)
        except (
            OSError,
            TimeoutError,
            ProtocolError,
            ValueError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ) as exc:
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
