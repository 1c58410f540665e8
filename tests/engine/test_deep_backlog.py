"""A blocked deep backlog answers "nothing claimable" fast (conformance §1.5, §5.4, §5.5, §2.4b).

Port of the original's TestClaimDeepBacklogBounded (original-behaviour.md §11): one group
head held in flight + 20,000 active rows of the same group, on group_fifo and strict_fifo.
A Receive must return nothing, and answer in well under a second: the claim seeks the
partial index on active rows and every head-of-line probe is an index search, never a scan
(the O(n^2) war story in mqlite-docs "Staying fast"). The head is held in each way the spec
lists as a blocker: a live lock, an expired-but-unreaped lock, a deferral and a backoff
(Abandon with delay). After the timed checks the head is released the spec's way and must
be delivered first.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mqlite import OutMessage, QueueConfig
from mqlite.clock import FakeClock
from mqlite.testing import run_maintenance_once

Q = "deep"
BACKLOG = 20_000
SEND_BATCH = 500
LOCK_MS = 30_000
BACKOFF_MS = 60_000
BOUND_S = 1.0  # the issue asks for this one timing assertion (upstream: 3 s)


def _timed_receive(mq: Any, max_messages: int) -> tuple[list[Any], float]:
    t0 = time.thread_time()
    got = mq.receive(Q, max_messages=max_messages, wait_ms=0)
    return got, time.thread_time() - t0


@pytest.mark.parametrize("blocker", ["locked", "expired_lock", "deferred", "backoff"])
@pytest.mark.parametrize("mode", ["group_fifo", "strict_fifo"])
def test_blocked_deep_backlog_answers_nothing_fast(
    engine: Any, clock: FakeClock, mode: str, blocker: str
) -> None:
    """``engine``/``clock``: tests/conftest.py (file DB, FakeClock, background off)."""
    mq = engine
    mq.create_queue(Q, QueueConfig(lock_duration_ms=LOCK_MS, ordering_mode=mode))
    head_seq = mq.send_one(Q, OutMessage(body=b"head", group_id="g"))
    [head] = mq.receive(Q, max_messages=1, wait_ms=0)
    assert head.seq_number == head_seq

    if blocker == "expired_lock":
        clock.advance(LOCK_MS + 1)  # expired but not reaped: still blocks (§5.4)
    elif blocker == "deferred":
        head.defer()
    elif blocker == "backoff":
        head.abandon(delay_ms=BACKOFF_MS)

    body = b"x" * 64
    first_backlog = 0
    for start in range(0, BACKLOG, SEND_BATCH):
        n = min(SEND_BATCH, BACKLOG - start)
        seqs = mq.send(Q, [OutMessage(body=body, group_id="g") for _ in range(n)])
        first_backlog = first_backlog or seqs[0]
    stats = mq.stats(Q)
    assert stats.active == BACKLOG and stats.total == BACKLOG + 1

    for max_messages in (1, 64):
        got, elapsed = _timed_receive(mq, max_messages)
        assert got == [], f"{mode}/{blocker}: a blocked successor was delivered: {got[:1]}"
        assert elapsed < BOUND_S, (
            f"{mode}/{blocker}: receive(max={max_messages}) over a {BACKLOG}-row blocked "
            f"backlog took {elapsed:.3f} s (bound {BOUND_S} s)"
        )

    if mode == "group_fifo":
        # Another group behind the whole blocked backlog still proceeds, just as fast (§2.2c).
        other = mq.send_one(Q, OutMessage(body=b"other", group_id="h"))
        got, elapsed = _timed_receive(mq, 1)
        assert [m.seq_number for m in got] == [other]
        assert elapsed < BOUND_S, f"claiming past a blocked backlog took {elapsed:.3f} s"
        got[0].complete()

    # Release the head the spec's way: it is delivered first, then its successor.
    if blocker == "locked":
        head.complete()
        expect_first = first_backlog
    elif blocker == "expired_lock":
        run_maintenance_once(mq)  # reaper: redelivered first with count + 1 (§5.4)
        expect_first = head_seq
    elif blocker == "deferred":
        [again] = mq.receive_deferred(Q, [head_seq])
        again.complete()
        expect_first = first_backlog
    else:
        clock.advance(BACKOFF_MS)
        run_maintenance_once(mq)  # scheduler re-activates the parked head (§5.5)
        expect_first = head_seq
    got, elapsed = _timed_receive(mq, 64)
    assert [m.seq_number for m in got] == [expect_first], "one message of the group, in order"
    if expect_first == head_seq:
        assert got[0].delivery_count == 2
        got[0].complete()
        got, _ = _timed_receive(mq, 64)
        assert [m.seq_number for m in got] == [first_backlog]
    assert elapsed < BOUND_S
