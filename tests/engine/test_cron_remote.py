"""Cron schedules on a real libSQL server (sqld) shared by two brokers: only the lease
holder fires, and a slot is never fired by both -- not even by a broker that stalled,
lost its lease to a successor and woke up with its old plan (engine/lease.py fences every
write transaction)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, defaults, errors
from mqlite.clock import FakeClock
from mqlite.engine.schedule_firing import plan
from mqlite.engine.schedule_rows import schedule_of
from mqlite.testing import engine as engine_of
from mqlite.testing import run_maintenance_once

T0 = int(datetime(2026, 5, 4, 9, 0, tzinfo=UTC).timestamp()) * 1000
MINUTE = 60_000


def open_broker(dsn: str, clock: FakeClock) -> Any:
    return mqlite.open_embedded(dsn, clock=clock, background=False)


def ids(mq: Any) -> list[str]:
    return [m.message_id for m in mq.peek("q", max=100)]


def test_only_the_lease_holder_fires_and_no_slot_fires_twice(remote_dsn: str) -> None:
    clock = FakeClock(T0)
    first = open_broker(remote_dsn, clock)
    first.create_queue("q", QueueConfig())
    first.create_schedule("s", "* * * * *", "q", OutMessage(b"x"))
    with pytest.raises(errors.DBLocked):
        open_broker(remote_dsn, clock)  # a second broker does not even open meanwhile
    clock.advance(MINUTE)
    assert run_maintenance_once(first).schedules_fired == 1  # 09:01, by the holder
    # The first broker stalls past its lease; a successor takes over and fires 09:02.
    clock.advance(defaults.LEASE_TTL_MS + MINUTE // 2)
    stale = engine_of(first)  # it had read 09:02 as due just before it stalled
    planned = [
        plan(schedule_of(r), clock.now_ms())
        for r in stale.schedule_firing._due_schedules(clock.now_ms(), (-1, ""))
    ]
    assert [f.slot for f in planned] == [T0 + 2 * MINUTE]
    second = open_broker(remote_dsn, clock)
    try:
        assert run_maintenance_once(second).schedules_fired == 1
        # The stalled broker wakes and commits its plan: the write is refused (lease lost).
        with pytest.raises(errors.DBLocked):
            stale.schedule_firing._commit_firings(planned)
        assert stale.fire_schedules() == 0  # nothing is due for it any more either
        with pytest.raises(errors.DBLocked):
            run_maintenance_once(first)
        clock.advance(MINUTE)
        assert run_maintenance_once(second).schedules_fired == 1  # 09:03
        slot = T0 + MINUTE
        assert ids(second) == [
            f"cron:s:{slot}",
            f"cron:s:{slot + MINUTE}",
            f"cron:s:{slot + 2 * MINUTE}",
        ]
        (s,) = second.list_schedules()
        assert (s.fired, s.last_slot_ms) == (3, slot + 2 * MINUTE)
    finally:
        second.close()
        first.close()
