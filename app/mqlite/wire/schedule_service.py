"""AdminService's cron schedules (docs/cron.md): CreateSchedule, DeleteSchedule,
ListSchedules. One block per RPC, as in ``admin_service``; ``ROUTES`` follows that
module's in discovery order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from msgspec import UNSET, UnsetType, field

from mqlite import types as t

from .admin_service import EmptyRequest
from .base import I64, Doc, Request, Route, Snapshot, canonical
from .messages import Body, ContentType, CorrelationId, GroupId, Properties, ReplyTo, Subject

_M, _A = t.Permission.MANAGE, "AdminService"

ScheduleName = Annotated[str, Doc("the schedule name: 1..128 of A-Z a-z 0-9 . _ -")]


class ScheduleMessageJSON(Request):
    """The message each slot sends; its ``message_id`` is ``cron:<name>:<slot epoch ms>``
    and ``properties`` gain ``mqlite-schedule`` and ``mqlite-slot`` (RFC 3339 UTC)."""

    body: Body = b""
    subject: Subject = ""
    content_type: ContentType = ""
    correlation_id: CorrelationId = ""
    reply_to: ReplyTo = ""
    group_id: GroupId = ""
    properties: Properties = field(default_factory=dict)

    @classmethod
    def of(cls, m: t.OutMessage) -> ScheduleMessageJSON:
        return cls(
            m.body, m.subject, m.content_type, m.correlation_id, m.reply_to, m.group_id,
            m.properties,
        )  # fmt: skip

    def out(self) -> t.OutMessage:
        return t.OutMessage(
            self.body, "", self.group_id, self.subject, self.correlation_id, self.reply_to,
            self.content_type, self.properties,
        )  # fmt: skip


class ScheduleJSON(Snapshot, kw_only=True):
    """A schedule with its next and last firing (every field always present); times are
    epoch ms, 0 = never."""

    name: ScheduleName
    cron: Annotated[str, Doc("five fields or an @alias, as given")]
    timezone: Annotated[str, Doc("IANA zone the cron is read in")] = "UTC"
    queue: Annotated[str, Doc("target queue or topic")]
    message: ScheduleMessageJSON = field(default_factory=ScheduleMessageJSON)
    catch_up: Annotated[str, Doc("latest | skip")] = "latest"
    paused: bool = False
    status: Annotated[str, Doc("active | paused | target missing")] = "active"
    next_fire_at_ms: Annotated[I64, Doc("the next slot; 0 while paused or never")] = 0
    last_fired_at_ms: Annotated[I64, Doc("when the last slot was sent")] = 0
    last_slot_ms: Annotated[I64, Doc("the last slot sent")] = 0
    fired: Annotated[I64, Doc("slots sent since the schedule was created")] = 0
    created_at_ms: I64 = 0
    updated_at_ms: I64 = 0

    @classmethod
    def of(cls, s: t.Schedule) -> ScheduleJSON:
        return cls(
            name=s.name,
            cron=s.cron,
            timezone=canonical(s.timezone, "UTC"),
            queue=s.queue,
            message=ScheduleMessageJSON.of(s.message),
            catch_up=canonical(s.catch_up, "latest"),
            paused=s.paused,
            status=canonical(s.status, "active"),
            next_fire_at_ms=s.next_fire_at_ms,
            last_fired_at_ms=s.last_fired_at_ms,
            last_slot_ms=s.last_slot_ms,
            fired=s.fired,
            created_at_ms=s.created_at_ms,
            updated_at_ms=s.updated_at_ms,
        )

    def value(self) -> t.Schedule:
        return t.Schedule(
            self.name, self.cron, self.queue, self.message.out(), self.timezone, self.catch_up,
            self.paused, self.next_fire_at_ms, self.last_fired_at_ms, self.last_slot_ms,
            self.fired, self.status, self.created_at_ms, self.updated_at_ms,
        )  # fmt: skip


# -- CreateSchedule ----------------------------------------------------------------------


class CreateScheduleRequest(Request):
    """Create or replace (upsert on ``name``) a cron schedule."""

    name: ScheduleName
    cron: Annotated[
        str,
        Doc(
            "minute hour day-of-month month day-of-week (*, lists, ranges, steps, names) "
            "or @hourly, @daily, @weekly, @monthly, @yearly"
        ),
    ]
    queue: Annotated[str, Doc("a queue, or a topic (fans out as a publish does)")]
    message: Annotated[
        ScheduleMessageJSON | UnsetType, Doc("what each slot sends; absent = an empty body")
    ] = UNSET
    timezone: Annotated[str, Doc("IANA zone name the cron is read in")] = "UTC"
    catch_up: Annotated[
        Literal["latest", "skip"],
        Doc("after downtime: latest = send the most recent missed slot once; skip = none"),
    ] = "latest"
    paused: Annotated[bool, Doc("true = keep it but fire nothing")] = False

    def out_message(self) -> t.OutMessage:
        return t.OutMessage() if isinstance(self.message, UnsetType) else self.message.out()


class ScheduleResponse(Snapshot):
    """The schedule as ListSchedules shows it."""

    schedule: ScheduleJSON

    @classmethod
    def of(cls, s: t.Schedule) -> ScheduleResponse:
        return cls(ScheduleJSON.of(s))


CREATE_SCHEDULE = Route(
    _A,
    "CreateSchedule",
    _M,
    CreateScheduleRequest,
    ScheduleResponse,
    "Create or replace a cron schedule",
)


# -- DeleteSchedule ----------------------------------------------------------------------


class DeleteScheduleRequest(Request):
    """Delete a schedule (no error when there is none)."""

    name: ScheduleName


class DeleteScheduleResponse(Snapshot):
    """``deleted`` false: there was no such schedule."""

    deleted: bool = False


DELETE_SCHEDULE = Route(
    _A,
    "DeleteSchedule",
    _M,
    DeleteScheduleRequest,
    DeleteScheduleResponse,
    "Delete a cron schedule",
)


# -- ListSchedules -----------------------------------------------------------------------


class ListSchedulesResponse(Snapshot):
    """Every schedule by name."""

    schedules: tuple[ScheduleJSON, ...] = ()

    @classmethod
    def of(cls, schedules: Sequence[t.Schedule]) -> ListSchedulesResponse:
        return cls(tuple([ScheduleJSON.of(s) for s in schedules]))

    def values(self) -> list[t.Schedule]:
        return [s.value() for s in self.schedules]


LIST_SCHEDULES = Route(
    _A,
    "ListSchedules",
    _M,
    EmptyRequest,
    ListSchedulesResponse,
    "Every cron schedule with its next and last firing",
)


ROUTES: tuple[Route[Any, Any], ...] = (CREATE_SCHEDULE, DELETE_SCHEDULE, LIST_SCHEDULES)

__all__ = [
    "CREATE_SCHEDULE",
    "DELETE_SCHEDULE",
    "LIST_SCHEDULES",
    "CreateScheduleRequest",
    "DeleteScheduleRequest",
    "DeleteScheduleResponse",
    "ListSchedulesResponse",
    "ScheduleJSON",
    "ScheduleMessageJSON",
    "ScheduleResponse",
]
