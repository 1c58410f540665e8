"""What the server uses of the engine, and nothing more: the ``Broker`` Protocol.

The server is handed the engine as a ``Broker`` (``Runtime(engine)``; mypy checks there
that the engine satisfies it), so a handler can reach the verbs of the parts it calls --
the catalog (``queue_ops.py``), messaging, browse and dead letters (``admin.py``), access
keys, cron, the observation -- plus the transport side of the writer and the notifier
(submit a call, park a long poll), but never the store, the writer or the notifier
themselves, nor the maintenance passes (the scheduler's part). A verb the server starts
to use is added here first; import-linter keeps the engine's plumbing modules out of the
server (pyproject: "The server and the scheduler reach the engine through its parts").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import ParamSpec, Protocol, TypeVar

from mqlite.engine import Location, dlq
from mqlite.engine import observation as o
from mqlite.engine.admin import StatusSnapshot
from mqlite.engine.audit import Actor
from mqlite.types import (
    AccessKey,
    AuditEntry,
    BatchResult,
    FilterTestResult,
    Message,
    OutMessage,
    PushTarget,
    QueueConfig,
    QueueEnsured,
    QueueInfo,
    Schedule,
    Stats,
    Subscription,
)

P = ParamSpec("P")
T = TypeVar("T")


class Parked(Protocol):
    """A long poll parked on a queue (``Broker.park``)."""

    def cancel(self) -> bool:
        """Unpark; False when a wake was already delivered to it."""
        ...


class Broker(Protocol):
    # -- the transport side: the writer, the notifier, the clock (core.py) ------------------

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> asyncio.Future[T]: ...
    def park(self, queue: str, wake: Callable[[], None]) -> Parked: ...
    def wake_one(self, queue: str) -> None: ...
    def release_polls(self) -> None: ...
    def now_ms(self) -> int: ...
    @property
    def location(self) -> Location: ...

    # -- messaging (sending.py, messaging.py) ---------------------------------------------

    def send(
        self, queue: str, messages: Sequence[OutMessage], ttl_ms: int | None = ...
    ) -> list[int]: ...
    def schedule(
        self, queue: str, messages: Sequence[OutMessage], at_ms: int, ttl_ms: int | None = ...
    ) -> list[int]: ...
    def cancel(self, queue: str, seq_number: int) -> None: ...
    def receive_args(
        self, queue: str, max_messages: int, wait_ms: int, mode: str, attempt_id: str | None
    ) -> tuple[str, int, int, bool]: ...
    def try_receive(
        self, queue: str, max_messages: int, *, delete: bool = ..., attempt_id: str | None = ...
    ) -> list[Message]: ...
    def receive_deferred(self, queue: str, seq_numbers: Sequence[int]) -> list[Message]: ...
    def complete(self, queue: str, seq_number: int, lock_token: str) -> None: ...
    def defer(self, queue: str, seq_number: int, lock_token: str) -> None: ...
    def renew(self, queue: str, seq_number: int, lock_token: str) -> int: ...
    def abandon(
        self, queue: str, seq_number: int, lock_token: str, delay_ms: int = ..., error: str = ...
    ) -> None: ...
    def reject(
        self,
        queue: str,
        seq_number: int,
        lock_token: str,
        reason: str = ...,
        description: str = ...,
    ) -> None: ...
    def complete_batch(self, queue: str, items: Sequence[tuple[int, str]]) -> list[BatchResult]: ...
    def renew_batch(self, queue: str, items: Sequence[tuple[int, str]]) -> list[BatchResult]: ...

    # -- the catalog: queues and topics (queue_ops.py) ------------------------------------

    def create_queue(
        self, name: str, config: QueueConfig | None = ..., *, actor: Actor | None = ...
    ) -> QueueInfo: ...
    def ensure_queue(
        self,
        name: str,
        config: QueueConfig | None = ...,
        strict: bool = ...,
        *,
        actor: Actor | None = ...,
    ) -> QueueEnsured: ...
    def delete_queue(
        self, name: str, generation: str | None = ..., *, actor: Actor | None = ...
    ) -> None: ...
    def list_queues(self) -> list[QueueInfo]: ...
    def topic_of(self, name: str) -> str | None: ...
    def has_filters(self, name: str) -> bool: ...
    def subscribe(
        self, topic: str, name: str, expr: str | None = ..., *, actor: Actor | None = ...
    ) -> QueueInfo: ...
    def unsubscribe(self, topic: str, name: str, *, actor: Actor | None = ...) -> None: ...
    def list_subscriptions(self) -> list[Subscription]: ...
    def test_filter(
        self,
        expr: str,
        sample: OutMessage | None = ...,
        enqueued_at_ms: int | None = ...,
        visible_at_ms: int | None = ...,
    ) -> FilterTestResult: ...

    # -- browse, dead letters, status (admin.py) ------------------------------------------

    def peek(
        self, queue: str, state: str | None = ..., from_seq: int = ..., max: int = ...
    ) -> list[Message]: ...
    def stats(self, queue: str) -> Stats: ...
    def redrive_chunk(
        self,
        queue: str,
        target: str | None,
        chunk: int,
        older_than_ms: int,
        walk: dlq.Walk | None = ...,
        seq_numbers: Sequence[int] = ...,
        *,
        actor: Actor | None = ...,
    ) -> tuple[int, dlq.Walk]: ...
    def purge_chunk(
        self,
        queue: str,
        chunk: int,
        older_than_ms: int,
        walk: dlq.Walk | None = ...,
        seq_numbers: Sequence[int] = ...,
        *,
        actor: Actor | None = ...,
    ) -> tuple[int, dlq.Walk]: ...
    def status(self) -> StatusSnapshot: ...

    # -- access keys (keys.py), cron (schedules.py), the observation (observe.py) ---------

    def create_key(
        self,
        id: str,
        name: str,
        permissions: Sequence[str],
        expires_at_ms: int = ...,
        queues: Sequence[str] = ...,
        rate_limit_per_s: int = ...,
        burst: int = ...,
        *,
        actor: Actor | None = ...,
    ) -> tuple[AccessKey, str]: ...
    def list_keys(
        self, after_id: str = ..., limit: int = ..., sort: str = ...
    ) -> tuple[list[AccessKey], str]: ...
    def revoke_key(self, id: str, *, actor: Actor | None = ...) -> None: ...
    def authenticate_key(self, token: str) -> AccessKey | None: ...
    def key_refusal(self, token: str) -> str: ...
    def create_schedule(
        self,
        name: str,
        cron: str,
        queue: str,
        message: OutMessage,
        timezone: str = ...,
        catch_up: str = ...,
        paused: bool = ...,
        *,
        actor: Actor | None = ...,
    ) -> Schedule: ...
    def delete_schedule(
        self,
        name: str,
        *,
        actor: Actor | None = ...,
        allow: Callable[[str], bool] | None = ...,
    ) -> bool: ...
    def list_schedules(self) -> list[Schedule]: ...
    def observe(self, on_sample: Callable[[], None] | None = ...) -> o.Observation: ...
    def list_audit(
        self, after_id: int = ..., limit: int = ..., queue: str = ..., since_ms: int = ...
    ) -> list[AuditEntry]: ...
    def create_push(
        self,
        queue: str,
        url: str,
        secret: str = ...,
        max_in_flight: int = ...,
        timeout_ms: int = ...,
        paused: bool = ...,
        *,
        actor: Actor | None = ...,
    ) -> PushTarget: ...
    def delete_push(self, queue: str, *, actor: Actor | None = ...) -> bool: ...
    def list_pushes(self) -> list[PushTarget]: ...
