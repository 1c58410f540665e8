"""An RPC request from the socket to a decoded Struct, under the server's budgets.

Order: ``Content-Type: application/json`` (415: a CORS "simple" request, which a web page
may send cross-site without a preflight, never reaches an RPC) → the 32 MiB body cap
(413, before anything is buffered) → for a large body, a reservation from the in-flight
budget (``MAX_INFLIGHT_BODY_BYTES`` for all clients together, waiting at most
``INFLIGHT_WAIT_S``, then 503), so eight 29 MB requests at once buffer two at a time
and memory stays flat → the body (in time: the protocol's ``BODY_TIMEOUT_S``) → the item bound (at
most ``MAX_REQUEST_ITEMS`` ``,`` and ``:``; one C-speed count, because msgspec holds
the GIL for its whole decode: 2M properties held the loop 2 s per request, and a worker
thread does not help) → the strict decode, on a worker thread for a large body (the
explaining slow path is Python and then yields the GIL). The reservation is held until
the response is built: the decoded request and its answer are what fills the memory.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.types import Receive, Scope

from mqlite import defaults, errors, wire

_ITEM_SCAN_BYTES = 64 << 10  # smaller bodies cannot hold enough items to matter


class ByteBudget:
    """Bytes of large request bodies held at once by all requests (one event loop)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._changed = asyncio.Condition()

    async def acquire(self, n: int, timeout: float) -> None:
        """Wait until ``n`` bytes fit, at most ``timeout`` seconds (then ``Unavailable``)."""
        n = min(n, self.capacity)
        async with self._changed:
            try:
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: self.used + n <= self.capacity), timeout
                )
            except TimeoutError:
                raise errors.Unavailable(
                    "too many large requests in flight; retry shortly"
                ) from None
            self.used += n

    async def release(self, n: int) -> None:
        async with self._changed:
            self.used -= min(n, self.capacity)
            self._changed.notify_all()


def header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of header ``name`` (lowercase), or None."""
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def require_json(scope: Scope) -> None:
    """415 unless the request says ``Content-Type: application/json`` (parameters such as
    ``; charset=utf-8`` are allowed, case does not matter)."""
    value = header(scope, b"content-type")
    media = (value or b"").split(b";", 1)[0].strip().lower()
    if media != b"application/json":
        shown = value.decode("latin-1")[:100] if value else "none"
        raise errors.UnsupportedMediaType(f"RPCs take Content-Type: application/json (got {shown})")


def content_length(scope: Scope, cap: int) -> int | None:
    """The declared body length, refusing (413) one over ``cap``; None if not declared."""
    value = header(scope, b"content-length")
    if value is None or not value.isdigit():
        return None
    length = int(value)
    if length > cap:
        raise errors.MessageTooLarge(f"request body over {cap} bytes")
    return length


class Intake:
    """Reads and decodes RPC requests; one per app (it owns the in-flight budget)."""

    def __init__(self, cap: int = defaults.MAX_REQUEST_BYTES) -> None:
        self.cap = cap
        self.budget = ByteBudget(defaults.MAX_INFLIGHT_BODY_BYTES)

    def request(self, route: wire.Route[Any, Any], scope: Scope, receive: Receive) -> _Request:
        """``async with intake.request(...) as req``: the decoded request; a large
        body's reservation lasts the ``with`` block."""
        return _Request(self, route, scope, receive)

    async def read(self, receive: Receive, hold: _Hold) -> bytearray:
        """The body in one buffer (no join copy). An undeclared length that grows past
        ``LARGE_BODY_BYTES`` reserves the whole cap then. (The protocol bounds the time:
        ``BODY_TIMEOUT_S``, then a disconnect.)"""
        buf = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise errors.Canceled("the client went away")
            buf += message.get("body", b"")
            if len(buf) > self.cap:
                raise errors.MessageTooLarge(f"request body over {self.cap} bytes")
            if not hold.n and len(buf) > defaults.LARGE_BODY_BYTES:
                await hold.take(self.cap)
            if not message.get("more_body", False):
                return buf


class _Request:
    """The context manager of one request (a class: cheaper than a generator-based one
    on the hot path)."""

    __slots__ = ("hold", "intake", "receive", "route", "scope")

    def __init__(
        self, intake: Intake, route: wire.Route[Any, Any], scope: Scope, receive: Receive
    ) -> None:
        self.intake, self.route, self.scope, self.receive = intake, route, scope, receive
        self.hold = _Hold(intake.budget)

    async def __aenter__(self) -> Any:
        require_json(self.scope)
        length = content_length(self.scope, self.intake.cap)
        try:
            if length is not None and length > defaults.LARGE_BODY_BYTES:
                await self.hold.take(length)
            body = await self.intake.read(self.receive, self.hold)
            return await decode(self.route, body)
        except BaseException:
            await self.hold.give_back()
            raise

    async def __aexit__(self, *exc: object) -> None:
        await self.hold.give_back()


class _Hold:
    """One request's share of the budget (zero for a small body)."""

    def __init__(self, budget: ByteBudget) -> None:
        self.budget = budget
        self.n = 0

    async def take(self, n: int) -> None:
        await self.budget.acquire(n, defaults.INFLIGHT_WAIT_S)
        self.n = n

    async def give_back(self) -> None:
        if self.n:
            n, self.n = self.n, 0
            await self.budget.release(n)


async def decode(route: wire.Route[Any, Any], body: bytearray) -> Any:
    """The strict decode; a large body is counted and decoded on a worker thread (each
    step one C call holding the GIL, the loop runs between them)."""
    if len(body) > defaults.LARGE_BODY_BYTES:
        return await asyncio.to_thread(_checked_decode, route, body)
    return _checked_decode(route, body)


def _checked_decode(route: wire.Route[Any, Any], body: bytearray) -> Any:
    """Refuse (400) a body with more items than the decoder may build in one go."""
    if len(body) > _ITEM_SCAN_BYTES:
        items = body.count(b",")
        items += body.count(b":")
        if items > defaults.MAX_REQUEST_ITEMS:
            raise errors.InvalidArgument(
                f"request body holds {items} ',' and ':' (JSON items), over the limit of "
                f"{defaults.MAX_REQUEST_ITEMS}: split it into smaller requests"
            )
    return wire.decode_request(route, body)
