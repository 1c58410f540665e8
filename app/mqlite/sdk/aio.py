"""The asyncio client (``mqlite.aio``): the remote client's methods as coroutines.

```python
async with mqlite.aio.connect("http://127.0.0.1:6754", token) as mq:
    await mq.send_one("orders", mqlite.OutMessage(b"hi"))
    for m in await mq.receive("orders", wait_ms=5000):
        await m.complete()
```

Same arguments, return values and exception classes as ``mqlite.connect`` (both clients'
methods are generated from the one call table, ``mqlite.sdk.calls``), same retry rules.
Differences: received messages are ``AsyncMessage`` wrappers (awaitable settle methods,
the ``Message`` in ``.message``); ``close()`` is a coroutine; one client belongs to one
event loop.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any, TypeVar

from mqlite import errors, wire
from mqlite.sdk.aio_message import AsyncMessage
from mqlite.sdk.aio_methods import AsyncMethods
from mqlite.sdk.aio_transport import MAX_BODY_BYTES, AsyncPool
from mqlite.sdk.call import Call, Steps
from mqlite.sdk.http import RemoteSettings
from mqlite.sdk.retry import Attempts, GiveUp, RetryPolicy
from mqlite.sdk.transport import DEFAULT_TIMEOUT_S, POOL_SIZE, ConnectFailed, ExchangeFailed
from mqlite.types import Message

__all__ = ["AsyncClient", "AsyncMessage", "connect"]

R = TypeVar("R")


class AsyncClient(RemoteSettings, AsyncMethods):
    """An asyncio client of one broker (see the module docstring).

    ``max_response_bytes`` bounds one answer's body (the transport refuses more, as it
    refuses an oversized head); raise it for Peeks of many large messages."""

    def __init__(
        self,
        endpoint: str,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        pool_size: int = POOL_SIZE,
        ssl_context: ssl.SSLContext | None = None,
        max_response_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        ep = self._setup(endpoint, token, timeout, retry)
        self._pool = AsyncPool(
            ep, maxsize=pool_size, ssl_context=ssl_context, max_body_bytes=max_response_bytes
        )
        self._closed = False

    def __repr__(self) -> str:
        return f"AsyncClient({self.endpoint.origin!r})"

    async def _run(self, steps: Steps[R]) -> R:
        """Drive a verb of the call table: each call it yields is one round trip."""
        try:
            call = next(steps)
            while True:
                call = steps.send(await self._do(call))
        except StopIteration as done:
            result: R = done.value
            return result

    async def _do(self, call: Call[Any]) -> Any:
        """One round trip of ``call``, repeated as ``retry.Attempts`` decides (the same
        state machine as the sync client's; only the sleep differs)."""
        if self._closed:
            raise errors.Closed("the client is closed")
        data = self._heads.request(call.route, call.body)
        timeout = self.timeout + call.wait_ms / 1000.0 if call.wait_ms else self.timeout
        attempts: Attempts | None = None
        while True:
            try:
                status, body = await self._pool.request(data, timeout, self.timeout)
            except (ConnectFailed, ExchangeFailed) as exc:
                attempts = attempts or Attempts(self.retry, call.route.name, call.safe)
                cause = exc.__cause__ or exc
                decision = attempts.failed(cause, sent=isinstance(exc, ExchangeFailed))
                if isinstance(decision, GiveUp):
                    raise decision.error from exc
            else:
                if status == 200:
                    return wire.decode_response(call.route, body)
                attempts = attempts or Attempts(self.retry, call.route.name, call.safe)
                decision = attempts.answered(status, body)
                if isinstance(decision, GiveUp):
                    raise decision.error
            await asyncio.sleep(decision.wait_s)

    def _wrap(self, msgs: list[Message]) -> list[AsyncMessage]:
        return [AsyncMessage(m, self if m.lock_token else None) for m in msgs]

    # -- lifecycle ------------------------------------------------------------------------

    async def close(self) -> None:
        self._closed = True
        await self._pool.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def connect(endpoint: str, token: str | None = None, **options: Any) -> AsyncClient:
    """An asyncio client of the broker at ``endpoint`` (same URLs and options as
    ``mqlite.connect``). Nothing is sent until the first call."""
    return AsyncClient(endpoint, token, **options)
