"""The free-space floor without a small filesystem (issue 27 item 6: the second catcher,
besides the root-only tmpfs tests of test_disk_full.py): ``os.statvfs`` reports what the
test says, time is the FakeClock's.

The promise: a send that would take the filesystem below the floor is refused with
``StorageFull`` (retryable), counting what earlier sends enqueued since the last look at
the disk; claims, settlements and purges are never refused by it (consumers drain); sends
are accepted again once space is back.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from mqlite import OutMessage, errors
from mqlite.clock import FakeClock
from mqlite.engine import DiskLimits, Engine
from mqlite.engine.disk import REFRESH_MS, DiskGuard

MiB = 1 << 20
FLOOR = 32 * MiB


class Disk:
    """What ``statvfs`` reports for the database's directory: ``free`` bytes."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.looks = 0

    def statvfs(self, path: object) -> object:
        self.looks += 1
        return SimpleNamespace(f_bavail=self.free // 4096, f_frsize=4096)


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Disk:
    fake = Disk(1 << 40)
    monkeypatch.setattr(os, "statvfs", fake.statvfs)
    return fake


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def eng(tmp_path: Path, disk: Disk, clock: FakeClock) -> Iterator[Engine]:
    e = Engine(
        f"file:{tmp_path / 'floor.db'}",
        clock=clock,
        disk=DiskLimits(floor_bytes=FLOOR, reserve_bytes=0),
    )
    yield e
    e.close()


def look_again(clock: FakeClock) -> None:
    clock.advance(int(REFRESH_MS) + 1)


def test_sends_stop_at_the_floor_and_consumers_still_drain(
    eng: Engine, disk: Disk, clock: FakeClock
) -> None:
    eng.create_queue("q")
    eng.send("q", [OutMessage(b"a"), OutMessage(b"b")])
    disk.free = FLOOR - 1  # someone filled the disk
    look_again(clock)
    with pytest.raises(errors.StorageFull, match="floor"):
        eng.send_one("q", OutMessage(b"refused"))
    a, b = eng.receive("q", max_messages=2)  # claims are never refused by the floor
    eng.complete("q", a.seq_number, a.lock_token)
    eng.abandon("q", b.seq_number, b.lock_token)
    (again,) = eng.receive("q")
    eng.complete("q", again.seq_number, again.lock_token)
    assert eng.purge("q") == 0  # the DLQ's purge runs too (nothing there)
    assert [m.body for m in eng.peek("q")] == []
    disk.free = FLOOR + 10 * MiB  # space is back
    look_again(clock)
    assert eng.send_one("q", OutMessage(b"accepted")) > 0


def test_the_floor_counts_what_was_enqueued_since_the_last_look(clock: FakeClock) -> None:
    fake = Disk(FLOOR + 10 * MiB)
    guard = DiskGuard("/nowhere/db", DiskLimits(FLOOR, 0), clock.monotonic_ms)
    original = os.statvfs
    os.statvfs = fake.statvfs  # type: ignore[assignment]
    try:
        for _ in range(9):
            guard.check_send(MiB)  # within one refresh window: one look at the disk
        assert fake.looks == 1
        with pytest.raises(errors.StorageFull):
            guard.check_send(2 * MiB)  # 9 MiB enqueued + 2 MiB would cross the floor
        guard.check_send(MiB)  # exactly down to the floor still fits
        with pytest.raises(errors.StorageFull):
            guard.check_send(1)
    finally:
        os.statvfs = original


def test_a_zero_floor_never_refuses(clock: FakeClock) -> None:
    fake = Disk(0)
    guard = DiskGuard("/nowhere/db", DiskLimits(0, 0), clock.monotonic_ms)
    original = os.statvfs
    os.statvfs = fake.statvfs  # type: ignore[assignment]
    try:
        guard.check_send(MiB)
        assert fake.looks == 0  # not even a look at the disk
    finally:
        os.statvfs = original
