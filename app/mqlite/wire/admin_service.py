"""AdminService: queues, topics, filters, dead letters, status. Each RPC is one block
below: its request Struct, its response Struct and its ``Route``. ``ROUTES`` lists them
in discovery order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from msgspec import UNSET, UnsetType, field

from mqlite import defaults
from mqlite import types as t

from .base import I64, Doc, Request, Response, Route, Snapshot, from_attributes
from .messages import SampleMessage
from .queue_info import QueueConfigJSON, QueueInfoJSON
from .queue_service import QueueName

_M, _A = t.Permission.MANAGE, "AdminService"


# -- CreateQueue / DeleteQueue -----------------------------------------------------------


class CreateQueueRequest(Request):
    """Create, or reconfigure (same kind only), a queue."""

    name: Annotated[str, Doc("the queue name")]
    config: Annotated[QueueConfigJSON | UnsetType, Doc("absent = every default")] = UNSET

    @property
    def queue_config(self) -> t.QueueConfig | None:
        return None if isinstance(self.config, UnsetType) else self.config.value()


class EmptyResponse(Snapshot):
    """``{}``."""


CREATE_QUEUE = Route(
    _A, "CreateQueue", _M, CreateQueueRequest, EmptyResponse, "Create or reconfigure a queue"
)


# -- EnsureQueue --------------------------------------------------------------------------


class EnsureQueueRequest(Request):
    """Create a queue if the name is free; never change an existing one."""

    name: Annotated[str, Doc("the queue name")]
    config: Annotated[QueueConfigJSON | UnsetType, Doc("absent = every default")] = UNSET
    strict: Annotated[
        bool, Doc("true = refuse (409 queue_config_differs) when the existing config differs")
    ] = False

    @property
    def queue_config(self) -> t.QueueConfig | None:
        return None if isinstance(self.config, UnsetType) else self.config.value()


class EnsureQueueResponse(Snapshot):
    """The queue as it now is, whether this call created it, and the config fields in
    which an existing queue differs from the config asked for (it was left as it is)."""

    created: bool
    queue: QueueInfoJSON
    differs: tuple[str, ...] = ()

    @classmethod
    def of(cls, r: t.QueueEnsured) -> EnsureQueueResponse:
        return cls(r.created, QueueInfoJSON.of(r.queue), tuple(r.differs))

    def value(self) -> t.QueueEnsured:
        return t.QueueEnsured(self.queue.value(), self.created, tuple(self.differs))


ENSURE_QUEUE = Route(
    _A,
    "EnsureQueue",
    _M,
    EnsureQueueRequest,
    EnsureQueueResponse,
    "Create a queue unless it exists (an existing one is left as it is)",
)


class DeleteQueueRequest(Request):
    """Delete an empty plain queue, fenced on its generation."""

    name: Annotated[str, Doc("the queue name")]
    generation: Annotated[str, Doc("the queue's current generation, from ListQueues")]


class DeleteQueueResponse(Snapshot):
    """``{"deleted": true}``."""

    deleted: bool = True


DELETE_QUEUE = Route(
    _A, "DeleteQueue", _M, DeleteQueueRequest, DeleteQueueResponse, "Delete an empty plain queue"
)


# -- Subscribe / Unsubscribe -------------------------------------------------------------


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


SUBSCRIBE = Route(
    _A, "Subscribe", _M, SubscribeRequest, EmptyResponse, "Create or update a subscription"
)


class UnsubscribeRequest(Request):
    """Remove a subscription (and its empty backing queue)."""

    topic: Annotated[str, Doc("the topic name")]
    name: Annotated[str, Doc("the subscription name")]


UNSUBSCRIBE = Route(
    _A, "Unsubscribe", _M, UnsubscribeRequest, EmptyResponse, "Remove a subscription"
)


# -- ListQueues / ListSubscriptions ------------------------------------------------------


class EmptyRequest(Request):
    """ListQueues / ListSubscriptions / Status take ``{}`` (an empty body is accepted too)."""


class ListQueuesResponse(Snapshot):
    """Every queue with its config."""

    queues: tuple[QueueInfoJSON, ...] = ()

    @classmethod
    def of(cls, queues: Sequence[t.QueueInfo]) -> ListQueuesResponse:
        return cls(tuple([QueueInfoJSON.of(q) for q in queues]))

    def values(self) -> list[t.QueueInfo]:
        return [q.value() for q in self.queues]


LIST_QUEUES = Route(
    _A, "ListQueues", _M, EmptyRequest, ListQueuesResponse, "Every queue with its config"
)


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


LIST_SUBSCRIPTIONS = Route(
    _A, "ListSubscriptions", _M, EmptyRequest, ListSubscriptionsResponse, "Every subscription"
)


# -- TestFilter --------------------------------------------------------------------------


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


TEST_FILTER = Route(
    _A, "TestFilter", _M, TestFilterRequest, TestFilterResponse, "Dry-run a filter expression"
)


# -- Redrive / Purge ---------------------------------------------------------------------


_SELECTION = (
    f"only these dead letters (at most {defaults.MAX_DLQ_SELECTION}; others are skipped); "
    "empty = by the bounds"
)


class RedriveRequest(Request):
    """``target`` "" = back to this queue's active state; zero bounds = all."""

    queue: QueueName
    target: Annotated[str, Doc("move into this queue instead")] = ""
    max: Annotated[I64, Doc("at most this many; 0 = all")] = 0
    older_than_ms: Annotated[I64, Doc("only dead letters older than this; 0 = all")] = 0
    rate_per_sec: Annotated[I64, Doc("pace: this many per second; 0 = at once")] = 0
    seq_numbers: Annotated[tuple[I64, ...], Doc(_SELECTION)] = ()


class RedriveResponse(Snapshot):
    """How many dead letters moved."""

    moved: I64 = 0


REDRIVE = Route(
    _A, "Redrive", _M, RedriveRequest, RedriveResponse, "Move dead letters back to active"
)


class PurgeRequest(Request):
    """Delete dead letters; both bounds zero purges the whole DLQ."""

    queue: QueueName
    max: Annotated[I64, Doc("at most this many; 0 = all")] = 0
    older_than_ms: Annotated[I64, Doc("only dead letters older than this; 0 = all")] = 0
    seq_numbers: Annotated[tuple[I64, ...], Doc(_SELECTION)] = ()


class PurgeResponse(Snapshot):
    """How many dead letters were deleted."""

    purged: I64 = 0


PURGE = Route(_A, "Purge", _M, PurgeRequest, PurgeResponse, "Delete dead letters")


# -- Status ------------------------------------------------------------------------------


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


STATUS = Route(_A, "Status", _M, EmptyRequest, StatusResponse, "Desensitized runtime snapshot")


ROUTES: tuple[Route[Any, Any], ...] = (
    CREATE_QUEUE,
    ENSURE_QUEUE,
    DELETE_QUEUE,
    SUBSCRIBE,
    UNSUBSCRIBE,
    LIST_QUEUES,
    LIST_SUBSCRIPTIONS,
    TEST_FILTER,
    REDRIVE,
    PURGE,
    STATUS,
)

__all__ = [
    "CREATE_QUEUE",
    "DELETE_QUEUE",
    "ENSURE_QUEUE",
    "LIST_QUEUES",
    "LIST_SUBSCRIPTIONS",
    "PURGE",
    "REDRIVE",
    "STATUS",
    "SUBSCRIBE",
    "TEST_FILTER",
    "UNSUBSCRIBE",
    "CreateQueueRequest",
    "DeleteQueueRequest",
    "DeleteQueueResponse",
    "EmptyRequest",
    "EmptyResponse",
    "EnsureQueueRequest",
    "EnsureQueueResponse",
    "ListQueuesResponse",
    "ListSubscriptionsResponse",
    "PurgeRequest",
    "PurgeResponse",
    "RedriveRequest",
    "RedriveResponse",
    "StatusResponse",
    "SubscribeRequest",
    "SubscriptionFilter",
    "SubscriptionJSON",
    "TestFilterRequest",
    "TestFilterResponse",
    "UnsubscribeRequest",
]
