"""Cron schedules: rows in ``schedules``, fired by the maintenance loop as ordinary Sends.

A firing is one Send of the stored message with ``message_id`` ``cron:<name>:<slot ms>``
and the properties ``mqlite-schedule`` / ``mqlite-slot``, committed in the SAME
transaction as the guarded update that records the slot (``last_slot``, ``next_fire_at``
compared-and-swapped): a crash before COMMIT loses both, one after it keeps both, so a
slot is fired at most once and never lost; a reopened database never fires a recorded
slot again. On a remote store every transaction is fenced by the broker lease, so only
the lease holder fires.

Which slot fires is ``cron.py``'s arithmetic, done off the writer (croniter costs tens of
microseconds a step); the writer only runs the inserts, ``CRON_FIRE_BATCH`` schedules a
transaction, so producers interleave with a large due minute.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from mqlite import defaults, errors
from mqlite.engine import audit, send
from mqlite.engine.audit import Actor
from mqlite.engine.core import EngineCore, serialized
from mqlite.engine.cron import ALIASES, Cron, check_timezone, normalize, rfc3339
from mqlite.engine.part import Part
from mqlite.engine.sending import Sending
from mqlite.types import OutMessage, Schedule

log = logging.getLogger("mqlite.cron")

CATCH_UP = ("latest", "skip")
NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")
SCHEDULE_PROPERTY = "mqlite-schedule"
SLOT_PROPERTY = "mqlite-slot"
_COLUMNS = (
    "name, cron, timezone, queue, body, subject, content_type, correlation_id, reply_to, "
    "group_id, properties, catch_up, paused, next_fire_at, last_slot, last_fired_at, fired, "
    "created_at, updated_at"
)

LIST_SCHEDULES_SQL = f"SELECT {_COLUMNS} FROM schedules ORDER BY name"
GET_SCHEDULE_SQL = f"SELECT {_COLUMNS} FROM schedules WHERE name = ?"
COUNT_SCHEDULES_SQL = "SELECT COUNT(*) FROM schedules"
ANY_SCHEDULE_SQL = "SELECT 1 FROM schedules LIMIT 1"
DELETE_SCHEDULE_SQL = "DELETE FROM schedules WHERE name = ?"
SCHEDULE_QUEUE_SQL = "SELECT queue FROM schedules WHERE name = ?"

UPSERT_SCHEDULE_SQL = """
INSERT INTO schedules (name, cron, timezone, queue, body, subject, content_type,
    correlation_id, reply_to, group_id, properties, catch_up, paused, next_fire_at,
    created_at, updated_at)
VALUES (:name, :cron, :timezone, :queue, :body, :subject, :content_type, :correlation_id,
    :reply_to, :group_id, :properties, :catch_up, :paused, :next_fire_at, :now, :now)
ON CONFLICT (name) DO UPDATE SET
    cron = excluded.cron, timezone = excluded.timezone, queue = excluded.queue,
    body = excluded.body, subject = excluded.subject, content_type = excluded.content_type,
    correlation_id = excluded.correlation_id, reply_to = excluded.reply_to,
    group_id = excluded.group_id, properties = excluded.properties,
    catch_up = excluded.catch_up, paused = excluded.paused,
    next_fire_at = excluded.next_fire_at, updated_at = excluded.updated_at
"""

# The firing pass: due, unpaused schedules in (next_fire_at, name) order, keyset-paged
# (a schedule that failed this pass is not met again in it). Seeks idx_schedules_due.
DUE_SCHEDULES_SQL = f"""
SELECT {_COLUMNS} FROM schedules
WHERE paused = 0 AND next_fire_at <= :now AND (next_fire_at, name) > (:at, :name)
ORDER BY next_fire_at, name LIMIT :limit
"""

# Record a fired slot: compare-and-swap on the next_fire_at the pass planned from, so a
# concurrent upsert (or a second pass) cannot make it fire twice.
FIRE_SQL = """
UPDATE schedules SET next_fire_at = :next, last_slot = :slot, last_fired_at = :now,
    fired = fired + 1
WHERE name = :name AND next_fire_at = :expected AND paused = 0
"""

# Move past slots that do not fire (catch_up=skip, a missing target, a refused send).
ADVANCE_SQL = """
UPDATE schedules SET next_fire_at = :next
WHERE name = :name AND next_fire_at = :expected AND paused = 0
"""

NEVER = 1 << 62  # next_fire_at of a schedule with no future slot: never due


def check_name(name: object) -> str:
    limit = defaults.MAX_SCHEDULE_NAME_CHARS
    if not isinstance(name, str) or not name:
        raise errors.InvalidArgument("name is required")
    if len(name) > limit or not NAME_RE.match(name):
        raise errors.InvalidArgument(
            f"name must be 1..{limit} characters of A-Z, a-z, 0-9, '.', '_' and '-'"
        )
    return name


def slot_message(message: OutMessage, name: str, slot_ms: int) -> OutMessage:
    """The message one slot sends: its id and the two properties name the slot."""
    props = {**message.properties, SCHEDULE_PROPERTY: name, SLOT_PROPERTY: rfc3339(slot_ms)}
    return OutMessage(
        message.body,
        f"cron:{name}:{slot_ms}",
        message.group_id,
        message.subject,
        message.correlation_id,
        message.reply_to,
        message.content_type,
        props,
    )


@dataclass(frozen=True, slots=True)
class _Row:
    schedule: Schedule

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> _Row:
        (name, cron, tz, queue, body, subject, ctype, corr, reply, group, props) = row[:11]
        (catch_up, paused, next_at, last_slot, last_at, fired, created, updated) = row[11:]
        message = OutMessage(bytes(body), "", group, subject, corr, reply, ctype, json.loads(props))
        return cls(
            Schedule(
                name, cron, queue, message, tz, catch_up, bool(paused), next_at, last_at,
                last_slot, fired, "paused" if paused else "active", created, updated,
            )
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Firing:
    """What the pass decided for one due schedule (off the writer)."""

    schedule: Schedule
    slot: int | None  # the slot to fire; None = none fires (skip)
    next: int  # the next slot after now (NEVER if none)


class Schedules(Part):
    """CreateSchedule / DeleteSchedule / ListSchedules, and the firing pass (which sends
    through ``messaging``)."""

    def __init__(self, core: EngineCore, messaging: Sending) -> None:
        super().__init__(core)
        self.messaging = messaging
        # True once a pass found the table empty: later passes skip the writer (a broker
        # without schedules took it every second for nothing). Read and written only on
        # the writer; a create clears it in its own transaction, so the next pass looks.
        self._none_exist = False

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
        msg = _check_message(message, self.max_message_bytes)
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
        self._none_exist = False  # (a rolled-back create only costs the next pass a look)
        with self._write() as (conn, now):
            old = conn.execute(GET_SCHEDULE_SQL, (name,)).fetchone()
            if old is None and conn.execute(COUNT_SCHEDULES_SQL).fetchone()[0] >= (
                defaults.MAX_SCHEDULES
            ):
                raise errors.InvalidArgument(
                    f"at most {defaults.MAX_SCHEDULES} schedules per broker; delete one first"
                )
            before = None if old is None else _Row.of(old).schedule
            same_slots = (
                before is not None
                and not before.paused
                and (before.cron, before.timezone) == (text, timezone)
            )
            # An unchanged timetable keeps its pending slot; anything else starts from now
            # (a resumed schedule does not fire the slots it was paused through).
            next_at = before.next_fire_at_ms if same_slots and before else _next(cron, now)
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
        return self._with_status(_Row.of(row).schedule)

    def list_schedules(self) -> list[Schedule]:
        """Every schedule by name, with its next and last firing and its status."""
        rows = self._read_stale(lambda conn: conn.execute(LIST_SCHEDULES_SQL).fetchall())
        return [self._with_status(_Row.of(r).schedule) for r in rows]

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

    # -- firing ------------------------------------------------------------------------------

    def fire_schedules(self) -> int:
        """Fire every slot due at the clock's time (the maintenance pass); returns how many
        messages were sent (a topic's copies count once)."""
        if self._none_exist:  # no schedule: no writer (a stale read waits one tick at most)
            return 0
        now = self.clock.now_ms()
        fired, after = 0, (-1, "")
        while True:
            rows = self._due_schedules(now, after)
            if not rows:
                return fired
            firings = [_plan(_Row.of(r).schedule, now) for r in rows]
            fired += self._commit_firings(firings)
            if len(rows) < defaults.CRON_FIRE_BATCH:
                return fired
            after = (rows[-1][13], rows[-1][0])
            # A breath between batches: the event loop and queued writer work (producers)
            # get the GIL and the writer, instead of waiting out a whole due minute.
            self.clock.sleep_ms(defaults.CRON_BATCH_PAUSE_MS)

    @serialized
    def _due_schedules(self, now: int, after: tuple[int, str]) -> list[tuple[Any, ...]]:
        params = {"now": now, "at": after[0], "name": after[1], "limit": defaults.CRON_FIRE_BATCH}
        reader = self.store.reader()
        rows: list[tuple[Any, ...]] = reader.execute(DUE_SCHEDULES_SQL, params).fetchall()
        if not rows and after[0] < 0:
            self._none_exist = reader.execute(ANY_SCHEDULE_SQL).fetchone() is None
        return rows

    @serialized
    def _commit_firings(self, firings: list[_Firing]) -> int:
        fired = 0
        with self._write() as (conn, now):
            for f in firings:
                fired += self._fire_one(conn, now, f)
        return fired

    def _fire_one(self, conn: sqlite3.Connection, now: int, f: _Firing) -> int:
        s = f.schedule
        guard = {"name": s.name, "expected": s.next_fire_at_ms, "next": f.next}
        if f.slot is not None:
            try:
                routes = self.catalog.routes(s.queue)
                with self.store.transaction():  # a savepoint: a refused send undoes the record
                    params = {**guard, "slot": f.slot, "now": now}
                    if conn.execute(FIRE_SQL, params).rowcount != 1:
                        return 0  # changed since the pass read it: the next pass decides
                    self._send_slot(routes, s, f.slot, now)
                lag = now - f.slot
                measures = self.schedule_measures
                self.store.after_commit(lambda: measures.record(s.name, now, lag))
                return 1
            except errors.NotFound:
                pass  # target missing: it stops firing (ListSchedules says so) until it exists
            except (errors.InvalidArgument, errors.GroupRequired, errors.MessageTooLarge) as exc:
                log.warning(
                    "schedule slot not sent",
                    extra={"schedule": s.name, "slot": rfc3339(f.slot), "reason": exc.message},
                )
        conn.execute(ADVANCE_SQL, guard)
        return 0

    def _send_slot(self, routes: list[send.Route], s: Schedule, slot: int, now: int) -> None:
        msgs = send.validate_messages([slot_message(s.message, s.name, slot)],
                                      self.max_message_bytes)  # fmt: skip
        send.check_fanout(1, len(routes))
        plan = send.route_plan(routes, msgs, now, now)
        # A dedup conflict: this slot's id was already sent (a dedup window): it is fired.
        with contextlib.suppress(errors.DedupConflict):
            self.messaging._commit_send(s.queue, routes, plan, msgs, now, now, None)


def _next(cron: Cron, after_ms: int) -> int:
    nxt = cron.next_slot(after_ms)
    return NEVER if nxt is None else nxt


def _plan(s: Schedule, now: int) -> _Firing:
    """Which slot fires: the latest one due (``latest``), or it only when it is not later
    than the grace (``skip``); and the next slot after now."""
    cron = Cron(ALIASES.get(s.cron.lower(), s.cron), check_timezone(s.timezone))
    latest, following = cron.latest_slot(s.next_fire_at_ms, now)
    missed = s.catch_up == "skip" and now - latest > defaults.CRON_SKIP_GRACE_MS
    return _Firing(s, None if missed else latest, NEVER if following is None else following)


def _check_message(message: object, max_bytes: int) -> OutMessage:
    if not isinstance(message, OutMessage):
        raise errors.InvalidArgument("message must be an OutMessage")
    if message.message_id:
        raise errors.InvalidArgument(
            "message.message_id must be empty: each firing's is cron:<name>:<slot ms>"
        )
    try:
        (msg,) = send.validate_messages([message], max_bytes)
    except (errors.InvalidArgument, errors.MessageTooLarge) as exc:
        raise type(exc)(exc.message.replace("messages[0]", "message")) from None
    return msg
