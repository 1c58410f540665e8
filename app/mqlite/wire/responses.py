"""Every response object the broker answers (lenient to decode: unknown fields ignored).

A field without a default is always emitted (counts even when 0, lists as ``[]``); a
field with one is omitted while equal to it, and the OpenAPI schema marks exactly the
always-emitted ones required. ``of`` builds the wire object from the engine's value,
``value`` gives the ``mqlite.types`` value back on the SDK side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import msgspec

from mqlite import types as t

from .base import I64, Doc, Response, Snapshot, canonical, from_attributes
from .messages import PeekedMessage, ReceivedMessage

_STANDARD = t.OrderingMode.STANDARD.value


class SendResponse(Snapshot):
    """One seq per input message, positional (0 = a dedup conflict in a batch)."""

    seq_numbers: tuple[I64, ...] = ()


class ReceiveResponse(Snapshot):
    """Receive / ReceiveDeferred: the claimed messages (peek-lock: each with a lock token)."""

    messages: tuple[ReceivedMessage, ...] = ()

    @classmethod
    def of(cls, msgs: Sequence[t.Message]) -> ReceiveResponse:
        return cls(tuple([ReceivedMessage.of(m) for m in msgs]))

    def values(self, queue: str) -> list[t.Message]:
        return [m.value(queue) for m in self.messages]


class PeekResponse(Snapshot):
    """Browsed messages with their state, never a lock token."""

    messages: tuple[PeekedMessage, ...] = ()

    @classmethod
    def of(cls, msgs: Sequence[t.Message]) -> PeekResponse:
        return cls(tuple([PeekedMessage.of(m) for m in msgs]))

    def values(self, queue: str) -> list[t.Message]:
        return [m.value(queue) for m in self.messages]


class SettleResponse(Snapshot):
    """``{"ok": true}``: the operation took effect (or replayed a committed one)."""

    ok: bool = True


class BatchResult(Response):
    """One item of CompleteBatch (no ``locked_until_ms``) or RenewBatch."""

    seq_number: I64
    ok: Annotated[bool, Doc("false: the lock was stale or expired (not fatal to the batch)")]
    locked_until_ms: Annotated[I64, Doc("RenewBatch: the committed lease deadline")] = 0

    def value(self) -> t.BatchResult:
        return t.BatchResult(self.seq_number, self.ok, self.locked_until_ms)


batch_result_of = from_attributes(BatchResult)


class CompleteBatchResponse(Snapshot):
    """Per-item outcomes, in request order."""

    results: tuple[BatchResult, ...] = ()

    @classmethod
    def of(cls, results: Sequence[t.BatchResult]) -> CompleteBatchResponse:
        return cls(tuple([batch_result_of(r) for r in results]))

    def values(self) -> list[t.BatchResult]:
        return [r.value() for r in self.results]


class RenewBatchResponse(Snapshot):
    """Per-item outcomes with the committed deadlines, in request order."""

    results: tuple[BatchResult, ...] = ()

    @classmethod
    def of(cls, results: Sequence[t.BatchResult]) -> RenewBatchResponse:
        return cls(tuple([batch_result_of(r) for r in results]))

    def values(self) -> list[t.BatchResult]:
        return [r.value() for r in self.results]


class MetricsResponse(Snapshot):
    """Message counts by state (Stats)."""

    queue: str = ""
    active: I64 = 0
    locked: I64 = 0
    deferred: I64 = 0
    scheduled: I64 = 0
    dead_lettered: I64 = 0
    total: I64 = 0
    oldest_message_age_ms: Annotated[
        I64, Doc("age of the oldest active or locked message; 0 when there is none")
    ] = 0

    @classmethod
    def of(cls, stats: t.Stats) -> MetricsResponse:
        return _metrics_of(stats)

    def value(self) -> t.Stats:
        return t.Stats(**msgspec.structs.asdict(self))


_metrics_of = from_attributes(MetricsResponse)


class EmptyResponse(Snapshot):
    """``{}``."""


class DeleteQueueResponse(Snapshot):
    """``{"deleted": true}``."""

    deleted: bool = True


class QueueInfoJSON(Response):
    """A queue as ListQueues reports it: its whole config and generation."""

    name: str
    kind: str
    lock_duration_ms: I64
    max_delivery_count: I64
    default_ttl_ms: I64
    dedup_window_ms: I64
    generation: Annotated[str, Doc("opaque identity; pass it to DeleteQueue")] = ""
    # Additive to the original's six fields, so a remote list_queues() reports the whole
    # config; omitted at the default, so an old broker's answer decodes correctly.
    ordering_mode: Annotated[str, Doc("omitted while standard")] = _STANDARD
    dead_letter_on_expire: Annotated[bool, Doc("omitted while true")] = True
    dlq_max_age_ms: I64 = 0
    dlq_max_count: I64 = 0
    dlq_max_bytes: I64 = 0

    @classmethod
    def of(cls, q: t.QueueInfo) -> QueueInfoJSON:
        c = q.config
        return cls(
            q.name,
            c.kind,
            c.lock_duration_ms,
            c.max_delivery_count,
            c.default_ttl_ms,
            c.dedup_window_ms,
            q.generation,
            canonical(c.ordering_mode, _STANDARD),
            c.dead_letter_on_expire,
            c.dlq_max_age_ms,
            c.dlq_max_count,
            c.dlq_max_bytes,
        )

    def value(self) -> t.QueueInfo:
        config = t.QueueConfig(
            lock_duration_ms=self.lock_duration_ms,
            max_delivery_count=self.max_delivery_count,
            default_ttl_ms=self.default_ttl_ms,
            dead_letter_on_expire=self.dead_letter_on_expire,
            dedup_window_ms=self.dedup_window_ms,
            ordering_mode=self.ordering_mode,
            dlq_max_age_ms=self.dlq_max_age_ms,
            dlq_max_count=self.dlq_max_count,
            dlq_max_bytes=self.dlq_max_bytes,
            kind=self.kind,
        )
        return t.QueueInfo(self.name, config, self.generation)


class ListQueuesResponse(Snapshot):
    """Every queue with its config."""

    queues: tuple[QueueInfoJSON, ...] = ()

    @classmethod
    def of(cls, queues: Sequence[t.QueueInfo]) -> ListQueuesResponse:
        return cls(tuple([QueueInfoJSON.of(q) for q in queues]))

    def values(self) -> list[t.QueueInfo]:
        return [q.value() for q in self.queues]


class SubscriptionJSON(Response):
    """A subscription with its topic and filter expression."""

    topic: str
    name: str
    expr: Annotated[str, Doc("empty = match all")] = ""

    def value(self) -> t.Subscription:
        return t.Subscription(self.topic, self.name, self.expr)


subscription_of = from_attributes(SubscriptionJSON)


class ListSubscriptionsResponse(Snapshot):
    """Every subscription, ordered by topic then name."""

    subscriptions: tuple[SubscriptionJSON, ...] = ()

    @classmethod
    def of(cls, subs: Sequence[t.Subscription]) -> ListSubscriptionsResponse:
        return cls(tuple([subscription_of(s) for s in subs]))

    def values(self) -> list[t.Subscription]:
        return [s.value() for s in self.subscriptions]


class TestFilterResponse(Response, kw_only=True):
    """What a filter expression did: compiled, and (given a sample) matched."""

    __test__ = False  # not a pytest class

    valid: Annotated[bool, Doc("the expression compiled")]
    error: Annotated[str, Doc("the compile or evaluation error")] = ""
    ran: Annotated[bool, Doc("a sample was evaluated")]
    matched: Annotated[bool, Doc("the sample would be routed")]

    @classmethod
    def of(cls, r: t.FilterTestResult) -> TestFilterResponse:
        return cls(valid=r.valid, error=r.error, ran=r.ran, matched=r.matched)

    def value(self) -> t.FilterTestResult:
        return t.FilterTestResult(self.valid, self.error, self.ran, self.matched)


class RedriveResponse(Snapshot):
    """How many dead letters moved."""

    moved: I64 = 0


class PurgeResponse(Snapshot):
    """How many dead letters were deleted."""

    purged: I64 = 0


class StatusResponse(Snapshot):
    """A desensitized runtime snapshot (never a DSN or a token)."""

    version: str = ""
    backend: Annotated[str, Doc("memory | local file | remote libSQL/Turso")] = ""
    remote: bool = False
    location: Annotated[str, Doc("local path or masked remote host")] = ""
    schema_version: str = ""
    ping_ms: Annotated[I64, Doc("SELECT 1 round trip; -1 if it failed")] = 0
    db_size_bytes: Annotated[I64, Doc("db + WAL + shm on disk; 0 for memory/remote")] = 0
    queues: Annotated[I64, Doc("plain queues")] = 0
    subscriptions: I64 = 0
    uptime_ms: I64 = 0
    auth: bool = False


class AccessKeyJSON(Response):
    """A managed access key's metadata: never the token, never its digest."""

    id: str
    name: str
    permissions: tuple[str, ...]
    created_at_ms: I64
    expires_at_ms: Annotated[I64, Doc("0/absent = never")] = 0
    revoked_at_ms: Annotated[I64, Doc("0/absent = not revoked")] = 0

    def value(self) -> t.AccessKey:
        return t.AccessKey(
            self.id,
            self.name,
            self.permissions,
            self.created_at_ms,
            self.expires_at_ms,
            self.revoked_at_ms,
        )


access_key_of = from_attributes(AccessKeyJSON)


class CreateKeyResponse(Response):
    """The key's metadata and its secret, returned exactly once."""

    key: AccessKeyJSON
    token: Annotated[str, Doc("the secret; shown once")]

    @classmethod
    def of(cls, key: t.AccessKey, token: str) -> CreateKeyResponse:
        return cls(access_key_of(key), token)


class ListKeysResponse(Response):
    """A page of key metadata; ``next_after_id`` absent on the last page."""

    keys: tuple[AccessKeyJSON, ...]
    next_after_id: Annotated[str, Doc("absent on the last page")] = ""

    @classmethod
    def of(cls, keys: Sequence[t.AccessKey], next_after_id: str) -> ListKeysResponse:
        return cls(tuple([access_key_of(k) for k in keys]), next_after_id)

    def values(self) -> tuple[list[t.AccessKey], str]:
        return [k.value() for k in self.keys], self.next_after_id
