"""The asyncio client (``mqlite.aio``): the remote client's methods as coroutines.

```python
async with mqlite.aio.connect("http://127.0.0.1:6754", token) as mq:
    await mq.send_one("orders", mqlite.OutMessage(b"hi"))
    for m in await mq.receive("orders", wait_ms=5000):
        await m.complete()
```

Same arguments, return values and exception classes as ``mqlite.connect`` (the shared
``mqlite.sdk.calls`` builds every request), same retry rules. Differences: received
messages are ``AsyncMessage`` wrappers (awaitable settle methods, the ``Message`` in
``.message``); ``close()`` is a coroutine; one client belongs to one event loop.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Sequence
from typing import Any, TypeVar

from mqlite import errors, wire
from mqlite.sdk import calls
from mqlite.sdk.aio_message import AsyncMessage
from mqlite.sdk.aio_transport import AsyncPool
from mqlite.sdk.calls import Call
from mqlite.sdk.http import RemoteSettings, request_head
from mqlite.sdk.retry import RetryPolicy, refine, unavailable
from mqlite.sdk.transport import DEFAULT_TIMEOUT_S, POOL_SIZE, ConnectFailed, ExchangeFailed
from mqlite.types import (
    AccessKey,
    BatchResult,
    FilterTestResult,
    Message,
    OutMessage,
    QueueConfig,
    QueueInfo,
    Stats,
    Subscription,
)

__all__ = ["AsyncClient", "AsyncMessage", "connect"]

R = TypeVar("R")


class AsyncClient(RemoteSettings):
    """An asyncio client of one broker (see the module docstring)."""

    def __init__(
        self,
        endpoint: str,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        pool_size: int = POOL_SIZE,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        ep = self._setup(endpoint, token, timeout, retry)
        self._pool = AsyncPool(ep, maxsize=pool_size, ssl_context=ssl_context)
        self._closed = False

    def __repr__(self) -> str:
        return f"AsyncClient({self.endpoint.origin!r})"

    async def _do(self, call: Call[Any, R]) -> R:
        if self._closed:
            raise errors.Closed("the client is closed")
        path = self.endpoint.base_path + call.route.path
        head = request_head(path, self._header_lines, call.body)
        timeout = self.timeout + call.wait_ms / 1000.0
        policy = self.retry
        for attempt in range(policy.attempts):
            last = attempt == policy.attempts - 1
            try:
                status, body = await self._pool.request(head, call.body, timeout, self.timeout)
            except ConnectFailed as exc:
                if last:
                    raise unavailable(call.route.name, exc.__cause__ or exc, sent=False) from exc
            except ExchangeFailed as exc:
                if last or not call.safe:
                    raise unavailable(call.route.name, exc.__cause__ or exc, sent=True) from exc
            else:
                if status == 200:
                    return calls.decode(call, body)
                if status != 503 or last or not call.safe:
                    raise refine(wire.error_from_response(status, body))
            await asyncio.sleep(policy.backoff_s(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _wrap(self, msgs: list[Message]) -> list[AsyncMessage]:
        return [AsyncMessage(m, self if m.lock_token else None) for m in msgs]

    # -- queues and topics ----------------------------------------------------------------

    async def create_queue(self, name: str, config: QueueConfig | None = None) -> QueueInfo:
        await self._do(calls.create_queue(name, config))
        return calls.find_queue(await self.list_queues(), name)

    async def list_queues(self) -> list[QueueInfo]:
        return await self._do(calls.list_queues())

    async def get_queue(self, name: str) -> QueueInfo:
        return calls.find_queue(await self.list_queues(), name)

    async def delete_queue(self, name: str, generation: str | None = None) -> None:
        if generation is None:
            generation = (await self.get_queue(name)).generation
        await self._do(calls.delete_queue(name, generation))

    async def subscribe(self, topic: str, name: str, expr: str | None = "") -> QueueInfo:
        await self._do(calls.subscribe(topic, name, expr))
        return calls.find_queue(await self.list_queues(), name)

    async def unsubscribe(self, topic: str, name: str) -> None:
        await self._do(calls.unsubscribe(topic, name))

    async def list_subscriptions(self) -> list[Subscription]:
        return await self._do(calls.list_subscriptions())

    async def test_filter(
        self,
        expr: str,
        sample: OutMessage | None = None,
        enqueued_at_ms: int | None = None,
        visible_at_ms: int | None = None,
    ) -> FilterTestResult:
        return await self._do(calls.test_filter(expr, sample, enqueued_at_ms, visible_at_ms))

    # -- send and receive -----------------------------------------------------------------

    async def send(
        self, queue: str, messages: Sequence[OutMessage], ttl_ms: int | None = None
    ) -> list[int]:
        return await self._do(calls.send(queue, messages, ttl_ms))

    async def send_one(self, queue: str, message: OutMessage, ttl_ms: int | None = None) -> int:
        return (await self._do(calls.send_one(queue, message, ttl_ms)))[0]

    async def schedule(
        self,
        queue: str,
        messages: Sequence[OutMessage],
        at_ms: int,
        ttl_ms: int | None = None,
    ) -> list[int]:
        return await self._do(calls.schedule(queue, messages, at_ms, ttl_ms))

    async def cancel(self, queue: str, seq_number: int) -> None:
        await self._do(calls.cancel(queue, seq_number))

    async def receive(
        self,
        queue: str,
        max_messages: int = 1,
        wait_ms: int = 0,
        mode: str = "peek_lock",
        attempt_id: str | None = None,
    ) -> list[AsyncMessage]:
        call = calls.receive(queue, max_messages, wait_ms, mode, attempt_id)
        return self._wrap(await self._do(call))

    async def receive_deferred(self, queue: str, seq_numbers: Sequence[int]) -> list[AsyncMessage]:
        return self._wrap(await self._do(calls.receive_deferred(queue, seq_numbers)))

    # -- settlement -----------------------------------------------------------------------

    async def complete(self, queue: str, seq_number: int, lock_token: str) -> None:
        await self._do(calls.complete(queue, seq_number, lock_token))

    async def abandon(
        self, queue: str, seq_number: int, lock_token: str, delay_ms: int = 0
    ) -> None:
        await self._do(calls.abandon(queue, seq_number, lock_token, delay_ms))

    async def reject(
        self,
        queue: str,
        seq_number: int,
        lock_token: str,
        reason: str = "",
        description: str = "",
    ) -> None:
        await self._do(calls.reject(queue, seq_number, lock_token, reason, description))

    async def defer(self, queue: str, seq_number: int, lock_token: str) -> None:
        await self._do(calls.defer(queue, seq_number, lock_token))

    async def renew(self, queue: str, seq_number: int, lock_token: str) -> int:
        return await self._do(calls.renew(queue, seq_number, lock_token))

    async def complete_batch(
        self, queue: str, items: Sequence[tuple[int, str]]
    ) -> list[BatchResult]:
        return await self._do(calls.complete_batch(queue, items))

    async def renew_batch(self, queue: str, items: Sequence[tuple[int, str]]) -> list[BatchResult]:
        return await self._do(calls.renew_batch(queue, items))

    # -- browse, dead letters, status, keys -----------------------------------------------

    async def peek(
        self, queue: str, state: str | None = None, from_seq: int = 0, max: int = 0
    ) -> list[Message]:
        return await self._do(calls.peek(queue, state, from_seq, max))

    async def stats(self, queue: str) -> Stats:
        return await self._do(calls.stats(queue))

    async def redrive(
        self,
        queue: str,
        target: str | None = None,
        max: int = 0,
        older_than_ms: int = 0,
        rate_per_sec: int = 0,
    ) -> int:
        return await self._do(calls.redrive(queue, target, max, older_than_ms, rate_per_sec))

    async def purge(self, queue: str, max: int = 0, older_than_ms: int = 0) -> int:
        return await self._do(calls.purge(queue, max, older_than_ms))

    async def status(self) -> wire.StatusResponse:
        return await self._do(calls.status())

    async def create_key(
        self, id: str, name: str, permissions: Sequence[str], expires_at_ms: int = 0
    ) -> tuple[AccessKey, str]:
        return await self._do(calls.create_key(id, name, permissions, expires_at_ms))

    async def list_keys(
        self, after_id: str = "", limit: int = 100, sort: str = "id_asc"
    ) -> tuple[list[AccessKey], str]:
        return await self._do(calls.list_keys(after_id, limit, sort))

    async def revoke_key(self, id: str) -> None:
        await self._do(calls.revoke_key(id))

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
