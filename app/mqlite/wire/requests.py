"""Every request object the broker accepts (strict: unknown fields are refused).

A field without a default is required. Defaults are the wire's zero values ("absent" and
``0``/``""`` mean the same thing), except ``QueueConfigJSON``, whose absent fields take
the ``types.QueueConfig`` defaults (explicit zeros still mean "take the default" to the
engine). Nested optional objects are ``UNSET`` while absent, so a JSON ``null`` there is
refused like any other non-object.
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, UnsetType, field

from mqlite import types as t

from .base import I64, Doc, Request, canonical
from .messages import MessageJSON, SampleMessage, out_messages

_QC = t.QueueConfig()

QueueName = Annotated[str, Doc("queue (or subscription backing queue) name")]
SeqNumber = Annotated[I64, Doc("the message's seq_number, from Receive or Peek")]
LockToken = Annotated[str, Doc("the lock token from the peek-lock Receive")]
PermissionName = Literal["send", "listen", "manage"]


class SendRequest(Request):
    """Send and Schedule: messages enqueued in one transaction."""

    queue: QueueName
    messages: Annotated[tuple[MessageJSON, ...], Doc("the messages, in order")]
    scheduled_enqueue_time_ms: Annotated[
        I64, Doc("epoch ms; > 0 schedules (must be in the future)")
    ] = 0
    ttl_ms: Annotated[I64, Doc("time-to-live for every message; 0 = the queue default")] = 0

    def out_messages(self) -> tuple[t.OutMessage, ...]:
        return out_messages(self.messages)


class ReceiveRequest(Request):
    """``max_messages`` 0 means 1; ``receive_mode`` 0 = peek-lock, 1 = receive-and-delete."""

    queue: QueueName
    max_messages: Annotated[I64, Doc("default 1, at most 256")] = 0
    wait_time_ms: Annotated[I64, Doc("long-poll, at most 20000")] = 0
    receive_mode: Annotated[Literal[0, 1], Doc("0 peek-lock, 1 receive-and-delete")] = 0
    receive_attempt_id: Annotated[str, Doc("idempotency key: a retry replays the same batch")] = ""

    @property
    def mode(self) -> t.ReceiveMode:
        return t.ReceiveMode.RECEIVE_AND_DELETE if self.receive_mode else t.ReceiveMode.PEEK_LOCK


class SettleRequest(Request):
    """Complete / Abandon / Reject / Defer / Renew (each reads the extras it needs)."""

    queue: QueueName
    seq_number: SeqNumber
    lock_token: LockToken
    dead_letter_reason: Annotated[str, Doc("Reject only")] = ""
    dead_letter_description: Annotated[str, Doc("Reject only")] = ""
    delay_ms: Annotated[I64, Doc("Abandon only: redeliver after this delay")] = 0


class SettleItem(Request):
    """A held lock."""

    seq_number: SeqNumber
    lock_token: LockToken


class CompleteBatchRequest(Request):
    """Complete many held locks in one round trip (each item fenced like Complete)."""

    queue: QueueName
    messages: Annotated[tuple[SettleItem, ...], Doc("the pairs to complete")]


class RenewBatchRequest(Request):
    """Renew up to 512 held locks in one statement."""

    queue: QueueName
    messages: Annotated[tuple[SettleItem, ...], Doc("the pairs to renew (at most 512)")]


class ReceiveDeferredRequest(Request):
    """Lock deferred messages by seq_number."""

    queue: QueueName
    seq_numbers: Annotated[tuple[I64, ...], Doc("seq_numbers of deferred messages")]


class CancelRequest(Request):
    """Delete a not-yet-activated scheduled message."""

    queue: QueueName
    seq_number: SeqNumber


class PeekRequest(Request):
    """``state`` "" = every state; ``max`` 0 = the default (32)."""

    queue: QueueName
    from_seq: Annotated[I64, Doc("start at this seq_number")] = 0
    state: Annotated[
        Literal["", "active", "locked", "deferred", "scheduled", "dead_lettered"],
        Doc("only messages in this state; empty = all"),
    ] = ""
    max: Annotated[I64, Doc("default 32, at most 1000")] = 0


class MetricsRequest(Request):
    """Stats: message counts by state."""

    queue: QueueName


class QueueConfigJSON(Request):
    """Queue configuration; every field optional (omitted = default)."""

    kind: Annotated[
        Literal["", "queue", "subscription"], Doc("subscription = a topic's backing queue")
    ] = t.QueueKind.QUEUE.value
    lock_duration_ms: Annotated[I64, Doc("0 = 30000")] = _QC.lock_duration_ms
    max_delivery_count: Annotated[I64, Doc("0 = 10")] = _QC.max_delivery_count
    default_ttl_ms: Annotated[I64, Doc("0 = unlimited")] = 0
    dead_letter_on_expire: Annotated[bool, Doc("default true")] = True
    dedup_window_ms: Annotated[I64, Doc("0 = off")] = 0
    ordering_mode: Annotated[
        Literal["", "standard", "group_fifo", "strict_fifo"],
        Doc("standard: per-group FIFO; group_fifo: group_id required; strict_fifo: one line"),
    ] = t.OrderingMode.STANDARD.value
    dlq_max_age_ms: Annotated[I64, Doc("0 = inherit, -1 = unbounded")] = 0
    dlq_max_count: Annotated[I64, Doc("0 = inherit, -1 = unbounded")] = 0
    dlq_max_bytes: Annotated[I64, Doc("0 = inherit, -1 = unbounded")] = 0

    @classmethod
    def of(cls, c: t.QueueConfig) -> QueueConfigJSON:
        d = _DEFAULT_CONFIG
        return cls(
            canonical(c.kind, d.kind),  # type: ignore[arg-type]  # the broker validates it
            canonical(c.lock_duration_ms, d.lock_duration_ms),
            canonical(c.max_delivery_count, d.max_delivery_count),
            c.default_ttl_ms,
            c.dead_letter_on_expire,
            c.dedup_window_ms,
            canonical(c.ordering_mode, d.ordering_mode),  # type: ignore[arg-type]
            c.dlq_max_age_ms,
            c.dlq_max_count,
            c.dlq_max_bytes,
        )

    def value(self) -> t.QueueConfig:
        return t.QueueConfig(
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


_DEFAULT_CONFIG = QueueConfigJSON()


class CreateQueueRequest(Request):
    """Create, or reconfigure (same kind only), a queue."""

    name: Annotated[str, Doc("the queue name")]
    config: Annotated[QueueConfigJSON | UnsetType, Doc("absent = every default")] = UNSET

    @property
    def queue_config(self) -> t.QueueConfig | None:
        return None if isinstance(self.config, UnsetType) else self.config.value()


class DeleteQueueRequest(Request):
    """Delete an empty plain queue, fenced on its generation."""

    name: Annotated[str, Doc("the queue name")]
    generation: Annotated[str, Doc("from ListQueues")]


class SubscriptionFilter(Request):
    """A subscription's filter; an empty or absent expression matches every message."""

    expr: Annotated[str, Doc("filter expression; empty = match all")] = ""


class SubscribeRequest(Request):
    """Create or update subscription ``name`` on ``topic``."""

    topic: Annotated[str, Doc("the topic name")]
    name: Annotated[str, Doc("the subscription name")]
    filter: Annotated[SubscriptionFilter | UnsetType, Doc("absent = match all")] = UNSET

    @property
    def expr(self) -> str:
        return "" if isinstance(self.filter, UnsetType) else self.filter.expr


class UnsubscribeRequest(Request):
    """Remove a subscription (and its empty backing queue)."""

    topic: Annotated[str, Doc("the topic name")]
    name: Annotated[str, Doc("the subscription name")]


class EmptyRequest(Request):
    """ListQueues / ListSubscriptions / Status take ``{}`` (an empty body is accepted too)."""


class TestFilterRequest(Request):
    """Dry-run a filter expression; ``message`` absent = compile only."""

    __test__ = False  # not a pytest class

    expr: Annotated[str, Doc("the filter expression")]
    sample: Annotated[SampleMessage | UnsetType, Doc("sample to evaluate")] = field(
        default=UNSET, name="message"
    )

    @property
    def message(self) -> t.OutMessage | None:
        return None if isinstance(self.sample, UnsetType) else self.sample.out()

    @property
    def enqueued_at_ms(self) -> int:
        return 0 if isinstance(self.sample, UnsetType) else self.sample.enqueued_at_ms

    @property
    def visible_at_ms(self) -> int:
        return 0 if isinstance(self.sample, UnsetType) else self.sample.visible_at_ms


class RedriveRequest(Request):
    """``target`` "" = back to this queue's active state; zero bounds = all."""

    queue: QueueName
    target: Annotated[str, Doc("move into this queue instead")] = ""
    max: Annotated[I64, Doc("at most this many; 0 = all")] = 0
    older_than_ms: Annotated[I64, Doc("only dead letters older than this; 0 = all")] = 0
    rate_per_sec: Annotated[I64, Doc("pace: this many per second; 0 = at once")] = 0


class PurgeRequest(Request):
    """Delete dead letters; both bounds zero purges the whole DLQ."""

    queue: QueueName
    max: Annotated[I64, Doc("at most this many; 0 = all")] = 0
    older_than_ms: Annotated[I64, Doc("only dead letters older than this; 0 = all")] = 0


class CreateKeyRequest(Request):
    """Issue a managed access key under a caller-retained id."""

    id: Annotated[str, Doc("32 lowercase hex characters, generated and retained by the caller")]
    name: Annotated[str, Doc("a label, up to 128 bytes")]
    permissions: Annotated[tuple[PermissionName, ...], Doc("send, listen and/or manage")]
    expires_at_ms: Annotated[I64, Doc("epoch ms; 0 = never")] = 0


class ListKeysRequest(Request):
    """``limit`` 0 = 100; ``sort`` "" = ``id_asc``."""

    after_id: Annotated[str, Doc("the previous page's next_after_id")] = ""
    limit: Annotated[I64, Doc("default 100, at most 1000")] = 0
    sort: Annotated[Literal["", "id_asc", "created_desc"], Doc("default id_asc")] = ""


class RevokeKeyRequest(Request):
    """Revoke an access key (revoking again succeeds)."""

    id: Annotated[str, Doc("the key's public id")]
