"""The cron firing pass: every slot due at the clock's time becomes an ordinary Send.

A firing is one Send of the stored message with ``message_id`` ``cron:<name>:<slot ms>``
and the properties ``mqlite-schedule`` / ``mqlite-slot``, committed in the SAME
transaction as the guarded update that records the slot (``last_slot``, ``next_fire_at``
compared-and-swapped): a crash before COMMIT loses both, one after it keeps both, so a
slot is fired at most once and never lost; a reopened database never fires a recorded
slot again. On a remote store every transaction is fenced by the broker lease, so only
the lease holder fires.

Which slot fires is ``cron.py``'s arithmetic, done off the writer (croniter costs tens of
microseconds a step); the writer only runs the inserts, ``CRON_FIRE_BATCH`` schedules a
transaction, so producers interleave with a large due minute. A part of the engine
(``part.py``), run by the maintenance part; the rows are ``schedule_rows.py``'s.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from dataclasses import dataclass
from typing import Any

from mqlite import defaults, errors
from mqlite.engine import send
from mqlite.engine.core import EngineCore, serialized
from mqlite.engine.cron import ALIASES, Cron, check_timezone, rfc3339
from mqlite.engine.part import Part
from mqlite.engine.schedule_rows import (
    ADVANCE_SQL,
    ANY_SCHEDULE_SQL,
    DUE_SCHEDULES_SQL,
    FIRE_SQL,
    NEVER,
    schedule_of,
    slot_message,
)
from mqlite.engine.sending import Sending
from mqlite.types import Schedule

log = logging.getLogger("mqlite.cron")


@dataclass(frozen=True, slots=True)
class Firing:
    """What the pass decided for one due schedule (off the writer)."""

    schedule: Schedule
    slot: int | None  # the slot to fire; None = none fires (skip)
    next: int  # the next slot after now (NEVER if none)


class ScheduleFiring(Part):
    """The firing pass (``fire_schedules``), which sends through ``messaging``."""

    def __init__(self, core: EngineCore, messaging: Sending) -> None:
        super().__init__(core)
        self.messaging = messaging
        # True once a pass found the table empty: later passes skip the writer (a broker
        # without schedules took it every second for nothing). Read and written only on
        # the writer; a create clears it in its own transaction (``expect_schedules``), so
        # the next pass looks.
        self._none_exist = False

    def expect_schedules(self) -> None:
        """A schedule is being created: the next pass reads the table again (a rolled-back
        create only costs that pass a look)."""
        self._none_exist = False

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
            firings = [plan(schedule_of(r), now) for r in rows]
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
    def _commit_firings(self, firings: list[Firing]) -> int:
        fired = 0
        with self._write() as (conn, now):
            for f in firings:
                fired += self._fire_one(conn, now, f)
        return fired

    def _fire_one(self, conn: sqlite3.Connection, now: int, f: Firing) -> int:
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


def plan(s: Schedule, now: int) -> Firing:
    """Which slot fires: the latest one due (``latest``), or it only when it is not later
    than the grace (``skip``); and the next slot after now."""
    cron = Cron(ALIASES.get(s.cron.lower(), s.cron), check_timezone(s.timezone))
    latest, following = cron.latest_slot(s.next_fire_at_ms, now)
    missed = s.catch_up == "skip" and now - latest > defaults.CRON_SKIP_GRACE_MS
    return Firing(s, None if missed else latest, NEVER if following is None else following)
