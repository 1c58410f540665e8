"""§12 Topics & naming: one flat, disjoint namespace; send resolution topic-first."""

from __future__ import annotations

from typing import Any

import pytest

from mqlite import OutMessage, QueueConfig, errors


def names(mq: Any) -> list[tuple[str, str]]:
    return [(q.name, q.kind) for q in mq.list_queues()]


def test_12_1_subscribe_creates_the_backing_queue_in_one_call(mq: Any) -> None:
    info = mq.subscribe("events", "audit")
    assert info.kind == "subscription"
    assert names(mq) == [("audit", "subscription")]
    assert [(s.topic, s.name, s.expr) for s in mq.list_subscriptions()] == [("events", "audit", "")]


def test_12_1_topic_naming_an_existing_queue_is_a_name_conflict(mq: Any) -> None:
    mq.create_queue("orders")
    with pytest.raises(errors.NameConflict):
        mq.subscribe("orders", "audit")
    assert names(mq) == [("orders", "queue")]


def test_12_1_topic_naming_an_existing_subscription_is_a_name_conflict(mq: Any) -> None:
    mq.subscribe("events", "audit")
    with pytest.raises(errors.NameConflict):
        mq.subscribe("audit", "other")
    assert names(mq) == [("audit", "subscription")]


def test_12_1_subscription_name_of_a_plain_queue_is_a_name_conflict(mq: Any) -> None:
    mq.create_queue("orders")
    with pytest.raises(errors.NameConflict):
        mq.subscribe("events", "orders")
    assert mq.list_subscriptions() == []


def test_12_1_subscription_of_another_topic_is_a_name_conflict(mq: Any) -> None:
    mq.subscribe("events", "audit")
    with pytest.raises(errors.NameConflict):
        mq.subscribe("other-events", "audit")
    assert [(s.topic, s.name) for s in mq.list_subscriptions()] == [("events", "audit")]


def test_12_1_subscription_name_that_is_a_live_topic_is_a_name_conflict(mq: Any) -> None:
    mq.subscribe("events", "audit")
    with pytest.raises(errors.NameConflict):
        mq.subscribe("other", "events")


def test_12_1_topic_equal_to_name_is_a_name_conflict(mq: Any) -> None:
    with pytest.raises(errors.NameConflict):
        mq.subscribe("same", "same")
    assert names(mq) == []


def test_12_1_create_queue_on_a_live_topic_is_a_name_conflict(mq: Any) -> None:
    mq.subscribe("events", "audit")
    with pytest.raises(errors.NameConflict):
        mq.create_queue("events")
    assert names(mq) == [("audit", "subscription")]


def test_12_1_cross_kind_upserts_are_name_conflicts(mq: Any) -> None:
    mq.create_queue("orders")
    mq.subscribe("events", "audit")
    with pytest.raises(errors.NameConflict):
        mq.create_queue("audit")  # plain create over a backing queue
    with pytest.raises(errors.NameConflict):
        mq.create_queue("orders", QueueConfig(kind="subscription"))
    assert names(mq) == [("audit", "subscription"), ("orders", "queue")]


def test_12_1_same_kind_upserts_and_resubscribe_succeed(mq: Any) -> None:
    mq.create_queue("orders")
    mq.create_queue("orders", QueueConfig(max_delivery_count=3))
    mq.subscribe("events", "audit")
    mq.create_queue("audit", QueueConfig(kind="subscription", lock_duration_ms=5_000))
    mq.subscribe("events", "audit")  # re-subscribe: keeps the backing queue's config
    by_name = {q.name: q for q in mq.list_queues()}
    assert by_name["orders"].config.max_delivery_count == 3
    assert by_name["audit"].config.lock_duration_ms == 5_000


def test_12_2_send_to_a_topic_fans_out_one_copy_per_subscription(mq: Any) -> None:
    mq.subscribe("events", "audit")
    mq.subscribe("events", "billing")
    seq = mq.send_one("events", OutMessage(body=b"x", message_id="m1"))
    audit = mq.receive("audit")
    billing = mq.receive("billing")
    assert len(audit) == len(billing) == 1
    assert audit[0].message_id == billing[0].message_id == "m1"
    assert audit[0].seq_number != billing[0].seq_number
    assert seq == billing[0].seq_number  # the last accepting subscription's seq


def test_12_2_send_to_an_unknown_name_is_not_found(mq: Any) -> None:
    with pytest.raises(errors.NotFound):
        mq.send_one("nothing", OutMessage(body=b"x"))


def test_12_2_send_to_a_backing_queue_name_bypasses_the_topic(mq: Any) -> None:
    mq.subscribe("events", "audit")
    mq.subscribe("events", "billing")
    mq.send_one("audit", OutMessage(body=b"direct"))
    assert mq.stats("audit").total == 1
    assert mq.stats("billing").total == 0


def test_12_2_each_copy_has_its_own_dedup_ordering_and_dlq(mq: Any) -> None:
    mq.subscribe("events", "a")
    mq.subscribe("events", "b")
    mq.create_queue("a", QueueConfig(kind="subscription", dedup_window_ms=60_000))
    mq.send_one("events", OutMessage(body=b"x", message_id="m"))
    mq.send_one("events", OutMessage(body=b"x", message_id="m"))
    assert mq.stats("a").total == 1  # deduped in a
    assert mq.stats("b").total == 2  # b has no window
    (m,) = mq.receive("a")
    m.reject("Bad")
    assert mq.stats("a").dead_lettered == 1
    assert mq.stats("b").dead_lettered == 0


def test_12_2_group_fifo_subscription_requires_group_and_rolls_back_all(mq: Any) -> None:
    mq.subscribe("events", "a")
    mq.subscribe("events", "b")
    mq.create_queue("b", QueueConfig(kind="subscription", ordering_mode="group_fifo"))
    with pytest.raises(errors.GroupRequired):
        mq.send("events", [OutMessage(body=b"1", group_id="g"), OutMessage(body=b"2")])
    assert mq.stats("a").total == 0


def test_unsubscribe_removes_the_subscription_its_queue_and_the_topic(mq: Any) -> None:
    mq.subscribe("events", "audit")
    mq.unsubscribe("events", "audit")
    assert names(mq) == [] and mq.list_subscriptions() == []
    with pytest.raises(errors.NotFound):
        mq.send_one("events", OutMessage(body=b"x"))  # the topic went with its last sub
    mq.create_queue("events")  # and the name is free again


def test_unsubscribe_refuses_while_the_backing_queue_holds_messages(mq: Any) -> None:
    mq.subscribe("events", "audit")
    mq.send_one("events", OutMessage(body=b"x"))
    with pytest.raises(errors.QueueNotEmpty):
        mq.unsubscribe("events", "audit")
    assert mq.stats("audit").total == 1
    with pytest.raises(errors.NotFound):
        mq.unsubscribe("events", "nobody")


def test_delete_queue_refuses_a_subscription_backing_queue(mq: Any) -> None:
    mq.subscribe("events", "audit")
    with pytest.raises(errors.InvalidArgument):
        mq.delete_queue("audit")


def test_topics_survive_a_reopen(open_mq: Any, dsn: str) -> None:
    mq = open_mq()
    mq.subscribe("events", "audit")
    mq.close()
    mq = open_mq()
    mq.send_one("events", OutMessage(body=b"x"))
    assert mq.stats("audit").total == 1
