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

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mqlite.kombu  # noqa: F401  (the alias)
from kombu import Connection, Consumer, Exchange, Producer, Queue

LOCK = {"visibility_timeout": 60}


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"mqlite+file://{tmp_path / 'mq.db'}"


def until(what: str, probe: Callable[[], bool], deadline_s: float = 5.0) -> None:
    deadline = time.monotonic() + deadline_s
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def parked(thread: threading.Thread) -> bool:
    """The thread waits inside a Receive (its stack, read from the interpreter)."""
    frame = sys._current_frames().get(thread.ident or -1)
    names = []
    while frame is not None:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return bool(names) and names[0] == "wait" and "receive" in names


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
        until("five claims, four in the inbox", lambda: inbox.qsize() == 4)
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
        until("the poll to park in its Receive", lambda: parked(poller._thread))
        worker.release()  # the client stays open: the producer's connection shares it
        publish(producer, q, 1)  # the closed worker's parked poll claims it, then gives it back

        def given_back() -> bool:
            (m,) = mq.peek("late")
            return m.delivery_count == 1 and mq.stats("late").locked == 0

        until("the late claim to come back", given_back)
        assert not poller._thread.is_alive()
