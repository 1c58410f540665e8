"""The HTTP/1.1 protocol of every mqlite listener (the broker's worker, ``mqlite-mcp --http``):
uvicorn's httptools protocol with the bounds it lacks.

uvicorn (0.54) bounds neither the request head nor the time to send it, has no connection
cap that answers before the descriptors run out, and answers its own errors in plain
text; gunicorn's ``limit_request_*`` settings never reach a uvicorn worker. One hostile
connection streaming a 128 MB header held the event loop for seconds (llhttp has no
limit; the value grows as it arrives), and idle sockets were never closed. This subclass
adds, per connection:

- **Head size**: the parser is fed at most ``MAX_HEAD_BYTES`` of a request head; a head
  not complete within them is refused ``431`` (the parser never sees more).
- **Head deadline**: a head must be complete ``HEAD_TIMEOUT_S`` after the connection
  opened or the previous response ended (uvicorn's keep-alive timer, which data no
  longer cancels): idle keep-alive and half-sent heads are closed (a half-sent one
  with a ``408`` first). **Body deadline**: the body must follow within
  ``BODY_TIMEOUT_S`` (else ``408`` if no response started, and close): one timer per
  request, cheaper than a timeout around the app's reads.
- **Connection cap** (``configure``): over the cap the oldest connection waiting for a
  head with nothing sent yet is closed to make room; if none is, the new request is
  answered ``503 unavailable``; far over it (descriptors about to run out) a new
  connection is closed at once. Configured with the requests it is kept for (the
  broker's ``/healthz`` and administrator tokens: ``server/shares.py``, which also gives
  each credential its share), the last ``CONNECTION_RESERVE_PERCENT`` of the cap is
  reserved: other requests are refused (or make room) at ``cap - reserve``.
- **An answer before the body** (a refusal, ``/healthz``): the rest of the body must
  follow within ``ANSWERED_BODY_LINGER_S``, during which the connection holds no slot,
  or it is closed -- a slow body to an open path cannot hold a slot for the body deadline.
- Its own errors (malformed HTTP 400, 408, 431, 503) are the JSON envelope.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from mqlite import defaults, errors, wire

# Which requests may take the reserved slots: the request target and its headers.
Privileged = Callable[[bytes, list[tuple[bytes, bytes]]], bool]


def nobody(target: bytes, headers: list[tuple[bytes, bytes]]) -> bool:
    """The default: no reserve (``mqlite-mcp --http``: one credential for everyone)."""
    return False


def envelope_response(exc: errors.MQLiteError) -> bytes:
    """A complete ``connection: close`` response carrying ``exc``'s JSON envelope."""
    body = wire.error_body(exc)
    head = (
        b"content-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n"
        b"connection: close\r\n\r\n"
    )
    return STATUS_LINE[exc.http_status] + head + body


async def _unavailable(scope: Any, receive: Any, send: Any) -> None:
    """The app a request over the connection cap is handed to (uvicorn's own is text)."""
    body = wire.error_body(errors.Unavailable(OVER_CAPACITY))
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


OVER_CAPACITY = "the server is at its connection limit; retry shortly"


class GuardedHttpProtocol(HttpToolsProtocol):
    """One instance per connection (uvicorn's ``http`` protocol class)."""

    max_connections: ClassVar[int] = defaults.MAX_CONNECTIONS
    reserve: ClassVar[int] = 0  # slots only privileged requests may take
    _reserved_for: ClassVar[tuple[Privileged]] = (nobody,)  # a tuple: not a method
    # Connections waiting for a request head with no byte of it received, oldest first:
    # the ones evicted when a new connection needs room.
    _idle: ClassVar[dict[GuardedHttpProtocol, None]] = {}
    # Closed by us, not yet gone (connection_lost comes a loop turn later): not counted
    # against the cap, or a burst of evictions would evict (and refuse) twice.
    _closing: ClassVar[set[GuardedHttpProtocol]] = set()

    @classmethod
    def configure(cls, max_connections: int, privileged: Privileged | None = None) -> None:
        """The cap; ``privileged``: the requests a reserve of the cap is kept for (the
        broker's: ``/healthz`` and its administrator tokens, ``server.shares.reserve_for``);
        None keeps no reserve."""
        cls.max_connections = max(1, max_connections)
        reserve = max(2, cls.max_connections * defaults.CONNECTION_RESERVE_PERCENT // 100)
        cls.reserve = 0 if privileged is None else min(reserve, cls.max_connections - 1)
        cls._reserved_for = (privileged or nobody,)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0
        self._body_timer: asyncio.TimerHandle | None = None

    # -- connection ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        over = self._live() - self.max_connections
        if over > 0 and self._idle:
            next(iter(self._idle))._close()
        elif len(self.connections) - self.max_connections > defaults.FD_RESERVE // 2:
            self._close()  # descriptors nearly gone: no room even to read a head
            return
        self._wait_for_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._idle.pop(self, None)
        self._closing.discard(self)
        self._cancel_body_timer()
        super().connection_lost(exc)

    def _live(self) -> int:
        return len(self.connections) - len(self._closing)

    def _close(self) -> None:
        self._idle.pop(self, None)
        if not self.transport.is_closing():
            self._closing.add(self)
            self.transport.close()

    def _wait_for_head(self) -> None:
        """Arm the head deadline (uvicorn's keep-alive timer, which uvicorn arms itself
        after a response); idle until a byte arrives."""
        if self.timeout_keep_alive_task is None:
            self.timeout_keep_alive_task = self.loop.call_later(
                defaults.HEAD_TIMEOUT_S, self.timeout_keep_alive_handler
            )
        if self._head_bytes == 0:
            self._idle[self] = None

    def _body_timeout(self) -> None:
        self._body_timer = None
        if not self.transport.is_closing():
            message = f"request body not received within {defaults.BODY_TIMEOUT_S:g} s"
            self._refuse(errors.RequestTimeout(message))

    def _cancel_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def timeout_keep_alive_handler(self) -> None:
        """The head deadline passed: close; say why if part of a head had arrived."""
        if self.transport.is_closing():
            return
        if self._head_bytes and self._between_responses():
            exc = errors.RequestTimeout(
                f"request head not complete within {defaults.HEAD_TIMEOUT_S:g} s"
            )
            self.transport.write(envelope_response(exc))
        self._close()

    # -- input ----------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        """Feed the parser, at most ``MAX_HEAD_BYTES`` of any one request head. Unlike
        uvicorn's, data does not cancel the head deadline."""
        if self._in_head and data:
            self._idle.pop(self, None)
        while data:
            if self._in_head:
                room = defaults.MAX_HEAD_BYTES - self._head_bytes
                if room <= 0:
                    self._refuse(
                        errors.HeadersTooLarge(
                            f"request line and headers over {defaults.MAX_HEAD_BYTES} bytes"
                        )
                    )
                    return
                chunk, data = data[:room], data[room:]
                self._head_bytes += len(chunk)
            else:
                chunk, data = data, b""
            try:
                self.parser.feed_data(chunk)
            except httptools.HttpParserUpgrade:
                return  # no websocket route: served as plain HTTP, the rest is dropped
            except httptools.HttpParserError as exc:
                detail = str(exc) or "malformed request"
                self._refuse(errors.InvalidArgument(f"invalid HTTP request: {detail}"))
                return
            if self.transport.is_closing():
                return

    def send_400_response(self, msg: str) -> None:
        self._refuse(errors.InvalidArgument(f"invalid HTTP request: {msg}"))

    def _refuse(self, exc: errors.MQLiteError) -> None:
        """Answer ``exc`` and close; with a response partly written only close."""
        if not self.transport.is_closing():
            if self._between_responses():
                self.transport.write(envelope_response(exc))
            self._close()

    def _between_responses(self) -> bool:
        """No response of this connection is partly written (an error may be answered)."""
        cycle = self.cycle
        return cycle is None or cycle.response_complete or not cycle.response_started

    # -- parser callbacks -----------------------------------------------------------------

    def _over_cap(self) -> bool:
        """Is there no slot for this request? Past ``cap - reserve`` only privileged
        requests get one (``configure``); idle connections make room first."""
        limit = self.max_connections
        if self._live() > limit - self.reserve and not self._privileged():
            limit -= self.reserve
        while self._live() > limit and self._idle:
            next(iter(self._idle))._close()
        return self._live() > limit or len(self.tasks) >= limit

    def _privileged(self) -> bool:
        """May this request take a reserved slot? (Asked only near the cap.)"""
        return self._reserved_for[0](self.url, self.headers)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._unset_keepalive_if_required()  # the head arrived in time
        self._body_timer = self.loop.call_later(defaults.BODY_TIMEOUT_S, self._body_timeout)
        if self._over_cap():
            app, self.app = self.app, _unavailable
            try:
                super().on_headers_complete()
            finally:
                self.app = app
        else:
            super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._cancel_body_timer()
        super().on_message_complete()
        self._in_head, self._head_bytes = True, 0  # a pipelined head is bounded too
        if self in self._closing and not self.transport.is_closing():
            self._closing.discard(self)  # its body came in time after an early answer
            if self.timeout_keep_alive_task is not None:
                self._wait_for_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # arms the keep-alive timer when nothing is queued
        if not self._in_head and not self.transport.is_closing():
            # Answered before its body arrived: no slot while the rest may follow, then
            # closed (the body timer, shortened) unless it did.
            self._cancel_body_timer()
            self._closing.add(self)
            self._body_timer = self.loop.call_later(defaults.ANSWERED_BODY_LINGER_S, self._close)
            return
        if self.timeout_keep_alive_task is not None:
            self._wait_for_head()
