"""Cron schedules: the verbs that create, list and delete the rows of ``schedules``
(docs/cron.md). Each edit is audited in its own transaction; a timetable left unchanged
keeps its pending slot, any other edit plans from now. The rows and their checks are
``schedule_rows.py``'s; the maintenance loop fires them as ordinary Sends
(``schedule_firing.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

from mqlite import defaults, errors
from mqlite.engine import audit
from mqlite.engine.audit import Actor
from mqlite.engine.core import EngineCore, serialized
from mqlite.engine.cron import Cron, check_timezone, normalize
from mqlite.engine.part import Part
from mqlite.engine.schedule_firing import ScheduleFiring
from mqlite.engine.schedule_rows import (
    CATCH_UP,
    COUNT_SCHEDULES_SQL,
    DELETE_SCHEDULE_SQL,
    GET_SCHEDULE_SQL,
    LIST_SCHEDULES_SQL,
    NEVER,
    SCHEDULE_QUEUE_SQL,
    UPSERT_SCHEDULE_SQL,
    check_message,
    check_name,
    next_fire_at,
    schedule_of,
)
from mqlite.types import OutMessage, Schedule


class Schedules(Part):
    """CreateSchedule / DeleteSchedule / ListSchedules (``schedule_firing.py`` fires them)."""

    def __init__(self, core: EngineCore, firing: ScheduleFiring) -> None:
        super().__init__(core)
        self.firing = firing

    def create_schedule(
        self,
        name: str,
        cron: str,
        queue: str,
        message: OutMessage,
        timezone: str = "UTC",
        catch_up: str = "latest",
        paused: bool = False,
        *,
        actor: Actor | None = None,
    ) -> Schedule:
        """Create or replace schedule ``name``: ``message`` goes to ``queue`` (a queue, or a
        topic that fans out) at every slot of ``cron`` in ``timezone`` (docs/cron.md)."""
        name = check_name(name)
        expr = normalize(cron)
        check_timezone(timezone)
        if catch_up not in CATCH_UP:
            raise errors.InvalidArgument("catch_up must be one of: latest, skip")
        if not isinstance(paused, bool):
            raise errors.InvalidArgument("paused must be a boolean")
        msg = check_message(message, self.max_message_bytes)
        if not isinstance(queue, str):
            raise errors.InvalidArgument("queue must be a string")
        self.catalog.routes(queue)  # an unknown queue or topic: 404 now, not at the slot
        text = cron.strip()
        return self._upsert_schedule(name, text, Cron(expr, check_timezone(timezone)), queue, msg,
                                     timezone, catch_up, paused, actor)  # fmt: skip

    @serialized
    def _upsert_schedule(
        self,
        name: str,
        text: str,
        cron: Cron,
        queue: str,
        msg: OutMessage,
        timezone: str,
        catch_up: str,
        paused: bool,
        actor: Actor | None,
    ) -> Schedule:
        self.firing.expect_schedules()
        with self._write() as (conn, now):
            old = conn.execute(GET_SCHEDULE_SQL, (name,)).fetchone()
            if old is None and conn.execute(COUNT_SCHEDULES_SQL).fetchone()[0] >= (
                defaults.MAX_SCHEDULES
            ):
                raise errors.InvalidArgument(
                    f"at most {defaults.MAX_SCHEDULES} schedules per broker; delete one first"
                )
            before = None if old is None else schedule_of(old)
            same_slots = (
                before is not None
                and not before.paused
                and (before.cron, before.timezone) == (text, timezone)
            )
            # An unchanged timetable keeps its pending slot; anything else starts from now
            # (a resumed schedule does not fire the slots it was paused through).
            next_at = before.next_fire_at_ms if same_slots and before else next_fire_at(cron, now)
            conn.execute(
                UPSERT_SCHEDULE_SQL,
                {
                    "name": name, "cron": text, "timezone": timezone, "queue": queue,
                    "body": msg.body, "subject": msg.subject,
                    "content_type": msg.content_type, "correlation_id": msg.correlation_id,
                    "reply_to": msg.reply_to, "group_id": msg.group_id,
                    "properties": json.dumps(msg.properties, sort_keys=True),
                    "catch_up": catch_up, "paused": int(paused), "next_fire_at": next_at,
                    "now": now,
                },
            )  # fmt: skip
            row = conn.execute(GET_SCHEDULE_SQL, (name,)).fetchone()
            audit.record(conn, now, actor, "CreateSchedule", queue, name=name, cron=text,
                         timezone=timezone, catch_up=catch_up, paused=paused,
                         created=before is None)  # fmt: skip
        return self._with_status(schedule_of(row))

    def list_schedules(self) -> list[Schedule]:
        """Every schedule by name, with its next and last firing and its status."""
        rows = self._read_stale(lambda conn: conn.execute(LIST_SCHEDULES_SQL).fetchall())
        return [self._with_status(schedule_of(r)) for r in rows]

    @serialized
    def delete_schedule(
        self,
        name: str,
        *,
        actor: Actor | None = None,
        allow: Callable[[str], bool] | None = None,
    ) -> bool:
        """Delete schedule ``name``; False when there was none (deleting is idempotent).

        ``allow`` (a scoped caller's check of the schedule's target queue) is judged in
        the deleting transaction, so a schedule retargeted meanwhile cannot slip through;
        refused -- or no such schedule: no existence oracle -- is ``PermissionDenied``."""
        name = check_name(name)
        with self._write() as (conn, now):
            target = conn.execute(SCHEDULE_QUEUE_SQL, (name,)).fetchone()
            if allow is not None and (target is None or not allow(target[0])):
                raise errors.PermissionDenied(
                    f"this credential is not scoped to the queue of schedule {name!r}"
                )
            deleted = bool(conn.execute(DELETE_SCHEDULE_SQL, (name,)).rowcount)
            if deleted:
                audit.record(conn, now, actor, "DeleteSchedule", target[0], name=name)
                measures = self.schedule_measures
                self.store.after_commit(lambda: measures.forget(name))
        return deleted

    def _with_status(self, s: Schedule) -> Schedule:
        if s.paused:
            return replace(s, status="paused", next_fire_at_ms=0)
        try:
            self.catalog.routes(s.queue)
        except errors.NotFound:
            return replace(s, status="target missing")
        return s if s.next_fire_at_ms != NEVER else replace(s, next_fire_at_ms=0)
