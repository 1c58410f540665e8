"""A full disk, for real: the database on a small tmpfs that fills up.

Sends stop at the free-space floor with ``StorageFull`` (503, retryable), and consumers
keep draining; when something else fills the disk to the last byte, the reserve file is
released so receives, settlements and purges still commit; a database on a full disk
still opens. No sqlite3 exception and no 500 reaches the caller.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, errors, testing

MiB = 1 << 20
BODY = bytes(range(256)) * 256  # 64 KiB: stored in the bodies table


def fill(directory: Path, leave_bytes: int = 0) -> Path:
    """Write a filler file until only ``leave_bytes`` are free (ENOSPC ends it early)."""
    filler = directory / "filler"
    with open(filler, "ab") as f:
        while True:
            st = os.statvfs(directory)
            free = st.f_bavail * st.f_frsize
            if free <= leave_bytes:
                break
            try:
                f.write(bytes(min(MiB, max(free - leave_bytes, 4096))))
                f.flush()
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    break
                raise
    return filler


def open_on(directory: Path, **options: object) -> mqlite.EmbeddedClient:
    options.setdefault("disk_floor_bytes", 6 * MiB)
    options.setdefault("disk_reserve_bytes", 2 * MiB)
    return mqlite.open_embedded(f"file:{directory / 'mq.db'}", background=False, **options)  # type: ignore[arg-type]


def send_until_refused(mq: mqlite.EmbeddedClient) -> tuple[int, errors.MQLiteError]:
    for sent in range(10_000):
        try:
            mq.send_one("q", OutMessage(BODY))
        except errors.MQLiteError as exc:
            return sent, exc
    raise AssertionError("the disk never filled")


def drain(mq: mqlite.EmbeddedClient) -> int:
    done = 0
    while got := mq.receive("q", max_messages=16):
        mq.complete_batch("q", [(m.seq_number, m.lock_token) for m in got])
        done += len(got)
    return done


def test_sends_stop_at_the_floor_and_consumers_drain(tmpfs: Path) -> None:
    mq = open_on(tmpfs)
    try:
        mq.create_queue("q", QueueConfig(lock_duration_ms=600_000))
        sent, refusal = send_until_refused(mq)
        assert isinstance(refusal, errors.StorageFull)
        assert (refusal.code, refusal.http_status, refusal.reason) == (
            "unavailable",
            503,
            "storage_full",
        )
        assert "floor" in refusal.message
        st = os.statvfs(tmpfs)
        assert st.f_bavail * st.f_frsize > 0  # refused BEFORE the disk was full
        assert sent > 0 and mq.stats("q").active == sent
        assert drain(mq) == sent  # every acknowledged message comes out
        assert mq.stats("q").total == 0
    finally:
        mq.close()


def test_a_disk_filled_by_someone_else_releases_the_reserve_and_drains(tmpfs: Path) -> None:
    mq = open_on(tmpfs)
    try:
        mq.create_queue("q", QueueConfig(lock_duration_ms=600_000))
        seqs = [mq.send_one("q", OutMessage(BODY)) for _ in range(20)]
        testing.engine(mq).tend_disk()  # the reserve exists while there is room
        reserve = tmpfs / "mq.db.reserve"
        assert reserve.stat().st_size == 2 * MiB
        fill(tmpfs)  # another process takes the last byte
        outcomes: list[object] = []
        for _ in range(5):  # claims write WAL frames: the first may meet the full disk
            try:
                got = mq.receive("q", max_messages=20)
            except errors.StorageFull as exc:
                outcomes.append(exc)
                continue
            outcomes.append(got)
            break
        assert not reserve.exists()  # released so the drain has room
        got = outcomes[-1]
        assert isinstance(got, list) and sorted(m.seq_number for m in got) == seqs
        results = mq.complete_batch("q", [(m.seq_number, m.lock_token) for m in got])
        assert all(r.ok for r in results)
        assert mq.stats("q").total == 0
        with pytest.raises(errors.StorageFull):  # and producers are still refused
            mq.send_one("q", OutMessage(BODY))
    finally:
        mq.close()


def test_a_database_on_a_full_disk_still_opens_and_drains(tmpfs: Path) -> None:
    mq = open_on(tmpfs)
    mq.create_queue("q", QueueConfig(lock_duration_ms=600_000))
    for _ in range(20):
        mq.send_one("q", OutMessage(BODY))
    testing.engine(mq).tend_disk()
    assert len(mq.receive("q")) == 1  # one lease in flight when the process goes away
    mq.close()
    fill(tmpfs)
    again = open_on(tmpfs)  # the open releases the reserve first (WAL and -shm must fit)
    try:
        assert not (tmpfs / "mq.db.reserve").exists()
        assert drain(again) == 20
    finally:
        again.close()


def test_a_failed_commit_on_a_full_disk_leaves_no_ghost_queue(tmpfs: Path) -> None:
    mq = open_on(tmpfs, disk_reserve_bytes=0)
    try:
        mq.create_queue("q")
        filler = fill(tmpfs)
        for i in range(10):
            with contextlib.suppress(errors.StorageFull):
                mq.create_queue(f"ghost-{i}")
        filler.unlink()
        names = {q.name for q in mq.list_queues()}
        for i in range(10):
            if f"ghost-{i}" not in names:  # refused by the full disk: not even in memory
                with pytest.raises(errors.QueueNotFound):
                    mq.get_queue(f"ghost-{i}")
                with pytest.raises(errors.QueueNotFound):
                    mq.send_one(f"ghost-{i}", OutMessage(b"x"))
        assert len(names) < 11, "the disk was never full"
    finally:
        mq.close()
