"""Response shapes: ``required`` = always emitted; the rest omitted while empty/zero."""

from __future__ import annotations

from typing import Any

from mqlite.types import (
    AccessKey,
    BatchResult,
    FilterTestResult,
    QueueConfig,
    QueueInfo,
    Stats,
    Subscription,
)

from .messages import PEEKED_MESSAGE, RECEIVED_MESSAGE
from .responses import (
    BatchResponse,
    CreateKeyResponse,
    DeleteQueueResponse,
    EmptyResponse,
    ListKeysResponse,
    ListQueuesResponse,
    ListSubscriptionsResponse,
    MessagesResponse,
    OkResponse,
    PurgeResponse,
    RedriveResponse,
    SendResponse,
    StatusResponse,
)
from .shape import Field, Obj, Shape
from .values import Bool, Int, List, Str

_S, _I, _B = Str(), Int(), Bool()


def _out(key: str, typ: Any, doc: str = "") -> Field:
    """An always-present response field."""
    return Field(key, typ, required=True, doc=doc)


def _opt(key: str, typ: Any, doc: str = "") -> Field:
    """A response field omitted while empty/zero."""
    return Field(key, typ, doc=doc)


SEND = Shape("SendResponse", (_out("seq_numbers", List(_I)),), SendResponse)
RECEIVE = Shape(
    "ReceiveResponse", (_out("messages", List(Obj(RECEIVED_MESSAGE))),), MessagesResponse
)
PEEK = Shape("PeekResponse", (_out("messages", List(Obj(PEEKED_MESSAGE))),), MessagesResponse)
OK = Shape("SettleResponse", (_out("ok", _B),), OkResponse)
BATCH_RESULT = Shape(
    "BatchResult",
    (
        _out("seq_number", _I),
        _out("ok", _B, "false: the lock was stale or expired (not fatal to the batch)"),
        _opt("locked_until_ms", _I, "RenewBatch: the committed lease deadline"),
    ),
    BatchResult,
)
COMPLETE_BATCH = Shape(
    "CompleteBatchResponse", (_out("results", List(Obj(BATCH_RESULT))),), BatchResponse
)
RENEW_BATCH = Shape(
    "RenewBatchResponse", (_out("results", List(Obj(BATCH_RESULT))),), BatchResponse
)
STATS = Shape(
    "MetricsResponse",
    tuple(
        _out(key, _S if key == "queue" else _I)
        for key in (
            "queue",
            "active",
            "locked",
            "deferred",
            "scheduled",
            "dead_lettered",
            "total",
            "oldest_message_age_ms",
        )
    ),
    Stats,
)
EMPTY = Shape("Empty", (), EmptyResponse)
DELETE_QUEUE = Shape("DeleteQueueResponse", (_out("deleted", _B),), DeleteQueueResponse)

_QUEUE_CONFIG_KEYS = ("kind", "lock_duration_ms", "max_delivery_count", "default_ttl_ms")
# Additive to the original's six ListQueues fields, so a remote list_queues() reports the
# whole config instead of defaults it cannot know.
_EXTRA_CONFIG_KEYS = ("ordering_mode", "dlq_max_age_ms", "dlq_max_count", "dlq_max_bytes")


def _build_queue_info(name: str, generation: str = "", **config: Any) -> QueueInfo:
    return QueueInfo(name, QueueConfig(**config), generation)


def _flatten_queue_info(q: QueueInfo) -> dict[str, Any]:
    c = q.config
    out: dict[str, Any] = {"name": q.name, "generation": q.generation}
    for key in (*_QUEUE_CONFIG_KEYS, "dedup_window_ms", *_EXTRA_CONFIG_KEYS):
        out[key] = getattr(c, key)
    out["dead_letter_on_expire"] = c.dead_letter_on_expire
    return out


QUEUE_INFO = Shape(
    "QueueInfo",
    (
        _out("name", _S),
        *(_out(key, _S if key == "kind" else _I) for key in _QUEUE_CONFIG_KEYS),
        _out("dedup_window_ms", _I),
        _opt("generation", _S, "opaque identity; pass it to DeleteQueue"),
        Field("ordering_mode", _S, default="standard", doc="omitted while standard"),
        # Omitted while true (the default), so an old broker's answer decodes correctly.
        Field("dead_letter_on_expire", _B, default=True),
        *(_opt(key, _I) for key in _EXTRA_CONFIG_KEYS[1:]),
    ),
    _build_queue_info,
    _flatten_queue_info,
)
LIST_QUEUES = Shape(
    "ListQueuesResponse", (_out("queues", List(Obj(QUEUE_INFO))),), ListQueuesResponse
)
SUBSCRIPTION = Shape(
    "Subscription",
    (_out("topic", _S), _out("name", _S), _opt("expr", _S, "empty = match all")),
    Subscription,
)
LIST_SUBSCRIPTIONS = Shape(
    "ListSubscriptionsResponse",
    (_out("subscriptions", List(Obj(SUBSCRIPTION))),),
    ListSubscriptionsResponse,
)
TEST_FILTER = Shape(
    "TestFilterResponse",
    (
        _out("valid", _B, "the expression compiled"),
        _opt("error", _S, "the compile or evaluation error"),
        _out("ran", _B, "a sample was evaluated"),
        _out("matched", _B, "the sample would be routed"),
    ),
    FilterTestResult,
)
REDRIVE = Shape("RedriveResponse", (_out("moved", _I),), RedriveResponse)
PURGE = Shape("PurgeResponse", (_out("purged", _I),), PurgeResponse)
STATUS = Shape(
    "StatusResponse",
    (
        _out("version", _S),
        _out("backend", _S, "memory | local file | remote libSQL/Turso"),
        _out("remote", _B),
        _out("location", _S, "local path or masked remote host"),
        _out("schema_version", _S),
        _out("ping_ms", _I, "SELECT 1 round trip; -1 if it failed"),
        _out("db_size_bytes", _I, "db + WAL + shm on disk; 0 for memory/remote"),
        _out("queues", _I, "plain queues"),
        _out("subscriptions", _I),
        _out("uptime_ms", _I),
        _out("auth", _B),
    ),
    StatusResponse,
)
ACCESS_KEY = Shape(
    "AccessKey",
    (
        _out("id", _S),
        _out("name", _S),
        _out("permissions", List(Str(enum=("send", "listen", "manage")))),
        _out("created_at_ms", _I),
        _opt("expires_at_ms", _I, "0/absent = never"),
        _opt("revoked_at_ms", _I, "0/absent = not revoked"),
    ),
    AccessKey,
)
CREATE_KEY = Shape(
    "CreateKeyResponse",
    (_out("key", Obj(ACCESS_KEY)), _out("token", _S, "the secret; shown once")),
    CreateKeyResponse,
)
LIST_KEYS = Shape(
    "ListKeysResponse",
    (_out("keys", List(Obj(ACCESS_KEY))), _opt("next_after_id", _S, "absent on the last page")),
    ListKeysResponse,
)
REVOKE_KEY = Shape("RevokeKeyResponse", (_out("ok", _B),), OkResponse)
