"""The background loops: APScheduler runs each maintenance pass on the spec's cadence.

The cadence test reads the registered triggers; the integration test waits (on an event,
bounded) for the real 1 s reaper tick to reclaim a lock the fake clock has expired.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import mqlite
from mqlite import OutMessage, QueueConfig, testing
from mqlite.clock import FakeClock
from mqlite.scheduling import MaintenanceScheduler


def test_passes_are_registered_at_the_spec_cadences(engine: mqlite.EmbeddedClient) -> None:
    sched = MaintenanceScheduler(testing.engine(engine).maintenance)
    jobs = {job.id: job.trigger.interval.total_seconds() for job in sched._scheduler.get_jobs()}
    assert jobs == {
        "reap_locks": 1.0,
        "activate_scheduled": 1.0,
        "expire_ttl": 10.0,
        "janitors": 60.0,
        "reclaim_free_pages": 60.0,
        "fire_schedules": 1.0,  # cron slots (docs/cron.md)
        "tend_disk": 10.0,
    }


def test_background_reaper_reclaims_an_expired_lock(tmp_path: Path) -> None:
    clock = FakeClock()
    mq = mqlite.open_embedded(f"file:{tmp_path / 'bg.db'}", clock=clock, background=True)
    try:
        mq.create_queue("q", QueueConfig(lock_duration_ms=1_000))
        mq.send_one("q", OutMessage(body=b"x"))
        assert len(mq.receive("q")) == 1
        clock.advance(1_000)  # the lease deadline: already expired
        woken = threading.Event()
        testing.engine(mq).notifier.register("q", woken.set)  # the reaper wakes the queue's waiters
        assert woken.wait(5), "reaper did not run within 5 s"
        st = mq.stats("q")
        assert (st.active, st.locked) == (1, 0)
    finally:
        started = time.monotonic()
        mq.close()
        assert time.monotonic() - started < 5


def test_close_stops_the_loops(tmp_path: Path) -> None:
    def loop_threads() -> list[str]:
        return [
            t.name
            for t in threading.enumerate()
            if t.name.startswith(("APScheduler", "mqlite-writer"))
        ]

    mq = mqlite.open_embedded(f"file:{tmp_path / 'bg.db'}", background=True)
    assert any(n.startswith("APScheduler") for n in loop_threads())
    mq.close()
    assert loop_threads() == []


def test_background_passes_run_on_the_writer_thread(tmp_path: Path) -> None:
    """Every engine call, maintenance included, is serialized by the one writer: the
    scheduler's thread submits passes, the writer thread runs them."""
    clock = FakeClock()
    mq = mqlite.open_embedded(f"file:{tmp_path / 'bg.db'}", clock=clock, background=True)
    try:
        mq.create_queue("q", QueueConfig(lock_duration_ms=1_000))
        mq.send_one("q", OutMessage(body=b"x"))
        mq.receive("q")
        ran_on: list[str] = []

        def trace(sql: str) -> None:
            if "WHERE state = 'locked' AND locked_until <= " in sql:
                ran_on.append(threading.current_thread().name)

        testing.engine(mq).store.conn.set_trace_callback(trace)
        woken = threading.Event()
        testing.engine(mq).notifier.register("q", woken.set)
        clock.advance(1_000)
        assert woken.wait(5), "reaper did not run within 5 s"
        assert ran_on and set(ran_on) == {"mqlite-writer"}
    finally:
        mq.close()
