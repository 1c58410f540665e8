"""What every RPC handler is given: the ``Context`` of one request, and the handler table."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive

from mqlite.config import Settings
from mqlite.engine import Engine
from mqlite.server.runtime import Runtime


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

    @property
    def engine(self) -> Engine:
        return self.runtime.engine

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await self.runtime.call(fn, *args, **kwargs)


Handler = Callable[[Context, Any], Awaitable[Any]]
HANDLERS: dict[str, Handler] = {}


def rpc(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            HANDLERS[name] = fn
        return fn

    return register
