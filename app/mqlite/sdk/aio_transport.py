"""The asyncio transport: a pool of keep-alive HTTP/1.1 connections, each an
``asyncio.Protocol`` that feeds what arrives straight into the bounded parser.

Answers are parsed and bounded by ``answer.Answer`` (llhttp through ``httptools``, the
same parser as the sync transport): the head, the header count and the body are capped
there. This module adds the time bounds: the whole exchange has a deadline (``timeout``;
a long poll's includes its wait), and once an answer has begun each read must arrive
within ``idle_timeout``.

Why a Protocol and not asyncio streams: a StreamReader costs a task wakeup, a buffer copy
and (with ``asyncio.timeout``) a timer re-armed per read; measured on single-message
Sends it was over half the client's CPU. Here ``data_received`` parses in place and
resolves one future per exchange, and one timer per connection checks both deadlines: it
fires at the exchange's deadline, or earlier once an answer has begun and then stalls.
The timer outlives the exchange that armed it: the next exchange on the connection keeps
it when it fires no later than its own deadline (``_expire`` then re-arms it for what is
due), so a stream of short exchanges schedules a timer about once per ``timeout``
instead of scheduling and cancelling one per request.

No thread: a parked long poll costs one idle socket. Failures map to the same
``ConnectFailed`` (nothing sent) and ``ExchangeFailed`` (maybe sent) as the sync
transport, so the retry rules are shared.
"""

from __future__ import annotations

import asyncio
import ssl
import time

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


class _Conn(asyncio.BufferedProtocol):
    """One keep-alive connection; at most one exchange in flight.

    A BufferedProtocol: the loop reads into this connection's own buffer (``recv_into``)
    instead of allocating a fresh 256 KiB bytes object per read, which glibc may serve
    by mmap and give back by munmap -- three more system calls per read, depending on the
    process's malloc history. The parser copies what it keeps, so the buffer is reused."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.buffer = memoryview(bytearray(READ_SIZE))
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.since = 0.0  # when it went idle (time.monotonic)
        # the exchange in flight
        self.answer: Answer | None = None
        self.reader: Answer | None = None  # the parser kept for every exchange (answer.py)
        self.waiter: asyncio.Future[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.timer_at = 0.0  # when the pending timer fires (loop time)
        self.deadline = 0.0
        self.idle_timeout = 0.0
        self.last_read = -1.0  # loop time of the answer's latest read; < 0: none yet

    # -- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.buffer

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(self.buffer[:nbytes])

    def data_received(self, data: bytes | memoryview) -> None:
        answer = self.answer
        if answer is None or self.waiter is None or self.waiter.done():
            self.close()  # bytes nobody asked for: the stream is out of step
            return
        try:
            done = answer.feed(data)
        except ProtocolError as exc:
            self._finish(exc)
            return
        if done:
            self._finish(None)
            return
        now = self.loop.time()
        if self.last_read < 0 and now + self.idle_timeout < self.deadline:
            self._arm(now + self.idle_timeout)  # the answer began: now it may not stall
        self.last_read = now

    def eof_received(self) -> bool:
        self._ended()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._ended(exc)

    # -- the exchange ------------------------------------------------------------------

    def _ended(self, exc: Exception | None = None) -> None:
        if self.answer is None or self.waiter is None or self.waiter.done():
            return
        try:
            self.answer.feed(b"")  # a close-delimited body ends here; anything else raises
        except ProtocolError as err:
            self._finish(exc if isinstance(exc, OSError) else err)
            return
        self._finish(None)

    def _arm(self, when: float) -> None:
        """Have a timer fire at ``when`` at the latest. A pending timer that fires no
        later is kept: ``_expire`` re-arms it for whatever is due then, so back-to-back
        exchanges share one timer instead of scheduling and cancelling one each."""
        if self.timer is not None:
            if self.timer_at <= when:
                return
            self.timer.cancel()
        self.timer_at = when
        self.timer = self.loop.call_at(when, self._expire)

    def _expire(self) -> None:
        self.timer = None
        if self.waiter is None or self.waiter.done():
            return  # fired between exchanges: the next one arms its own
        due = self.deadline
        if self.last_read >= 0:
            due = min(due, self.last_read + self.idle_timeout)
        if self.loop.time() < due:
            self._arm(due)  # data arrived since the timer was set: not stalled yet
            return
        self._finish(TimeoutError())  # reported as "TimeoutError", as asyncio.timeout did

    def _finish(self, exc: BaseException | None) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            if exc is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(exc)

    async def exchange(
        self, data: bytes, deadline: float, idle_timeout: float, max_body: int
    ) -> Answer:
        assert self.transport is not None
        answer = self.reader
        if answer is None:
            answer = self.reader = Answer(max_body)
        else:
            answer.next()  # the last answer was reusable, or the connection was closed
        self.answer = answer
        self.waiter = self.loop.create_future()
        self.deadline, self.idle_timeout, self.last_read = deadline, idle_timeout, -1.0
        self._arm(deadline)
        try:
            self.transport.write(data)
            await self.waiter
        finally:
            self.answer = self.waiter = None  # the timer stays for the next exchange
        return answer

    def usable(self, now: float) -> bool:
        return (
            now - self.since < IDLE_LIMIT_S
            and not self.lost
            and self.transport is not None
            and not self.transport.is_closing()
        )

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.transport is not None:
            self.transport.close()


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
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                _, conn = await loop.create_connection(
                    lambda: _Conn(loop), ep.host, ep.port, ssl=self._ssl
                )
        except (OSError, TimeoutError) as exc:
            raise ConnectFailed(exc) from exc
        return conn

    async def _get(self, timeout: float) -> _Conn:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if conn.usable(now):
                return conn
            conn.close()
        return await self._new(timeout)

    async def request(
        self, data: bytes, timeout: float, connect_timeout: float
    ) -> tuple[int, bytes]:
        """Send ``data`` (request line, headers, blank line and body); ``timeout`` bounds
        the exchange, ``connect_timeout`` connecting and each read of an answer once it
        has begun."""
        conn = await self._get(connect_timeout)
        deadline = conn.loop.time() + timeout
        try:
            answer = await conn.exchange(data, deadline, connect_timeout, self.max_body_bytes)
        except (OSError, TimeoutError, ProtocolError) as exc:
            conn.close()
            raise ExchangeFailed(exc) from exc
        except BaseException:
            conn.close()  # cancelled mid-exchange: the stream is unusable
            raise
        if (
            answer.reusable()
            and not conn.lost
            and not self._closed
            and len(self._idle) < self.maxsize
        ):
            conn.since = time.monotonic()
            self._idle.append(conn)
        else:
            conn.close()
        return answer.status, answer.value()

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        await asyncio.sleep(0)  # let the transports run their connection_lost
