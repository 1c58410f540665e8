"""Conformance §8: DLQ retention (age / count / bytes; per-queue 0 inherits the engine
default, >0 overrides, <0 is unbounded; only dead-lettered rows are ever auto-deleted)."""

from __future__ import annotations

from conformance_support import counts, peek_all, send_bodies

from mqlite import OutMessage, QueueConfig
from mqlite.testing import run_maintenance_once

DAY = 24 * 3_600_000


def _dead_letter(mq, q, bodies):
    s = send_bodies(mq, q, bodies)
    got = []
    while len(got) < len(s):
        got.extend(mq.receive(q, max_messages=256))
    for m in got:
        m.reject()
    return s


def _dlq(mq, q):
    return [m.seq_number for m in peek_all(mq, q, "dead_lettered")]


def test_8_1_count_bound_drops_oldest(mq, make_queue):
    q = make_queue(dlq_max_count=3)
    s = _dead_letter(mq, q, [b"%d" % i for i in range(5)])
    run_maintenance_once(mq)
    assert _dlq(mq, q) == s[2:]
    run_maintenance_once(mq)
    assert _dlq(mq, q) == s[2:]  # under the cap: nothing more goes


def test_8_1_bytes_bound_drops_oldest(mq, make_queue):
    q = make_queue(dlq_max_bytes=250)
    s = _dead_letter(mq, q, [bytes([i]) * 100 for i in range(5)])
    run_maintenance_once(mq)
    assert _dlq(mq, q) == s[3:]  # newest 200 bytes fit; the third crosses 250


def test_8_1_bytes_bound_is_inclusive(mq, make_queue):
    q = make_queue(dlq_max_bytes=300)
    s = _dead_letter(mq, q, [bytes([i]) * 100 for i in range(5)])
    run_maintenance_once(mq)
    assert _dlq(mq, q) == s[2:]


def test_8_1_age_bound_drops_old_by_enqueue_time(mq, make_queue, clock):
    q = make_queue(dlq_max_age_ms=10_000)
    (old,) = send_bodies(mq, q, [b"old"])
    clock.advance(5_000)
    (young,) = send_bodies(mq, q, [b"young"])
    for m in mq.receive(q, max_messages=2):
        m.reject()  # both dead-lettered now: age counts from enqueue, not from here
    clock.advance(5_000)  # old is exactly max_age old: kept
    run_maintenance_once(mq)
    assert _dlq(mq, q) == [old, young]
    clock.advance(1)
    run_maintenance_once(mq)
    assert _dlq(mq, q) == [young]


def test_8_1_retention_touches_only_dead_lettered_rows(mq, make_queue, clock):
    q = make_queue(dlq_max_age_ms=1, dlq_max_count=1, dlq_max_bytes=1, lock_duration_ms=DAY)
    dead = _dead_letter(mq, q, [b"dead1", b"dead2"])
    active, locked, deferred = send_bodies(mq, q, [b"active", b"locked", b"deferred"])
    (sched,) = mq.schedule(q, [OutMessage(body=b"sched")], at_ms=clock.now_ms() + DAY)
    got = {m.seq_number: m for m in mq.receive(q, max_messages=3)}
    got[active].abandon()
    got[deferred].defer()
    clock.advance(60_000)
    run_maintenance_once(mq)
    assert _dlq(mq, q) == []
    assert counts(mq, q) == (1, 1, 1, 1, 0, 4)
    assert [m.seq_number for m in peek_all(mq, q)] == [active, locked, deferred, sched]
    assert dead


def test_8_2_no_bound_means_no_auto_deletion(mq, make_queue, clock):
    q = make_queue()
    s = _dead_letter(mq, q, [b"x" * 1000 for _ in range(20)])
    clock.advance(400 * DAY)
    run_maintenance_once(mq)
    assert _dlq(mq, q) == s


def test_8_3_per_queue_zero_inherits_the_engine_default(open_mq):
    mq = open_mq(dlq_max_count=2)
    mq.create_queue("q", QueueConfig(dlq_max_count=0))
    s = _dead_letter(mq, "q", [b"1", b"2", b"3", b"4"])
    run_maintenance_once(mq)
    assert _dlq(mq, "q") == s[2:]


def test_8_3_per_queue_positive_overrides_the_engine_default(open_mq):
    mq = open_mq(dlq_max_count=2)
    mq.create_queue("q", QueueConfig(dlq_max_count=3))
    s = _dead_letter(mq, "q", [b"1", b"2", b"3", b"4", b"5"])
    run_maintenance_once(mq)
    assert _dlq(mq, "q") == s[2:]


def test_8_3_per_queue_negative_is_unbounded(open_mq, clock):
    mq = open_mq(dlq_max_count=2, dlq_max_age_ms=1_000, dlq_max_bytes=1)
    mq.create_queue("q", QueueConfig(dlq_max_count=-1, dlq_max_age_ms=-1, dlq_max_bytes=-1))
    s = _dead_letter(mq, "q", [b"1", b"2", b"3", b"4"])
    clock.advance(DAY)
    run_maintenance_once(mq)
    assert _dlq(mq, "q") == s


def test_8_3_per_queue_age_override(open_mq, clock):
    mq = open_mq(dlq_max_age_ms=DAY)
    mq.create_queue("short", QueueConfig(dlq_max_age_ms=1_000))
    mq.create_queue("inherit", QueueConfig())
    _dead_letter(mq, "short", [b"1"])
    s = _dead_letter(mq, "inherit", [b"1"])
    clock.advance(2_000)
    run_maintenance_once(mq)
    assert _dlq(mq, "short") == []
    assert _dlq(mq, "inherit") == s
    clock.advance(DAY)
    run_maintenance_once(mq)
    assert _dlq(mq, "inherit") == []


def test_8_3_engine_bytes_default_applies_per_queue(open_mq):
    mq = open_mq(dlq_max_bytes=150)
    for name in ("a", "b"):
        mq.create_queue(name, QueueConfig())
    sa = _dead_letter(mq, "a", [b"x" * 100, b"y" * 100])
    sb = _dead_letter(mq, "b", [b"z" * 100])
    run_maintenance_once(mq)
    assert _dlq(mq, "a") == sa[1:]
    assert _dlq(mq, "b") == sb
