"""The machinery of the call table (``mqlite.sdk.calls``): sans-IO steps, the verb registry.

A remote verb is a generator function: it validates its arguments, yields each ``Call``
(an encoded request with its route and retry class), is sent each decoded response back,
and returns the method's result. No I/O happens here, so one declaration drives both the
sync client (``HttpClient._run``) and the asyncio one (``AsyncClient._run``); multi-step
verbs (``create_queue`` = CreateQueue then ListQueues) compose with ``yield from``.

``@verb(route, retry)`` registers the function in ``VERBS`` under its name and declares
the retry class of its primary route (see ``mqlite.sdk.calls`` for the classes); every
``rpc`` to a route uses the class its owning verb declared, so a route has exactly one.
``scripts/gen_sdk.py`` renders the client methods, the ``Client`` protocol and the
embedded forwarders from ``VERBS`` (``make lint`` checks they are current).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from mqlite import wire
from mqlite.types import Message

if TYPE_CHECKING:
    from mqlite.sdk.aio_message import AsyncMessage

Resp = TypeVar("Resp", bound=msgspec.Struct)
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])

SAFE = True
UNSAFE = False


@dataclass(slots=True)
class Call(Generic[Resp]):
    """One round trip: the route, its encoded request, whether a replay is harmless, and
    the long-poll wait the HTTP timeout must exceed. Not frozen: a frozen dataclass pays
    an ``object.__setattr__`` per field on every call; nothing mutates one."""

    route: wire.Route[Any, Resp]
    body: bytes
    safe: bool
    wait_ms: int = 0


Steps = Generator[Call[Any], Any, R]


@dataclass(frozen=True, slots=True)
class Verb:
    """A declared remote verb: what the generator and the completeness tests read."""

    name: str
    fn: Callable[..., Steps[Any]]
    route: wire.Route[Any, Any]
    safe: bool
    binds: bool  # returns received messages: each client binds (or wraps) them
    embedded: bool  # the embedded facade forwards it to ``Engine.<name>`` as is

    @property
    def summary(self) -> str:
        return (self.fn.__doc__ or "").strip().split("\n\n")[0]


VERBS: dict[str, Verb] = {}
RETRY: dict[str, bool] = {}  # route name -> SAFE/UNSAFE, from the verbs that own them
# The same by Route object, filled by ``rpc`` on first use: ``Route.name`` is a formatted
# property, too dear to build on every call of a hot verb.
_SAFE_BY_ROUTE: dict[wire.Route[Any, Any], bool] = {}


def verb(
    route: wire.Route[Any, Any], retry: bool, *, binds: bool = False, embedded: bool = True
) -> Callable[[F], F]:
    """Register a verb whose primary route is ``route``, retried per ``retry``."""

    def register(fn: F) -> F:
        declared = RETRY.setdefault(route.name, retry)
        if declared is not retry:
            raise AssertionError(f"{route.name} is declared both SAFE and UNSAFE")
        VERBS[fn.__name__] = Verb(fn.__name__, fn, route, retry, binds, embedded)
        return fn

    return register


def rpc(route: wire.Route[Any, Resp], request: msgspec.Struct, wait_ms: int = 0) -> Steps[Resp]:
    """Yield one call of ``route`` and return its decoded response."""
    safe = _SAFE_BY_ROUTE.get(route)
    if safe is None:
        safe = _SAFE_BY_ROUTE[route] = RETRY[route.name]
    call: Call[Resp] = Call(route, wire.encode_request(route, request), safe, wait_ms)
    response: Resp = yield call
    return response


def decode(call: Call[Resp], body: bytes) -> Resp:
    """Decode a 200 answer to ``call``."""
    return wire.decode_response(call.route, body)


class SyncDriver(ABC):
    """What the generated ``HttpMethods`` need from the sync client."""

    @abstractmethod
    def _run(self, steps: Steps[R]) -> R:
        """Drive ``steps`` to its result, doing each call's round trip."""

    @abstractmethod
    def _bind(self, msgs: list[Message]) -> list[Message]:
        """Bind received messages' settle methods to this client."""


class AsyncDriver(ABC):
    """What the generated ``AsyncMethods`` need from the asyncio client."""

    @abstractmethod
    async def _run(self, steps: Steps[R]) -> R:
        """Drive ``steps`` to its result, awaiting each call's round trip."""

    @abstractmethod
    def _wrap(self, msgs: list[Message]) -> list[AsyncMessage]:
        """Wrap received messages so their settle methods are coroutines."""
