"""What every RPC handler is given (the ``Context`` of one request) and what it is: a
``Handler[Req, Resp]``, bound to its ``Route[Req, Resp]`` in ``handlers.py``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar

import msgspec
from starlette.types import Receive

from mqlite import wire as w
from mqlite.config import Settings
from mqlite.engine.audit import Actor
from mqlite.server.broker import Broker
from mqlite.server.runtime import Runtime

P = ParamSpec("P")
T = TypeVar("T")
Req = TypeVar("Req", bound=msgspec.Struct)
Resp = TypeVar("Resp", bound=msgspec.Struct)


@dataclass(slots=True)
class Context:
    runtime: Runtime
    log: dict[str, Any]
    receive: Receive
    started_ms: int
    settings: Settings
    access: str = ""  # the caller's principal access (manage, key, monitor, anonymous)
    broker: Any = None  # the BrokerApp (Observe adds its HTTP measurements)
    scope: tuple[str, ...] = ()  # a scoped key's queue patterns (lists are filtered to them)
    share: Any = None  # the caller's shares.Share (None: no share, an admin token)
    actor: Actor | None = None  # who asks, for the audit trail (audited routes only)

    @property
    def engine(self) -> Broker:
        """The engine as the server sees it (``broker.py``): verbs, never its plumbing."""
        return self.runtime.engine

    async def call(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` on the writer thread; typed as ``fn`` is."""
        return await self.runtime.call(fn, *args, **kwargs)


Handler = Callable[[Context, Req], Awaitable[Resp]]


@dataclass(frozen=True, slots=True)
class Binding(Generic[Req, Resp]):
    """One route and its handler; ``bind`` checks they agree on the request and response
    Structs (mypy), so a handler cannot answer with another route's response."""

    route: w.Route[Req, Resp]
    handler: Handler[Req, Resp]


def bind(route: w.Route[Req, Resp], handler: Handler[Req, Resp]) -> Binding[Req, Resp]:
    return Binding(route, handler)


async def watch_disconnect(receive: Receive, disconnected: asyncio.Event) -> None:
    """Set ``disconnected`` when the client goes away: once a handler has read the body,
    the next ASGI message can only be ``http.disconnect``. A long poll and a long walk
    (Redrive) run it beside their work, so they stop for a caller who cannot learn the
    answer."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            disconnected.set()
            return
