"""Request shapes: the JSON declaration of every request value (see ``shape``)."""

from __future__ import annotations

from typing import Any

from mqlite.types import QueueConfig

from .messages import MESSAGE_IN, SAMPLE_MESSAGE, SampleMessage
from .requests import (
    BatchSettleRequest,
    CancelRequest,
    CreateKeyRequest,
    CreateQueueRequest,
    DeleteQueueRequest,
    EmptyRequest,
    ListKeysRequest,
    PeekRequest,
    PurgeRequest,
    ReceiveDeferredRequest,
    ReceiveRequest,
    RedriveRequest,
    RevokeKeyRequest,
    SendRequest,
    SettleItem,
    SettleRequest,
    StatsRequest,
    SubscribeRequest,
    TestFilterRequest,
    UnsubscribeRequest,
)
from .shape import Field, Obj, Shape
from .values import Bool, Int, List, Str

_S, _I = Str(), Int()


def _req(key: str, typ: Any, doc: str = "") -> Field:
    return Field(key, typ, required=True, doc=doc)


def _opt(key: str, typ: Any, doc: str = "", **kw: Any) -> Field:
    return Field(key, typ, doc=doc, **kw)


_QUEUE = _req("queue", _S, "queue (or subscription backing queue) name")

SEND = Shape(
    "SendRequest",
    (
        _QUEUE,
        _req("messages", List(Obj(MESSAGE_IN))),
        _opt("scheduled_enqueue_time_ms", _I, "epoch ms; > 0 schedules (must be in the future)"),
        _opt("ttl_ms", _I, "time-to-live for every message; 0 = the queue default"),
    ),
    SendRequest,
)
RECEIVE = Shape(
    "ReceiveRequest",
    (
        _QUEUE,
        _opt("max_messages", _I, "default 1, at most 256"),
        _opt("wait_time_ms", _I, "long-poll, at most 20000"),
        _opt("receive_mode", Int(enum=(0, 1)), "0 peek-lock, 1 receive-and-delete"),
        _opt("receive_attempt_id", _S, "idempotency key: a retry replays the same batch"),
    ),
    ReceiveRequest,
)
SETTLE = Shape(
    "SettleRequest",
    (
        _QUEUE,
        _req("seq_number", _I),
        _req("lock_token", _S),
        _opt("dead_letter_reason", _S, "Reject only"),
        _opt("dead_letter_description", _S, "Reject only"),
        _opt("delay_ms", _I, "Abandon only: redeliver after this delay"),
    ),
    SettleRequest,
)
SETTLE_ITEM = Shape(
    "SettleItem", (_req("seq_number", _I), _req("lock_token", _S)), SettleItem, doc="A held lock."
)


def _batch(name: str, doc: str) -> Shape[BatchSettleRequest]:
    fields = (_QUEUE, _req("messages", List(Obj(SETTLE_ITEM)), doc))
    return Shape(name, fields, BatchSettleRequest)


COMPLETE_BATCH = _batch("CompleteBatchRequest", "the pairs to complete")
RENEW_BATCH = _batch("RenewBatchRequest", "the pairs to renew (at most 512)")
RECEIVE_DEFERRED = Shape(
    "ReceiveDeferredRequest",
    (_QUEUE, _req("seq_numbers", List(_I))),
    ReceiveDeferredRequest,
)
CANCEL = Shape("CancelRequest", (_QUEUE, _req("seq_number", _I)), CancelRequest)
PEEK = Shape(
    "PeekRequest",
    (
        _QUEUE,
        _opt("from_seq", _I, "start at this seq_number"),
        _opt(
            "state",
            Str(enum=("", "active", "locked", "deferred", "scheduled", "dead_lettered")),
            "only messages in this state; empty = all",
        ),
        _opt("max", _I, "default 32, at most 1000"),
    ),
    PeekRequest,
)
STATS = Shape("MetricsRequest", (_QUEUE,), StatsRequest)

_QC = QueueConfig()
QUEUE_CONFIG = Shape(
    "QueueConfig",
    (
        _opt("kind", Str(enum=("", "queue", "subscription")), "", default=_QC.kind),
        _opt("lock_duration_ms", _I, "0 = 30000", default=_QC.lock_duration_ms),
        _opt("max_delivery_count", _I, "0 = 10", default=_QC.max_delivery_count),
        _opt("default_ttl_ms", _I, "0 = unlimited"),
        _opt("dead_letter_on_expire", Bool(), "default true", default=True),
        _opt("dedup_window_ms", _I, "0 = off"),
        _opt(
            "ordering_mode",
            Str(enum=("", "standard", "group_fifo", "strict_fifo")),
            "",
            default=_QC.ordering_mode,
        ),
        _opt("dlq_max_age_ms", _I, "0 = inherit, -1 = unbounded"),
        _opt("dlq_max_count", _I, "0 = inherit, -1 = unbounded"),
        _opt("dlq_max_bytes", _I, "0 = inherit, -1 = unbounded"),
    ),
    QueueConfig,
    doc="Queue configuration; every field optional (omitted = default).",
)
CREATE_QUEUE = Shape(
    "CreateQueueRequest",
    (_req("name", _S), _opt("config", Obj(QUEUE_CONFIG), default=None)),
    CreateQueueRequest,
)
DELETE_QUEUE = Shape(
    "DeleteQueueRequest",
    (_req("name", _S), _req("generation", _S, "from ListQueues")),
    DeleteQueueRequest,
)
FILTER = Shape(
    "SubscriptionFilter",
    (_opt("expr", _S, "filter expression; empty = match all"),),
    lambda expr="": expr,
    lambda expr: {"expr": expr},
)


def _build_subscribe(topic: str, name: str, filter: str = "") -> SubscribeRequest:
    return SubscribeRequest(topic, name, filter)


SUBSCRIBE = Shape(
    "SubscribeRequest",
    (_req("topic", _S), _req("name", _S), _opt("filter", Obj(FILTER), default="")),
    _build_subscribe,
    lambda r: {"topic": r.topic, "name": r.name, "filter": r.expr},
)
UNSUBSCRIBE = Shape("UnsubscribeRequest", (_req("topic", _S), _req("name", _S)), UnsubscribeRequest)
EMPTY = Shape("EmptyRequest", (), EmptyRequest)


def _build_test_filter(expr: str, message: SampleMessage | None = None) -> TestFilterRequest:
    if message is None:
        return TestFilterRequest(expr)
    return TestFilterRequest(expr, message.message, message.enqueued_at_ms, message.visible_at_ms)


def _flatten_test_filter(r: TestFilterRequest) -> dict[str, Any]:
    sample = None
    if r.message is not None:
        sample = SampleMessage(r.message, r.enqueued_at_ms, r.visible_at_ms)
    return {"expr": r.expr, "message": sample}


TEST_FILTER = Shape(
    "TestFilterRequest",
    (_req("expr", _S), _opt("message", Obj(SAMPLE_MESSAGE), "sample to evaluate", default=None)),
    _build_test_filter,
    _flatten_test_filter,
)
REDRIVE = Shape(
    "RedriveRequest",
    (
        _QUEUE,
        _opt("target", _S, "move into this queue instead"),
        _opt("max", _I),
        _opt("older_than_ms", _I),
        _opt("rate_per_sec", _I),
    ),
    RedriveRequest,
)
PURGE = Shape("PurgeRequest", (_QUEUE, _opt("max", _I), _opt("older_than_ms", _I)), PurgeRequest)
CREATE_KEY = Shape(
    "CreateKeyRequest",
    (
        _req("id", _S, "32 lowercase hex characters, generated and retained by the caller"),
        _req("name", _S),
        _req("permissions", List(Str(enum=("send", "listen", "manage")))),
        _opt("expires_at_ms", _I, "epoch ms; 0 = never"),
    ),
    CreateKeyRequest,
)
LIST_KEYS = Shape(
    "ListKeysRequest",
    (
        _opt("after_id", _S, "the previous page's next_after_id"),
        _opt("limit", _I, "default 100, at most 1000"),
        _opt("sort", Str(enum=("", "id_asc", "created_desc")), "default id_asc"),
    ),
    ListKeysRequest,
)
REVOKE_KEY = Shape("RevokeKeyRequest", (_req("id", _S),), RevokeKeyRequest)
