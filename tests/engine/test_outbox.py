"""The transactional outbox: your SQL and mqlite's enqueue share one transaction."""

from __future__ import annotations

import pytest

import mqlite
from mqlite import OutMessage, errors, testing


@pytest.fixture
def mq(engine: mqlite.EmbeddedClient) -> mqlite.EmbeddedClient:
    engine.create_queue("events")
    with engine.tx() as tx:
        tx.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER)")
    return engine


def count_orders(mq: mqlite.EmbeddedClient) -> int:
    with mq.tx() as tx:
        return int(tx.execute("SELECT count(*) FROM orders").fetchone()[0])


def test_commit_writes_the_row_and_the_message(mq: mqlite.EmbeddedClient) -> None:
    with mq.tx() as tx:
        tx.execute("INSERT INTO orders(id, total) VALUES (?, ?)", (42, 1999))
        seq = tx.send_one("events", OutMessage(body=b'{"order":42}'))
    assert count_orders(mq) == 1
    assert [m.seq_number for m in mq.receive("events")] == [seq]


def test_an_exception_rolls_back_both(mq: mqlite.EmbeddedClient) -> None:
    with pytest.raises(RuntimeError), mq.tx() as tx:
        tx.execute("INSERT INTO orders(id, total) VALUES (?, ?)", (42, 1999))
        tx.send_one("events", OutMessage(body=b"x"))
        raise RuntimeError("business rule failed")
    assert count_orders(mq) == 0
    assert mq.stats("events").total == 0


def test_a_failing_send_inside_undoes_only_itself(mq: mqlite.EmbeddedClient) -> None:
    mq.create_queue("g", mqlite.QueueConfig(ordering_mode="group_fifo"))
    with mq.tx() as tx:
        tx.execute("INSERT INTO orders(id, total) VALUES (1, 1)")
        with pytest.raises(errors.GroupRequired):
            tx.send("g", [OutMessage(body=b"a", group_id="x"), OutMessage(body=b"b")])
        tx.send_one("events", OutMessage(body=b"ok"))
    assert count_orders(mq) == 1
    assert mq.stats("g").total == 0
    assert mq.stats("events").total == 1


def test_long_polls_are_woken_only_after_commit(mq: mqlite.EmbeddedClient) -> None:
    woken: list[str] = []
    testing.engine(mq).notifier.register("events", lambda: woken.append("events"))
    with mq.tx() as tx:
        tx.send_one("events", OutMessage(body=b"x"))
        assert woken == []
    assert woken == ["events"]


def test_no_wake_up_for_a_rolled_back_send(mq: mqlite.EmbeddedClient) -> None:
    woken: list[str] = []
    waiter = testing.engine(mq).notifier.register("events", lambda: woken.append("events"))
    with pytest.raises(ValueError), mq.tx() as tx:
        tx.send_one("events", OutMessage(body=b"x"))
        raise ValueError
    assert woken == []
    waiter.cancel()


def test_engine_verbs_called_inside_the_block_join_the_transaction(
    mq: mqlite.EmbeddedClient,
) -> None:
    with pytest.raises(KeyError), mq.tx() as tx:
        tx.execute("INSERT INTO orders(id, total) VALUES (7, 7)")
        mq.send_one("events", OutMessage(body=b"joined"))
        raise KeyError
    assert mq.stats("events").total == 0
