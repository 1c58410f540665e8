"""The one method set of an mqlite client, embedded (``mqlite.open_embedded``) or remote
(``mqlite.connect``): same names, arguments, return types and exception classes.

Write code against ``mqlite.sdk.protocol.Client`` and it runs on either. Embedded-only
extras (``tx()``, ``run_maintenance_once()``, …) are deliberately not part of it; the
asyncio client (``mqlite.aio``) has these methods as coroutines.

Known, documented differences (the wire carries less than the process):

- ``list_queues()`` over HTTP reports the whole config and the generation, but
  ``created_at_ms``/``updated_at_ms`` are 0 (the wire does not carry them).
- ``status()`` is the same ``StatusResponse``; ``auth`` is False and ``version`` is the
  library's in embedded mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, Self, runtime_checkable

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
from mqlite.wire import StatusResponse


@runtime_checkable
class Client(Protocol):
    """An mqlite client. Thread-safe in both implementations."""

    # -- queues ---------------------------------------------------------------------------
    def create_queue(self, name: str, config: QueueConfig | None = None) -> QueueInfo: ...

    def list_queues(self) -> list[QueueInfo]: ...

    def get_queue(self, name: str) -> QueueInfo: ...

    def delete_queue(self, name: str, generation: str | None = None) -> None: ...

    # -- topics ---------------------------------------------------------------------------
    def subscribe(self, topic: str, name: str, expr: str | None = "") -> QueueInfo: ...

    def unsubscribe(self, topic: str, name: str) -> None: ...

    def list_subscriptions(self) -> list[Subscription]: ...

    def test_filter(
        self,
        expr: str,
        sample: OutMessage | None = None,
        enqueued_at_ms: int | None = None,
        visible_at_ms: int | None = None,
    ) -> FilterTestResult: ...

    # -- send -----------------------------------------------------------------------------
    def send(
        self, queue: str, messages: Sequence[OutMessage], ttl_ms: int | None = None
    ) -> list[int]: ...

    def send_one(self, queue: str, message: OutMessage, ttl_ms: int | None = None) -> int: ...

    def schedule(
        self,
        queue: str,
        messages: Sequence[OutMessage],
        at_ms: int,
        ttl_ms: int | None = None,
    ) -> list[int]: ...

    def cancel(self, queue: str, seq_number: int) -> None: ...

    # -- receive --------------------------------------------------------------------------
    def receive(
        self,
        queue: str,
        max_messages: int = 1,
        wait_ms: int = 0,
        mode: str = "peek_lock",
        attempt_id: str | None = None,
    ) -> list[Message]: ...

    def receive_deferred(self, queue: str, seq_numbers: Sequence[int]) -> list[Message]: ...

    # -- settlement -----------------------------------------------------------------------
    def complete(self, queue: str, seq_number: int, lock_token: str) -> None: ...

    def abandon(self, queue: str, seq_number: int, lock_token: str, delay_ms: int = 0) -> None: ...

    def reject(
        self,
        queue: str,
        seq_number: int,
        lock_token: str,
        reason: str = "",
        description: str = "",
    ) -> None: ...

    def defer(self, queue: str, seq_number: int, lock_token: str) -> None: ...

    def renew(self, queue: str, seq_number: int, lock_token: str) -> int: ...

    def complete_batch(self, queue: str, items: Sequence[tuple[int, str]]) -> list[BatchResult]: ...

    def renew_batch(self, queue: str, items: Sequence[tuple[int, str]]) -> list[BatchResult]: ...

    # -- browse, dead letters, status -----------------------------------------------------
    def peek(
        self, queue: str, state: str | None = None, from_seq: int = 0, max: int = 0
    ) -> list[Message]: ...

    def stats(self, queue: str) -> Stats: ...

    def redrive(
        self,
        queue: str,
        target: str | None = None,
        max: int = 0,
        older_than_ms: int = 0,
        rate_per_sec: int = 0,
    ) -> int: ...

    def purge(self, queue: str, max: int = 0, older_than_ms: int = 0) -> int: ...

    def status(self) -> StatusResponse: ...

    # -- access keys ----------------------------------------------------------------------
    def create_key(
        self, id: str, name: str, permissions: Sequence[str], expires_at_ms: int = 0
    ) -> tuple[AccessKey, str]: ...

    def list_keys(
        self, after_id: str = "", limit: int = 100, sort: str = "id_asc"
    ) -> tuple[list[AccessKey], str]: ...

    def revoke_key(self, id: str) -> None: ...

    # -- lifecycle ------------------------------------------------------------------------
    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...
