"""The route table: every RPC's path, permission, request shape and response shape.

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

from mqlite.types import FilterTestResult, Permission, Stats

from . import request_shapes as rq
from . import response_shapes as rs
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
    SettleRequest,
    StatsRequest,
    SubscribeRequest,
    TestFilterRequest,
    UnsubscribeRequest,
)
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
from .shape import Shape

Req = TypeVar("Req")
Resp = TypeVar("Resp")

PATH_PREFIX = "/mqlite.v1."


@dataclass(frozen=True, eq=False)
class Route(Generic[Req, Resp]):
    """One RPC: ``POST /mqlite.v1.<service>/<method>``."""

    service: str
    method: str
    permission: Permission
    request: Shape[Req]
    response: Shape[Resp]
    summary: str = ""

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
        return not self.request.fields


_SEND, _LISTEN, _MANAGE = Permission.SEND, Permission.LISTEN, Permission.MANAGE
_Q, _A, _K = "QueueService", "AdminService", "AuthService"

SEND: Route[SendRequest, SendResponse] = Route(
    _Q, "Send", _SEND, rq.SEND, rs.SEND, "Enqueue messages in one transaction"
)
RECEIVE: Route[ReceiveRequest, MessagesResponse] = Route(
    _Q, "Receive", _LISTEN, rq.RECEIVE, rs.RECEIVE, "Peek-lock or receive-and-delete; long-poll"
)
COMPLETE: Route[SettleRequest, OkResponse] = Route(
    _Q, "Complete", _LISTEN, rq.SETTLE, rs.OK, "Delete a locked message (done)"
)
COMPLETE_BATCH: Route[BatchSettleRequest, BatchResponse] = Route(
    _Q, "CompleteBatch", _LISTEN, rq.COMPLETE_BATCH, rs.COMPLETE_BATCH, "Complete many"
)
RENEW_BATCH: Route[BatchSettleRequest, BatchResponse] = Route(
    _Q, "RenewBatch", _LISTEN, rq.RENEW_BATCH, rs.RENEW_BATCH, "Renew up to 512 leases"
)
ABANDON: Route[SettleRequest, OkResponse] = Route(
    _Q, "Abandon", _LISTEN, rq.SETTLE, rs.OK, "Release a lock (optionally after delay_ms)"
)
REJECT: Route[SettleRequest, OkResponse] = Route(
    _Q, "Reject", _LISTEN, rq.SETTLE, rs.OK, "Dead-letter a locked message"
)
DEFER: Route[SettleRequest, OkResponse] = Route(
    _Q, "Defer", _LISTEN, rq.SETTLE, rs.OK, "Set a locked message aside"
)
RECEIVE_DEFERRED: Route[ReceiveDeferredRequest, MessagesResponse] = Route(
    _Q, "ReceiveDeferred", _LISTEN, rq.RECEIVE_DEFERRED, rs.RECEIVE, "Lock deferred messages"
)
RENEW: Route[SettleRequest, OkResponse] = Route(
    _Q, "Renew", _LISTEN, rq.SETTLE, rs.OK, "Extend a lock by the queue's lock duration"
)
SCHEDULE: Route[SendRequest, SendResponse] = Route(
    _Q, "Schedule", _SEND, rq.SEND, rs.SEND, "Enqueue for future delivery"
)
CANCEL: Route[CancelRequest, OkResponse] = Route(
    _Q, "Cancel", _SEND, rq.CANCEL, rs.OK, "Delete a not-yet-activated scheduled message"
)
PEEK: Route[PeekRequest, MessagesResponse] = Route(
    _Q, "Peek", _LISTEN, rq.PEEK, rs.PEEK, "Browse without locking"
)
STATS: Route[StatsRequest, Stats] = Route(
    _Q, "Stats", _LISTEN, rq.STATS, rs.STATS, "Message counts by state"
)
CREATE_QUEUE: Route[CreateQueueRequest, EmptyResponse] = Route(
    _A, "CreateQueue", _MANAGE, rq.CREATE_QUEUE, rs.EMPTY, "Create or reconfigure a queue"
)
DELETE_QUEUE: Route[DeleteQueueRequest, DeleteQueueResponse] = Route(
    _A, "DeleteQueue", _MANAGE, rq.DELETE_QUEUE, rs.DELETE_QUEUE, "Delete an empty plain queue"
)
SUBSCRIBE: Route[SubscribeRequest, EmptyResponse] = Route(
    _A, "Subscribe", _MANAGE, rq.SUBSCRIBE, rs.EMPTY, "Create or update a subscription"
)
UNSUBSCRIBE: Route[UnsubscribeRequest, EmptyResponse] = Route(
    _A, "Unsubscribe", _MANAGE, rq.UNSUBSCRIBE, rs.EMPTY, "Remove a subscription"
)
LIST_QUEUES: Route[EmptyRequest, ListQueuesResponse] = Route(
    _A, "ListQueues", _MANAGE, rq.EMPTY, rs.LIST_QUEUES, "Every queue with its config"
)
LIST_SUBSCRIPTIONS: Route[EmptyRequest, ListSubscriptionsResponse] = Route(
    _A, "ListSubscriptions", _MANAGE, rq.EMPTY, rs.LIST_SUBSCRIPTIONS, "Every subscription"
)
TEST_FILTER: Route[TestFilterRequest, FilterTestResult] = Route(
    _A, "TestFilter", _MANAGE, rq.TEST_FILTER, rs.TEST_FILTER, "Dry-run a filter expression"
)
REDRIVE: Route[RedriveRequest, RedriveResponse] = Route(
    _A, "Redrive", _MANAGE, rq.REDRIVE, rs.REDRIVE, "Move dead letters back to active"
)
PURGE: Route[PurgeRequest, PurgeResponse] = Route(
    _A, "Purge", _MANAGE, rq.PURGE, rs.PURGE, "Delete dead letters"
)
STATUS: Route[EmptyRequest, StatusResponse] = Route(
    _A, "Status", _MANAGE, rq.EMPTY, rs.STATUS, "Desensitized runtime snapshot"
)
CREATE_KEY: Route[CreateKeyRequest, CreateKeyResponse] = Route(
    _K, "CreateKey", _MANAGE, rq.CREATE_KEY, rs.CREATE_KEY, "Issue a managed access key"
)
LIST_KEYS: Route[ListKeysRequest, ListKeysResponse] = Route(
    _K, "ListKeys", _MANAGE, rq.LIST_KEYS, rs.LIST_KEYS, "Page through access key metadata"
)
REVOKE_KEY: Route[RevokeKeyRequest, OkResponse] = Route(
    _K, "RevokeKey", _MANAGE, rq.REVOKE_KEY, rs.REVOKE_KEY, "Revoke an access key"
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

# Compile every decoder now: no first-request cost and no lazy-init race between threads.
for _route in ROUTES:
    _route.request.decoder(False)
    _route.response.decoder(True)
del _route
