"""Closing a kombu connection gives back at once what it held (AMQP requeues a closed
channel's unacked messages), instead of leaving it locked until the locks expire.

Three places a claimed message can be when a worker's connection closes: handed to a
consumer and not acked (``basic_recover``), claimed by a long poll and waiting in the
inbox (``Transport._give_back_inbox``), or claimed after the close by a poll that was
parked in the broker when the consumer stopped (``Poller._give_back``). The queues lock
for 60 s, so a message that came back within the tests' few-second deadlines was given
back, not expired. Embedded database file, kombu's own API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import mqlite.kombu  # noqa: F401  (the alias)
from kombu import Connection, Consumer, Exchange, Producer, Queue
from mqlite import testing
from waiting import wait_for_condition

LOCK = {"visibility_timeout": 60}


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"mqlite+file://{tmp_path / 'mq.db'}"


def publish(conn: Connection, q: Queue, n: int) -> None:
    producer = Producer(conn)
    for i in range(n):
        producer.publish(i, exchange=q.exchange, routing_key=q.routing_key, declare=[q])


def test_closing_requeues_delivered_unacked_and_claimed_undelivered_messages(url: str) -> None:
    q = Queue("held", Exchange("held"), "held")
    with Connection(url, transport_options=LOCK) as observer:
        observer.connect()
        mq = observer.transport.mq
        worker = Connection(url, transport_options=LOCK)
        publish(worker, q, 5)
        got: list[Any] = []
        Consumer(worker, [q], callbacks=[lambda body, m: got.append(m)], prefetch_count=5).consume()
        worker.drain_events(timeout=5)  # one handed over; the other four wait in the inbox
        inbox = worker.transport.inbox  # a second Receive may still be filling it
        # Each put notifies the inbox's condition: wake on it, not on a timer.
        wait_for_condition(inbox.not_empty, lambda: len(inbox.queue) == 4, "four in the inbox", 5)
        assert len(got) == 1 and mq.stats("held").locked == 5
        worker.release()
        stats = mq.stats("held")
        assert (stats.active, stats.locked) == (5, 0)  # at once, not in 60 s
        assert [m.delivery_count for m in mq.peek("held")] == [1] * 5


def test_a_poll_parked_at_close_gives_back_what_it_claims_afterwards(url: str) -> None:
    q = Queue("late", Exchange("late"), "late")
    with Connection(url, transport_options=LOCK) as producer:
        producer.connect()
        mq = producer.transport.mq
        q(producer.default_channel).declare()
        worker = Connection(url, transport_options=LOCK)
        Consumer(worker, [q], callbacks=[lambda body, m: None]).consume()
        (poller,) = worker.default_channel._pollers.values()
        parked = testing.engine(mq).notifier.wait_for_waiters("late", timeout_s=5)
        assert parked, "the poll never parked in its Receive"
        worker.release()  # the client stays open: the producer's connection shares it
        publish(producer, q, 1)  # the closed worker's parked poll claims it, then gives it back

        poller._thread.join(5)  # the poll gives back what it claimed, then ends
        assert not poller._thread.is_alive()
        (m,) = mq.peek("late")
        assert (m.delivery_count, mq.stats("late").locked) == (1, 0)
