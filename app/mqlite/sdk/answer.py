"""One HTTP/1.1 answer, parsed by ``httptools`` and bounded: what both transports read.

``httptools`` is llhttp, the parser Node.js ships (installed with ``uvicorn[standard]``):
no hand-written HTTP parsing, ~1.5 µs per answer where ``http.client`` (its headers go
through the ``email`` package) costs ~100 µs and h11 (pure Python) ~50 µs. The sync
transport (``transport.Pool``) and the asyncio one (``aio_transport.AsyncPool``) feed it
whatever their socket read returned; every bound is checked after each feed, so a hostile
or broken server costs a clear ``ProtocolError``, never unbounded memory:

- the response head (status line + headers) is at most ``MAX_HEAD_BYTES`` and
  ``MAX_HEADERS`` header lines;
- the body (Content-Length, chunked or close-delimited) is at most ``max_body`` bytes; it
  is never pre-allocated from a declared size, and llhttp refuses malformed or
  overflowing chunk sizes.

Time bounds are the transports' (a socket timeout, an asyncio deadline).
"""

from __future__ import annotations

import httptools

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 100
# A Receive of 256 messages at the default 1 MiB body cap is ~350 MB of base64; a Peek of
# 1000 could be more, which is what ``max_body_bytes`` is for.
MAX_BODY_BYTES = 512 * 1024 * 1024
READ_SIZE = 64 * 1024


class ProtocolError(Exception):
    """The peer's answer is not HTTP/1.1 we accept (malformed, or over a bound)."""


class Answer:
    """httptools' callbacks fill this in; ``feed`` checks the bounds. A 1xx interim
    answer is forgotten when it completes: the real one follows on the stream."""

    __slots__ = (
        "body",
        "done",
        "framed",
        "head_bytes",
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
        self.next()

    def next(self) -> None:
        """Ready for the next answer on the same stream. A keep-alive connection keeps
        one ``Answer`` (and its llhttp parser, which parses consecutive messages) for
        all its exchanges; it is only reused after a ``reusable()`` answer."""
        self.done = False
        self.trailing = False  # bytes after the answer: the stream is not reusable
        self.head_bytes = 0
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers = 0
        self.framed = False  # Content-Length or chunked: EOF before the end is truncation
        self.head_done = False
        self.keep_alive = False
        self.size = 0
        self.body: list[bytes] = []

    # -- the parser's callbacks --------------------------------------------------------

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

    # -- what the transports call ------------------------------------------------------

    def feed(self, data: bytes | memoryview) -> bool:
        """Parse the next bytes read (``b""`` = the peer closed); True once the answer is
        complete. Raises ``ProtocolError`` on a malformed answer, a bound crossed, or EOF
        before a framed answer ended."""
        if not data:
            if self.head_done and not self.framed:
                self.done = True  # a close-delimited body ends at EOF
                return True
            raise ProtocolError("connection closed before the answer was complete")
        self.head_bytes = 0 if self.head_done else self.head_bytes + len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            raise ProtocolError(f"malformed answer: {exc}") from None
        if self.headers > MAX_HEADERS:
            raise ProtocolError(f"answer has over {MAX_HEADERS} header lines")
        if not self.head_done and self.head_bytes > MAX_HEAD_BYTES:
            raise ProtocolError(f"answer head over {MAX_HEAD_BYTES} bytes")
        if self.size > self.max_body:
            raise ProtocolError(f"answer body over {self.max_body} bytes")
        return self.done

    def reusable(self) -> bool:
        """The stream may carry the next request: a complete, framed answer the server
        did not mark ``Connection: close``, with nothing after it."""
        return self.done and self.framed and self.keep_alive and not self.trailing

    def value(self) -> bytes:
        return b"".join(self.body)
