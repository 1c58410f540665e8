"""Conformance §1: the Peek-Lock lifecycle."""

from __future__ import annotations

import time

import pytest
from conformance_support import TOKEN_RE, counts, peek_one, send_bodies, seqs, state_of

from mqlite import OutMessage
from mqlite.testing import run_maintenance_once


def test_1_1_receive_locks_active_message(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=45_000)
    seq = mq.send_one(q, OutMessage(body=b"hello", message_id="m1"))
    assert peek_one(mq, q, seq).state == "active"
    clock.advance(7)
    now = clock.now_ms()

    msgs = mq.receive(q, max_messages=1)

    assert len(msgs) == 1
    m = msgs[0]
    assert m.seq_number == seq
    assert m.queue == q
    assert m.body == b"hello"
    assert m.message_id == "m1"
    assert TOKEN_RE.match(m.lock_token), m.lock_token
    assert m.delivery_count == 1
    assert m.locked_until_ms == now + 45_000
    assert m.enqueued_at_ms == now - 7
    peeked = peek_one(mq, q, seq)
    assert peeked.state == "locked"
    assert peeked.locked_until_ms == now + 45_000
    assert peeked.lock_token == ""  # Peek never reveals the token
    assert counts(mq, q) == (0, 1, 0, 0, 0, 1)


def test_1_1_receive_returns_every_wire_field(mq, make_queue):
    q = make_queue()
    out = OutMessage(
        body=b"\x00\x01binary",
        message_id="mid",
        group_id="g",
        subject="orders.eu.new",
        correlation_id="cid",
        reply_to="rt",
        content_type="application/json",
        properties={"k": "v", "x": "y"},
    )
    seq = mq.send_one(q, out)
    (m,) = mq.receive(q)
    assert (m.seq_number, m.body, m.message_id, m.group_id, m.subject) == (
        seq,
        b"\x00\x01binary",
        "mid",
        "g",
        "orders.eu.new",
    )
    assert (m.correlation_id, m.reply_to, m.content_type) == ("cid", "rt", "application/json")
    assert m.properties == {"k": "v", "x": "y"}


def test_1_1_lock_tokens_are_unique_per_claim(mq, make_queue):
    q = make_queue()
    send_bodies(mq, q, [b"%d" % i for i in range(50)])
    msgs = mq.receive(q, max_messages=50)
    tokens = {m.lock_token for m in msgs}
    assert len(tokens) == 50
    assert all(TOKEN_RE.match(t) for t in tokens)


def test_1_2_locked_message_not_delivered_to_second_consumer(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=30_000)
    a, b = send_bodies(mq, q, [b"a", b"b"])
    first = mq.receive(q, max_messages=1)
    assert seqs(first) == [a]
    second = mq.receive(q, max_messages=10)
    assert seqs(second) == [b]
    assert mq.receive(q, max_messages=10) == []
    clock.advance(29_999)
    run_maintenance_once(mq)
    assert mq.receive(q, max_messages=10) == []
    assert counts(mq, q) == (0, 2, 0, 0, 0, 2)


def test_1_3_every_claim_increments_delivery_count(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=1_000, max_delivery_count=10)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q)
    assert m.delivery_count == 1
    m.abandon()
    (m,) = mq.receive(q)
    assert m.delivery_count == 2
    clock.advance(1_000)
    run_maintenance_once(mq)
    (m,) = mq.receive(q)
    assert m.delivery_count == 3
    assert peek_one(mq, q, seq).delivery_count == 3


def test_1_3_peek_does_not_count_as_a_delivery(mq, make_queue):
    q = make_queue()
    seq = mq.send_one(q, OutMessage(body=b"x"))
    for _ in range(3):
        assert peek_one(mq, q, seq).delivery_count == 0
    (m,) = mq.receive(q)
    assert m.delivery_count == 1


def test_1_4_reaper_redelivers_or_dead_letters_at_max(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=1_000, max_delivery_count=2)
    seq = mq.send_one(q, OutMessage(body=b"x"))

    (m,) = mq.receive(q)
    assert m.delivery_count == 1
    clock.advance(1_000)
    run_maintenance_once(mq)
    assert state_of(mq, q, seq) == "active"

    (m,) = mq.receive(q)
    assert m.delivery_count == 2
    clock.advance(1_000)
    run_maintenance_once(mq)
    dead = peek_one(mq, q, seq)
    assert dead.state == "dead_lettered"
    assert dead.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert dead.delivery_count == 2
    assert mq.receive(q, max_messages=10) == []
    assert counts(mq, q) == (0, 0, 0, 0, 1, 1)


def test_1_4_reaper_boundary_locked_until_equal_now_is_reaped(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=5_000)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    mq.receive(q)
    clock.advance(4_999)
    run_maintenance_once(mq)
    assert state_of(mq, q, seq) == "locked"
    clock.advance(1)
    run_maintenance_once(mq)
    m = peek_one(mq, q, seq)
    assert m.state == "active"
    assert m.lock_token == ""


def test_1_4_claim_never_reclaims_an_expired_unreaped_lock(mq, make_queue, clock):
    q = make_queue(lock_duration_ms=1_000)
    seq = mq.send_one(q, OutMessage(body=b"x"))
    (first,) = mq.receive(q)
    clock.advance(10_000)  # long expired, but the reaper has not run
    assert mq.receive(q, max_messages=10) == []
    assert state_of(mq, q, seq) == "locked"
    assert counts(mq, q)[1] == 1
    run_maintenance_once(mq)
    (again,) = mq.receive(q)
    assert again.seq_number == seq
    assert again.delivery_count == 2
    assert again.lock_token != first.lock_token


@pytest.mark.parametrize("mode", ["group_fifo", "strict_fifo"])
def test_1_5_claim_stays_bounded_on_a_deep_blocked_backlog(mq, make_queue, mode):
    q = make_queue(ordering_mode=mode, lock_duration_ms=3_600_000)
    mq.send_one(q, OutMessage(body=b"head", group_id="g"))
    (head,) = mq.receive(q)
    assert head.body == b"head"
    for _ in range(20):
        mq.send(q, [OutMessage(body=b"x", group_id="g") for _ in range(1_000)])
    assert mq.stats(q).active == 20_000

    started = time.monotonic()
    got = mq.receive(q, max_messages=256)
    elapsed = time.monotonic() - started

    assert got == []
    assert elapsed < 3.0, f"nothing-claimable answer took {elapsed:.2f}s on a 20k backlog"
