"""Conformance: DeleteQueue (docs v0.3.3, AdminService.DeleteQueue). Only empty plain
queues; every message state blocks; the generation fences retries; auxiliary records
go with the queue; sequence numbers are never reset."""

from __future__ import annotations

import pytest
from conformance_support import seqs, state_of

from mqlite import OutMessage, QueueConfig, errors


def _generation(mq, name):
    (info,) = [i for i in mq.list_queues() if i.name == name]
    return info.generation


def _names(mq):
    return {i.name for i in mq.list_queues()}


def test_delete_queue_removes_an_empty_plain_queue(mq, make_queue):
    q = make_queue("orders")
    keep = make_queue("keep")
    mq.delete_queue(q)
    assert _names(mq) == {keep}
    with pytest.raises(errors.QueueNotFound):
        mq.send_one(q, OutMessage(body=b"x"))
    with pytest.raises(errors.QueueNotFound):
        mq.receive(q)


def test_delete_queue_with_the_current_generation(mq, make_queue):
    q = make_queue()
    gen = _generation(mq, q)
    assert isinstance(gen, str) and gen
    mq.delete_queue(q, generation=gen)
    assert q not in _names(mq)


def test_delete_queue_after_draining(mq, make_queue):
    q = make_queue()
    mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q)
    with pytest.raises(errors.QueueNotEmpty):
        mq.delete_queue(q)
    m.complete()
    mq.delete_queue(q)
    assert q not in _names(mq)


@pytest.mark.parametrize("state", ["active", "locked", "deferred", "scheduled", "dead_lettered"])
def test_delete_queue_every_state_blocks(mq, make_queue, clock, state):
    q = make_queue()
    if state == "scheduled":
        (seq,) = mq.schedule(q, [OutMessage(body=b"x")], at_ms=clock.now_ms() + 60_000)
    else:
        seq = mq.send_one(q, OutMessage(body=b"x"))
        if state != "active":
            (m,) = mq.receive(q)
            if state == "deferred":
                m.defer()
            elif state == "dead_lettered":
                m.reject()
    assert state_of(mq, q, seq) == state
    gen = _generation(mq, q)
    with pytest.raises(errors.QueueNotEmpty) as exc:
        mq.delete_queue(q, generation=gen)
    assert (exc.value.code, exc.value.http_status) == ("queue_not_empty", 409)
    assert q in _names(mq)
    assert _generation(mq, q) == gen
    assert state_of(mq, q, seq) == state


def test_delete_queue_stale_generation_is_queue_changed(mq, make_queue):
    q = make_queue()
    old = _generation(mq, q)
    mq.delete_queue(q, generation=old)
    make_queue(q)
    new = _generation(mq, q)
    assert new != old
    with pytest.raises(errors.QueueChanged) as exc:
        mq.delete_queue(q, generation=old)
    assert (exc.value.code, exc.value.http_status) == ("queue_changed", 409)
    assert q in _names(mq)
    mq.delete_queue(q, generation=new)


def test_delete_queue_unknown_is_not_found(mq, make_queue):
    with pytest.raises(errors.NotFound) as exc:
        mq.delete_queue("no-such-queue")
    assert exc.value.http_status == 404
    q = make_queue()
    gen = _generation(mq, q)
    mq.delete_queue(q, generation=gen)
    with pytest.raises(errors.NotFound):
        mq.delete_queue(q, generation=gen)  # a retry after success: the name is gone


def test_delete_queue_recreate_gets_a_new_generation(mq, make_queue):
    q = make_queue()
    first = _generation(mq, q)
    mq.delete_queue(q)
    make_queue(q)
    second = _generation(mq, q)
    mq.delete_queue(q)
    make_queue(q)
    assert len({first, second, _generation(mq, q)}) == 3


def test_delete_queue_reconfiguration_preserves_the_generation(mq, make_queue):
    q = make_queue(lock_duration_ms=10_000)
    gen = _generation(mq, q)
    mq.create_queue(q, QueueConfig(lock_duration_ms=20_000, max_delivery_count=3))
    assert _generation(mq, q) == gen
    (info,) = [i for i in mq.list_queues() if i.name == q]
    assert (info.config.lock_duration_ms, info.config.max_delivery_count) == (20_000, 3)


def test_delete_queue_does_not_reset_sequence_numbers(mq, make_queue):
    q = make_queue()
    first = mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q)
    m.complete()
    mq.delete_queue(q)
    make_queue(q)
    assert mq.send_one(q, OutMessage(body=b"x")) > first


def test_delete_queue_removes_dedup_records(mq, make_queue):
    q = make_queue(dedup_window_ms=600_000)
    first = mq.send_one(q, OutMessage(body=b"x", message_id="m1"))
    (m,) = mq.receive(q)
    m.complete()
    assert mq.send_one(q, OutMessage(body=b"x", message_id="m1")) == first  # still deduped
    mq.delete_queue(q)
    make_queue(q, dedup_window_ms=600_000)
    fresh = mq.send_one(q, OutMessage(body=b"y", message_id="m1"))  # no conflict either
    assert fresh > first
    assert mq.stats(q).total == 1


def test_delete_queue_removes_settlement_receipts(mq, make_queue):
    q = make_queue()
    seq = mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q)
    m.complete()
    mq.complete(q, seq, m.lock_token)  # the receipt replays
    mq.delete_queue(q)
    make_queue(q)
    with pytest.raises(errors.LockLost):
        mq.complete(q, seq, m.lock_token)


def test_delete_queue_removes_receive_attempt_records(mq, make_queue):
    q = make_queue()
    mq.send_one(q, OutMessage(body=b"x"))
    (m,) = mq.receive(q, attempt_id="a1")
    m.complete()
    mq.delete_queue(q)
    make_queue(q)
    fresh = mq.send_one(q, OutMessage(body=b"y"))
    got = mq.receive(q, attempt_id="a1")
    assert seqs(got) == [fresh]


def test_delete_queue_subscription_backing_queue_is_invalid_argument(mq):
    mq.subscribe("topic", "sub")
    assert "sub" in _names(mq)
    with pytest.raises(errors.InvalidArgument) as exc:
        mq.delete_queue("sub")
    assert exc.value.http_status == 400
    with pytest.raises(errors.InvalidArgument):
        mq.delete_queue("sub", generation=_generation(mq, "sub"))
    assert "sub" in _names(mq)
