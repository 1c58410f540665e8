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
  connection is closed at once.
- Its own errors (malformed HTTP 400, 408, 431, 503) are the JSON envelope.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from mqlite import defaults, errors, wire


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
    # Connections waiting for a request head with no byte of it received, oldest first:
    # the ones evicted when a new connection needs room.
    _idle: ClassVar[dict[GuardedHttpProtocol, None]] = {}
    # Closed by us, not yet gone (connection_lost comes a loop turn later): not counted
    # against the cap, or a burst of evictions would evict (and refuse) twice.
    _closing: ClassVar[set[GuardedHttpProtocol]] = set()

    @classmethod
    def configure(cls, max_connections: int) -> None:
        cls.max_connections = max(1, max_connections)

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
        elif over > defaults.FD_RESERVE // 2:
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

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._unset_keepalive_if_required()  # the head arrived in time
        self._body_timer = self.loop.call_later(defaults.BODY_TIMEOUT_S, self._body_timeout)
        if self._live() > self.max_connections or len(self.tasks) >= self.max_connections:
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

    def on_response_complete(self) -> None:
        super().on_response_complete()  # arms the keep-alive timer when nothing is queued
        if self.timeout_keep_alive_task is not None:
            self._wait_for_head()
