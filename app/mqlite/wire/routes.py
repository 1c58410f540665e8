"""The route table: every RPC's path, permission, summary and request/response Structs.

Order is the discovery card's ``endpoints`` order (the original's registration order,
with the v0.3.3 DeleteQueue/Unsubscribe and the AuthService routes added after their
siblings). Each route is also a typed constant (``SEND: Route[SendRequest,
SendResponse]``) so the SDK gets precise types while the server dispatches by path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import msgspec

from mqlite.types import Permission

from . import requests as rq
from . import responses as rs

Req = TypeVar("Req", bound=msgspec.Struct)
Resp = TypeVar("Resp", bound=msgspec.Struct)

PATH_PREFIX = "/mqlite.v1."


@dataclass(frozen=True, eq=False)
class Route(Generic[Req, Resp]):
    """One RPC: ``POST /mqlite.v1.<service>/<method>``."""

    service: str
    method: str
    permission: Permission
    request: type[Req]
    response: type[Resp]
    summary: str

    @property
    def name(self) -> str:
        """``QueueService/Send``: the path minus ``/mqlite.v1.`` (log and metric label)."""
        return f"{self.service}/{self.method}"

    @property
    def path(self) -> str:
        return f"{PATH_PREFIX}{self.service}/{self.method}"

    @property
    def body_optional(self) -> bool:
        """Routes without request fields also accept an empty body (as ``{}``)."""
        return not self.request.__struct_fields__


_SEND, _LISTEN, _MANAGE = Permission.SEND, Permission.LISTEN, Permission.MANAGE
_Q, _A, _K = "QueueService", "AdminService", "AuthService"

SEND = Route(
    _Q, "Send", _SEND, rq.SendRequest, rs.SendResponse, "Enqueue messages in one transaction"
)
RECEIVE = Route(
    _Q,
    "Receive",
    _LISTEN,
    rq.ReceiveRequest,
    rs.ReceiveResponse,
    "Peek-lock or receive-and-delete; long-poll",
)
COMPLETE = Route(
    _Q, "Complete", _LISTEN, rq.SettleRequest, rs.SettleResponse, "Delete a locked message (done)"
)
COMPLETE_BATCH = Route(
    _Q,
    "CompleteBatch",
    _LISTEN,
    rq.CompleteBatchRequest,
    rs.CompleteBatchResponse,
    "Complete many",
)
RENEW_BATCH = Route(
    _Q,
    "RenewBatch",
    _LISTEN,
    rq.RenewBatchRequest,
    rs.RenewBatchResponse,
    "Renew up to 512 leases",
)
ABANDON = Route(
    _Q,
    "Abandon",
    _LISTEN,
    rq.SettleRequest,
    rs.SettleResponse,
    "Release a lock (optionally after delay_ms)",
)
REJECT = Route(
    _Q, "Reject", _LISTEN, rq.SettleRequest, rs.SettleResponse, "Dead-letter a locked message"
)
DEFER = Route(
    _Q, "Defer", _LISTEN, rq.SettleRequest, rs.SettleResponse, "Set a locked message aside"
)
RECEIVE_DEFERRED = Route(
    _Q,
    "ReceiveDeferred",
    _LISTEN,
    rq.ReceiveDeferredRequest,
    rs.ReceiveResponse,
    "Lock deferred messages",
)
RENEW = Route(
    _Q,
    "Renew",
    _LISTEN,
    rq.SettleRequest,
    rs.SettleResponse,
    "Extend a lock by the queue's lock duration",
)
SCHEDULE = Route(
    _Q, "Schedule", _SEND, rq.SendRequest, rs.SendResponse, "Enqueue for future delivery"
)
CANCEL = Route(
    _Q,
    "Cancel",
    _SEND,
    rq.CancelRequest,
    rs.SettleResponse,
    "Delete a not-yet-activated scheduled message",
)
PEEK = Route(_Q, "Peek", _LISTEN, rq.PeekRequest, rs.PeekResponse, "Browse without locking")
STATS = Route(
    _Q, "Stats", _LISTEN, rq.MetricsRequest, rs.MetricsResponse, "Message counts by state"
)
CREATE_QUEUE = Route(
    _A,
    "CreateQueue",
    _MANAGE,
    rq.CreateQueueRequest,
    rs.EmptyResponse,
    "Create or reconfigure a queue",
)
DELETE_QUEUE = Route(
    _A,
    "DeleteQueue",
    _MANAGE,
    rq.DeleteQueueRequest,
    rs.DeleteQueueResponse,
    "Delete an empty plain queue",
)
SUBSCRIBE = Route(
    _A,
    "Subscribe",
    _MANAGE,
    rq.SubscribeRequest,
    rs.EmptyResponse,
    "Create or update a subscription",
)
UNSUBSCRIBE = Route(
    _A, "Unsubscribe", _MANAGE, rq.UnsubscribeRequest, rs.EmptyResponse, "Remove a subscription"
)
LIST_QUEUES = Route(
    _A,
    "ListQueues",
    _MANAGE,
    rq.EmptyRequest,
    rs.ListQueuesResponse,
    "Every queue with its config",
)
LIST_SUBSCRIPTIONS = Route(
    _A,
    "ListSubscriptions",
    _MANAGE,
    rq.EmptyRequest,
    rs.ListSubscriptionsResponse,
    "Every subscription",
)
TEST_FILTER = Route(
    _A,
    "TestFilter",
    _MANAGE,
    rq.TestFilterRequest,
    rs.TestFilterResponse,
    "Dry-run a filter expression",
)
REDRIVE = Route(
    _A,
    "Redrive",
    _MANAGE,
    rq.RedriveRequest,
    rs.RedriveResponse,
    "Move dead letters back to active",
)
PURGE = Route(_A, "Purge", _MANAGE, rq.PurgeRequest, rs.PurgeResponse, "Delete dead letters")
STATUS = Route(
    _A,
    "Status",
    _MANAGE,
    rq.EmptyRequest,
    rs.StatusResponse,
    "Desensitized runtime snapshot",
)
CREATE_KEY = Route(
    _K,
    "CreateKey",
    _MANAGE,
    rq.CreateKeyRequest,
    rs.CreateKeyResponse,
    "Issue a managed access key",
)
LIST_KEYS = Route(
    _K,
    "ListKeys",
    _MANAGE,
    rq.ListKeysRequest,
    rs.ListKeysResponse,
    "Page through access key metadata",
)
REVOKE_KEY = Route(
    _K, "RevokeKey", _MANAGE, rq.RevokeKeyRequest, rs.SettleResponse, "Revoke an access key"
)

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
    CREATE_QUEUE,
    DELETE_QUEUE,
    SUBSCRIBE,
    UNSUBSCRIBE,
    LIST_QUEUES,
    LIST_SUBSCRIPTIONS,
    TEST_FILTER,
    REDRIVE,
    PURGE,
    STATUS,
    CREATE_KEY,
    LIST_KEYS,
    REVOKE_KEY,
)

ROUTES_BY_PATH: Mapping[str, Route[Any, Any]] = MappingProxyType({r.path: r for r in ROUTES})
