"""Conformance: EnsureQueue (issue 31 item 1). "Make sure it exists" at start-up must never
reset a queue another process configured: an absent name is created with the config
asked for; an existing queue is left exactly as it is and its differences reported, or
(``strict``) refused with ``QueueConfigDiffers``. One conditional write, no race."""

from __future__ import annotations

import threading

import pytest

from mqlite import OutMessage, QueueConfig, errors

FIFO = QueueConfig(ordering_mode="strict_fifo", dedup_window_ms=600_000)


def test_ensure_queue_creates_an_absent_queue_with_its_config(mq):
    found = mq.ensure_queue("orders", FIFO)
    assert found.created and found.differs == ()
    assert found.queue.config.ordering_mode == "strict_fifo"
    assert mq.get_queue("orders") == found.queue


def test_ensure_queue_leaves_an_existing_queue_as_it_is_and_reports_differences(mq):
    mq.create_queue("orders", FIFO)
    before = mq.get_queue("orders")
    found = mq.ensure_queue("orders")  # the usual start-up call, every default
    assert not found.created
    assert found.differs == ("dedup_window_ms", "ordering_mode")
    assert found.queue == before
    assert mq.get_queue("orders") == before  # not reset (create_queue would have)


def test_ensure_queue_with_the_same_config_reports_no_difference(mq):
    mq.ensure_queue("orders", FIFO)
    found = mq.ensure_queue("orders", FIFO, strict=True)
    assert (found.created, found.differs) == (False, ())


def test_ensure_queue_strict_refuses_a_different_config_and_changes_nothing(mq):
    mq.create_queue("orders", FIFO)
    before = mq.get_queue("orders")
    with pytest.raises(errors.QueueConfigDiffers) as e:
        mq.ensure_queue("orders", QueueConfig(), strict=True)
    assert "dedup_window_ms" in str(e.value) and "ordering_mode" in str(e.value)
    assert isinstance(e.value, errors.NameConflict)
    assert mq.get_queue("orders") == before


def test_ensure_queue_keeps_the_messages_and_generation(mq):
    mq.create_queue("orders", FIFO)
    mq.send_one("orders", OutMessage(body=b"x"))
    gen = mq.get_queue("orders").generation
    mq.ensure_queue("orders")
    assert mq.get_queue("orders").generation == gen
    assert mq.stats("orders").active == 1


def test_ensure_queue_refuses_a_name_of_another_kind(mq):
    mq.create_queue("orders")
    mq.subscribe("events", "audit")
    with pytest.raises(errors.NameConflict):
        mq.ensure_queue("events")  # a live topic
    with pytest.raises(errors.NameConflict):
        mq.ensure_queue("audit")  # a subscription's backing queue


def test_ensure_queue_racing_callers_create_once(mq):
    """Many start-ups at once: exactly one creates, with its config; none resets it."""
    results = []

    def start(i: int) -> None:
        results.append(mq.ensure_queue("orders", QueueConfig(max_delivery_count=i + 1)))

    threads = [threading.Thread(target=start, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (winner,) = [r for r in results if r.created]
    final = mq.get_queue("orders")
    assert final.config.max_delivery_count == winner.queue.config.max_delivery_count
    assert all(r.queue == final for r in results)
    assert sum(1 for r in results if r.differs == ("max_delivery_count",)) == 7


def test_ensure_queue_bad_arguments_are_invalid_argument(mq):
    with pytest.raises(errors.InvalidArgument):
        mq.ensure_queue("")
    with pytest.raises(errors.InvalidArgument):
        mq.ensure_queue("q", strict="yes")
