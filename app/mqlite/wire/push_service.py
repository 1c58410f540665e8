"""AdminService's push targets (docs/push.md): CreatePush, ListPushes, DeletePush. One block
per RPC, as in ``admin_service``; ``ROUTES`` follows the schedule routes in discovery order.
The bounds (url, secret, max_in_flight, timeout_ms) are checked by the engine, which names
the field in its 400; the Docs here state them for the reference and the MCP schemas.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from mqlite import types as t

from .admin_service import EmptyRequest
from .base import I64, Doc, Request, Route, Snapshot

_M, _A = t.Permission.MANAGE, "AdminService"

QueueName = Annotated[str, Doc("the queue (or subscription) the target consumes")]


class PushJSON(Snapshot, kw_only=True):
    """A push target with its delivery state (every field always present); times are epoch
    ms, 0 = never; counters since the broker started. The secret is never here except in
    CreatePush's answer when the broker generated it."""

    queue: QueueName
    url: Annotated[str, Doc("where each message is POSTed")]
    max_in_flight: Annotated[int, Doc("concurrent POSTs (standard queues)")] = 8
    timeout_ms: Annotated[I64, Doc("one POST's deadline")] = 10_000
    paused: bool = False
    status: Annotated[str, Doc("active | paused | failing")] = "active"
    last_status: Annotated[int, Doc("the last HTTP status; 0 = none or no answer")] = 0
    last_error: Annotated[str, Doc("the last failed attempt's error")] = ""
    last_attempt_at_ms: I64 = 0
    next_attempt_at_ms: Annotated[I64, Doc("when a failed message is due again")] = 0
    delivered: Annotated[I64, Doc("messages delivered (2xx)")] = 0
    failed: Annotated[I64, Doc("attempts that failed")] = 0
    created_at_ms: I64 = 0
    updated_at_ms: I64 = 0
    secret: Annotated[str, Doc("only when CreatePush generated it: shown once")] = ""

    @classmethod
    def of(cls, p: t.PushTarget) -> PushJSON:
        return cls(
            queue=p.queue,
            url=p.url,
            max_in_flight=p.max_in_flight,
            timeout_ms=p.timeout_ms,
            paused=p.paused,
            status=p.status,
            last_status=p.last_status,
            last_error=p.last_error,
            last_attempt_at_ms=p.last_attempt_at_ms,
            next_attempt_at_ms=p.next_attempt_at_ms,
            delivered=p.delivered,
            failed=p.failed,
            created_at_ms=p.created_at_ms,
            updated_at_ms=p.updated_at_ms,
            secret=p.secret,
        )

    def value(self) -> t.PushTarget:
        return t.PushTarget(
            self.queue, self.url, self.max_in_flight, self.timeout_ms, self.paused, self.status,
            self.last_status, self.last_error, self.last_attempt_at_ms, self.next_attempt_at_ms,
            self.delivered, self.failed, self.created_at_ms, self.updated_at_ms, self.secret,
        )  # fmt: skip


# -- CreatePush --------------------------------------------------------------------------


class CreatePushRequest(Request):
    """Bind (upsert on ``queue``) the queue's push target."""

    queue: QueueName
    url: Annotated[
        str,
        Doc(
            "https:// (http:// only to a network in MQLITE_PUSH_ALLOW_NETWORKS), <= 2048 "
            "bytes, no user:password@; must not resolve to a loopback, private, link-local, "
            "multicast or unspecified address unless allow-listed"
        ),
    ]
    secret: Annotated[
        str,
        Doc(
            "whsec_ + base64 of 16..64 bytes; '' = keep the target's own, or generate one "
            "for a new target (returned once)"
        ),
    ] = ""
    max_in_flight: Annotated[int, Doc("concurrent POSTs, 1..256")] = 8
    timeout_ms: Annotated[I64, Doc("one POST's deadline, 100..60000 ms")] = 10_000
    paused: Annotated[bool, Doc("true = keep the target but deliver nothing")] = False


class PushResponse(Snapshot):
    """The target as ListPushes shows it (plus a generated secret, once)."""

    push: PushJSON

    @classmethod
    def of(cls, p: t.PushTarget) -> PushResponse:
        return cls(PushJSON.of(p))


CREATE_PUSH = Route(
    _A, "CreatePush", _M, CreatePushRequest, PushResponse, "Bind a queue's push target"
)


# -- DeletePush --------------------------------------------------------------------------


class DeletePushRequest(Request):
    """Unbind a queue's push target (no error when there is none)."""

    queue: QueueName


class DeletePushResponse(Snapshot):
    """``deleted`` false: the queue had no push target."""

    deleted: bool = False


DELETE_PUSH = Route(
    _A, "DeletePush", _M, DeletePushRequest, DeletePushResponse, "Unbind a queue's push target"
)


# -- ListPushes --------------------------------------------------------------------------


class ListPushesResponse(Snapshot):
    """Every push target by queue name, never a secret."""

    pushes: tuple[PushJSON, ...] = ()

    @classmethod
    def of(cls, pushes: Sequence[t.PushTarget]) -> ListPushesResponse:
        return cls(tuple([PushJSON.of(p) for p in pushes]))

    def values(self) -> list[t.PushTarget]:
        return [p.value() for p in self.pushes]


LIST_PUSHES = Route(
    _A,
    "ListPushes",
    _M,
    EmptyRequest,
    ListPushesResponse,
    "Every push target with its delivery state",
)


ROUTES: tuple[Route[Any, Any], ...] = (CREATE_PUSH, DELETE_PUSH, LIST_PUSHES)

__all__ = [
    "CREATE_PUSH",
    "DELETE_PUSH",
    "LIST_PUSHES",
    "CreatePushRequest",
    "DeletePushRequest",
    "DeletePushResponse",
    "ListPushesResponse",
    "PushJSON",
    "PushResponse",
]
