"""One broker per remote database (engine/lease.py), on a real sqld, time from FakeClock:
a second open is refused naming the holder and the expiry, an expired lease lets a new
holder in, renewal keeps it, and a broker that lost its lease stops writing."""

from __future__ import annotations

from typing import Any

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, defaults, errors
from mqlite.clock import FakeClock
from mqlite.engine.remote import RemoteConnection, parse_remote
from mqlite.scheduling import MaintenanceScheduler
from mqlite.testing import run_maintenance_once

T0 = 1_700_000_000_000
TTL = defaults.LEASE_TTL_MS


def open_broker(dsn: str, clock: FakeClock) -> Any:
    return mqlite.open_embedded(dsn, clock=clock, background=False)


def lease_row(dsn: str) -> tuple[str, int] | None:
    conn = RemoteConnection(parse_remote(dsn), "")
    try:
        row = conn.execute("SELECT holder, expires_at FROM broker_lease").fetchone()
    finally:
        conn.close()
    return None if row is None else (str(row[0]), int(row[1]))


def test_second_open_is_refused_naming_the_holder_and_the_expiry(remote_dsn: str) -> None:
    clock = FakeClock(T0)
    first = open_broker(remote_dsn, clock)
    try:
        row = lease_row(remote_dsn)
        assert row is not None and row[1] == T0 + TTL
        clock.advance(5_000)
        with pytest.raises(errors.DBLocked) as refused:
            open_broker(remote_dsn, clock)
        assert row[0] in refused.value.message  # who holds it
        assert "2023-11-14T22:13:50+00:00 (in 25 s)" in refused.value.message  # until when
        first.create_queue("q", QueueConfig())  # the holder is unaffected
        first.send_one("q", OutMessage(body=b"x"))
    finally:
        first.close()
    assert lease_row(remote_dsn) is None  # released at close: the next broker opens at once


def test_an_expired_lease_lets_a_new_holder_in(remote_dsn: str) -> None:
    """A broker that died without closing (never renewed, never released)."""
    clock = FakeClock(T0)
    dead = open_broker(remote_dsn, clock)
    dead_holder = lease_row(remote_dsn)
    clock.advance(TTL - 1)
    with pytest.raises(errors.DBLocked):
        open_broker(remote_dsn, clock)  # one ms before the expiry: still held
    clock.advance(1)
    with open_broker(remote_dsn, clock) as heir:
        heir.create_queue("q", QueueConfig())
        row = lease_row(remote_dsn)
        assert row is not None and row != dead_holder and row[1] == T0 + 2 * TTL
    dead.close()  # its release deletes nothing: the row is not its own any more


def test_renewal_by_the_maintenance_loop_keeps_the_lease(remote_dsn: str) -> None:
    clock = FakeClock(T0)
    with open_broker(remote_dsn, clock) as holder:
        for _ in range(8):  # 80 s in all, far past one lease, at the loop's cadence
            clock.advance(defaults.LEASE_RENEW_INTERVAL_MS)
            run_maintenance_once(holder)
            row = lease_row(remote_dsn)  # pushed out before it was due, every time
            assert row is not None and row[1] == clock.now_ms() + TTL
            with pytest.raises(errors.DBLocked):
                open_broker(remote_dsn, clock)
        holder.create_queue("q", QueueConfig())


def test_a_write_after_the_local_expiry_renews_first_in_its_own_transaction(
    remote_dsn: str,
) -> None:
    """No maintenance ran (background off): the send itself re-checks and renews."""
    clock = FakeClock(T0)
    with open_broker(remote_dsn, clock) as holder:
        holder.create_queue("q", QueueConfig())
        clock.advance(TTL + 1)
        holder.send_one("q", OutMessage(body=b"x"))
        row = lease_row(remote_dsn)
        assert row is not None and row[1] == clock.now_ms() + TTL


def test_a_broker_that_lost_its_lease_stops_writing(remote_dsn: str) -> None:
    clock = FakeClock(T0)
    old = open_broker(remote_dsn, clock)
    try:
        old.create_queue("q", QueueConfig())
        clock.advance(TTL)  # the old broker stalled past its lease; a new one takes over
        with open_broker(remote_dsn, clock) as new:
            with pytest.raises(errors.DBLocked) as lost:
                old.send_one("q", OutMessage(body=b"from the old broker"))
            assert "lost its lease" in lost.value.message
            with pytest.raises(errors.DBLocked):  # fenced for good: no write reaches the server
                old.create_queue("other", QueueConfig())
            with pytest.raises(errors.DBLocked):
                run_maintenance_once(old)
            assert new.stats("q").total == 0  # nothing of the old broker's send was written
            assert [q.name for q in new.list_queues()] == ["q"]
            new.send_one("q", OutMessage(body=b"from the new broker"))
            assert new.stats("q").total == 1
    finally:
        old.close()


def test_the_maintenance_loop_reports_a_lost_lease_to_its_host_once(remote_dsn: str) -> None:
    """``serve`` passes a callback that ends the process (SIGTERM drain)."""
    clock = FakeClock(T0)
    old = open_broker(remote_dsn, clock)
    try:
        told: list[errors.DBLocked] = []
        scheduler = MaintenanceScheduler(old._engine.maintenance, on_lease_lost=told.append)
        clock.advance(TTL)
        with open_broker(remote_dsn, clock):
            for _ in range(2):
                with pytest.raises(errors.Closed):
                    scheduler._renew_lease()
        assert len(told) == 1 and "lost its lease" in told[0].message
    finally:
        old.close()


def test_a_local_file_has_no_lease_table(tmp_path: Any) -> None:
    """The file keeps its flock and exactly the golden schema of token 8."""
    with mqlite.open_embedded(f"file:{tmp_path / 'l.db'}", background=False) as local:
        assert local._engine.store.lease is None
        assert local._engine.renew_lease() is False
        tables = {r[0] for r in local._engine.store.conn.execute("SELECT name FROM sqlite_master")}
        assert "broker_lease" not in tables
