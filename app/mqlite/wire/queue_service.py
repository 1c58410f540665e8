"""QueueService: send, receive, settle, browse. Each RPC is one block below: its request
Struct, its response Struct and its ``Route`` (field order = JSON key order, ``Doc`` per
field; see ``base`` for the rules). ``ROUTES`` lists them in discovery order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec

from mqlite import types as t

from .base import I64, Doc, Request, Response, Route, Snapshot, from_attributes
from .messages import MessageJSON, PeekedMessage, ReceivedMessage, out_messages

_S, _L, _Q = t.Permission.SEND, t.Permission.LISTEN, "QueueService"

QueueName = Annotated[str, Doc("queue (or subscription backing queue) name")]
SeqNumber = Annotated[I64, Doc("the message's seq_number, from Receive or Peek")]
LockToken = Annotated[str, Doc("the lock token from the peek-lock Receive")]


# -- Send / Schedule ---------------------------------------------------------------------


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


class SendResponse(Snapshot):
    """One seq per input message, positional (0 = a dedup conflict in a batch)."""

    seq_numbers: tuple[I64, ...] = ()


SEND = Route(_Q, "Send", _S, SendRequest, SendResponse, "Enqueue messages in one transaction")

SCHEDULE = Route(_Q, "Schedule", _S, SendRequest, SendResponse, "Enqueue for future delivery")


# -- Receive / ReceiveDeferred -----------------------------------------------------------


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


class ReceiveResponse(Snapshot):
    """Receive / ReceiveDeferred: the claimed messages (peek-lock: each with a lock token)."""

    messages: tuple[ReceivedMessage, ...] = ()

    @classmethod
    def of(cls, msgs: Sequence[t.Message]) -> ReceiveResponse:
        return cls(tuple([ReceivedMessage.of(m) for m in msgs]))

    def values(self, queue: str) -> list[t.Message]:
        return [m.value(queue) for m in self.messages]


RECEIVE = Route(
    _Q, "Receive", _L, ReceiveRequest, ReceiveResponse, "Peek-lock or receive-and-delete; long-poll"
)


class ReceiveDeferredRequest(Request):
    """Lock deferred messages by seq_number."""

    queue: QueueName
    seq_numbers: Annotated[tuple[I64, ...], Doc("seq_numbers of deferred messages")]


RECEIVE_DEFERRED = Route(
    _Q, "ReceiveDeferred", _L, ReceiveDeferredRequest, ReceiveResponse, "Lock deferred messages"
)


# -- Complete / Abandon / Reject / Defer / Renew / Cancel --------------------------------


class SettleRequest(Request):
    """Complete / Abandon / Reject / Defer / Renew (each reads the extras it needs)."""

    queue: QueueName
    seq_number: SeqNumber
    lock_token: LockToken
    dead_letter_reason: Annotated[
        str, Doc("Reject only: why it was dead-lettered, short (shown by Peek)")
    ] = ""
    dead_letter_description: Annotated[
        str, Doc("Reject only: the details, for whoever inspects the dead letter")
    ] = ""
    delay_ms: Annotated[
        I64,
        Doc(
            "Abandon only: ms before it can be received again; > 0 wins over the queue's "
            "retry policy, 0 leaves the delay to it"
        ),
    ] = 0
    error: Annotated[
        str,
        Doc(
            "Abandon only: why it failed, at most 4096 bytes of UTF-8; kept as the "
            "message's last_error (and in its dead-letter description at the limit)"
        ),
    ] = ""


class SettleResponse(Snapshot):
    """``{"ok": true}``: the operation took effect (or replayed a committed one)."""

    ok: bool = True


COMPLETE = Route(
    _Q, "Complete", _L, SettleRequest, SettleResponse, "Delete a locked message (done)"
)

ABANDON = Route(
    _Q, "Abandon", _L, SettleRequest, SettleResponse, "Release a lock (optionally after delay_ms)"
)

REJECT = Route(_Q, "Reject", _L, SettleRequest, SettleResponse, "Dead-letter a locked message")

DEFER = Route(_Q, "Defer", _L, SettleRequest, SettleResponse, "Set a locked message aside")

RENEW = Route(
    _Q, "Renew", _L, SettleRequest, SettleResponse, "Extend a lock by the queue's lock duration"
)


class CancelRequest(Request):
    """Delete a not-yet-activated scheduled message."""

    queue: QueueName
    seq_number: SeqNumber


CANCEL = Route(
    _Q, "Cancel", _S, CancelRequest, SettleResponse, "Delete a not-yet-activated scheduled message"
)


# -- CompleteBatch / RenewBatch ----------------------------------------------------------


class SettleItem(Request):
    """A held lock."""

    seq_number: SeqNumber
    lock_token: LockToken


class BatchResult(Response):
    """One item of CompleteBatch (no ``locked_until_ms``) or RenewBatch."""

    seq_number: I64
    ok: Annotated[bool, Doc("false: the lock was stale or expired (not fatal to the batch)")]
    locked_until_ms: Annotated[I64, Doc("RenewBatch: the committed lease deadline")] = 0

    def value(self) -> t.BatchResult:
        return t.BatchResult(self.seq_number, self.ok, self.locked_until_ms)


batch_result_of = from_attributes(BatchResult)


class CompleteBatchRequest(Request):
    """Complete many held locks in one round trip (each item fenced like Complete)."""

    queue: QueueName
    messages: Annotated[tuple[SettleItem, ...], Doc("the pairs to complete")]


class CompleteBatchResponse(Snapshot):
    """Per-item outcomes, in request order."""

    results: tuple[BatchResult, ...] = ()

    @classmethod
    def of(cls, results: Sequence[t.BatchResult]) -> CompleteBatchResponse:
        return cls(tuple([batch_result_of(r) for r in results]))

    def values(self) -> list[t.BatchResult]:
        return [r.value() for r in self.results]


COMPLETE_BATCH = Route(
    _Q, "CompleteBatch", _L, CompleteBatchRequest, CompleteBatchResponse, "Complete many"
)


class RenewBatchRequest(Request):
    """Renew up to 512 held locks in one statement."""

    queue: QueueName
    messages: Annotated[tuple[SettleItem, ...], Doc("the pairs to renew (at most 512)")]


class RenewBatchResponse(Snapshot):
    """Per-item outcomes with the committed deadlines, in request order."""

    results: tuple[BatchResult, ...] = ()

    @classmethod
    def of(cls, results: Sequence[t.BatchResult]) -> RenewBatchResponse:
        return cls(tuple([batch_result_of(r) for r in results]))

    def values(self) -> list[t.BatchResult]:
        return [r.value() for r in self.results]


RENEW_BATCH = Route(
    _Q, "RenewBatch", _L, RenewBatchRequest, RenewBatchResponse, "Renew up to 512 leases"
)


# -- Peek / Stats ------------------------------------------------------------------------


class PeekRequest(Request):
    """``state`` "" = every state; ``max`` 0 = the default (32)."""

    queue: QueueName
    from_seq: Annotated[I64, Doc("start at this seq_number")] = 0
    state: Annotated[
        Literal["", "active", "locked", "deferred", "scheduled", "dead_lettered"],
        Doc("only messages in this state; empty = all"),
    ] = ""
    max: Annotated[I64, Doc("default 32, at most 1000")] = 0


class PeekResponse(Snapshot):
    """Browsed messages with their state, never a lock token."""

    messages: tuple[PeekedMessage, ...] = ()

    @classmethod
    def of(cls, msgs: Sequence[t.Message]) -> PeekResponse:
        return cls(tuple([PeekedMessage.of(m) for m in msgs]))

    def values(self, queue: str) -> list[t.Message]:
        return [m.value(queue) for m in self.messages]


PEEK = Route(_Q, "Peek", _L, PeekRequest, PeekResponse, "Browse without locking")


class MetricsRequest(Request):
    """Stats: message counts by state."""

    queue: QueueName


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

STATS = Route(_Q, "Stats", _L, MetricsRequest, MetricsResponse, "Message counts by state")


ROUTES: tuple[Route[Any, Any], ...] = (
    SEND,
    RECEIVE,
    COMPLETE,
    COMPLETE_BATCH,
    RENEW_BATCH,
    ABANDON,
    REJECT,
    DEFER,
    RECEIVE_DEFERRED,
    RENEW,
    SCHEDULE,
    CANCEL,
    PEEK,
    STATS,
)

__all__ = [
    "ABANDON",
    "CANCEL",
    "COMPLETE",
    "COMPLETE_BATCH",
    "DEFER",
    "PEEK",
    "RECEIVE",
    "RECEIVE_DEFERRED",
    "REJECT",
    "RENEW",
    "RENEW_BATCH",
    "SCHEDULE",
    "SEND",
    "STATS",
    "BatchResult",
    "CancelRequest",
    "CompleteBatchRequest",
    "CompleteBatchResponse",
    "MetricsRequest",
    "MetricsResponse",
    "PeekRequest",
    "PeekResponse",
    "ReceiveDeferredRequest",
    "ReceiveRequest",
    "ReceiveResponse",
    "RenewBatchRequest",
    "RenewBatchResponse",
    "SendRequest",
    "SendResponse",
    "SettleItem",
    "SettleRequest",
    "SettleResponse",
]
