"""The kombu transport in this process, on an embedded database file: kombu's own API
(connections, producers, consumers, exchanges) against what mqlite then holds. Waits are
kombu's ``drain_events(timeout=...)``, which returns the moment a message arrives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mqlite.kombu  # noqa: F401  (the alias)
from kombu import Connection, Consumer, Exchange, Producer, Queue
from mqlite import errors
from mqlite.kombu import clients, mapping
from mqlite.kombu.transport import Options
from mqlite.types import OutMessage, State


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"mqlite+file://{tmp_path / 'mq.db'}"


@pytest.fixture
def conn(url: str) -> Iterator[Connection]:
    with Connection(url) as c:
        c.connect()
        yield c


def mq(conn: Connection) -> Any:
    return conn.transport.mq


def drain(conn: Connection, got: list[Any], n: int, timeout: float = 5.0) -> None:
    while len(got) < n:
        conn.drain_events(timeout=timeout)


def test_publish_consume_ack_are_send_receive_complete(conn: Connection) -> None:
    q = Queue("jobs", Exchange("jobs"), "jobs")
    Producer(conn).publish({"n": 1}, exchange=q.exchange, routing_key="jobs", declare=[q],
                           headers={"task": "t.x", "id": "id-1"})  # fmt: skip
    (peeked,) = mq(conn).peek("jobs")
    assert (peeked.message_id, peeked.subject, peeked.body) == ("id-1", "jobs", b'{"n": 1}')
    got: list[Any] = []
    with Consumer(conn, [q], callbacks=[lambda body, m: got.append((body, m))]):
        drain(conn, got, 1)
        assert mq(conn).stats("jobs").locked == 1
        body, message = got[0]
        assert body == {"n": 1} and message.headers["task"] == "t.x"
        assert message.delivery_info["redelivered"] is False
        message.ack()
    assert mq(conn).stats("jobs").total == 0


def test_requeue_is_abandon_and_reject_is_the_dlq_with_a_reason(conn: Connection) -> None:
    q = Queue("work", Exchange("work"), "work")
    producer = Producer(conn)
    producer.publish("a", exchange=q.exchange, routing_key="work", declare=[q])
    got: list[Any] = []
    with Consumer(conn, [q], callbacks=[lambda body, m: got.append(m)]):
        drain(conn, got, 1)
        got[0].requeue()
        drain(conn, got, 2)
        assert got[1].delivery_info["redelivered"] is True
        got[1].reject()
    (dead,) = mq(conn).peek("work", State.DEAD_LETTERED)
    assert dead.dead_letter_reason == "rejected"
    assert "rejected by its consumer" in dead.dead_letter_description


def test_a_requeue_carries_the_task_error_and_the_queue_retry_policy_sets_the_delay(
    conn: Connection,
) -> None:
    """Requeue = abandon with no delay and the noted failure as the error: a queue declared
    with a retry policy parks the message for it (the consumer computes nothing)."""
    args = {"x-mqlite-retry-initial-delay-ms": 60_000, "x-mqlite-retry-multiplier": 1.5}
    q = Queue("retrying", Exchange("retrying"), "retrying", queue_arguments=args)
    Producer(conn).publish("a", exchange=q.exchange, routing_key="retrying", declare=[q])
    cfg = mq(conn).get_queue("retrying").config
    assert (cfg.retry_initial_delay_ms, cfg.retry_multiplier) == (60_000, 1.5)
    got: list[Any] = []
    with Consumer(conn, [q], callbacks=[lambda body, m: got.append(m)]):
        drain(conn, got, 1)
        got[0].dead_letter = ("ValueError", "bad sku")  # what dead_letter.Request notes
        got[0].requeue()
    (parked,) = mq(conn).peek("retrying")
    assert (parked.state, parked.last_error) == ("scheduled", "ValueError: bad sku")
    assert parked.visible_at_ms - parked.last_error_at_ms == 60_000


def test_a_prefetch_count_bounds_what_is_claimed(conn: Connection) -> None:
    q = Queue("bounded", Exchange("bounded"), "bounded")
    producer = Producer(conn)
    for i in range(5):
        producer.publish(i, exchange=q.exchange, routing_key="bounded", declare=[q])
    got: list[Any] = []
    with Consumer(conn, [q], callbacks=[lambda body, m: got.append(m)], prefetch_count=2):
        drain(conn, got, 2)
        with pytest.raises(TimeoutError):
            conn.drain_events(timeout=0.3)  # no third claim while two are unsettled
        assert mq(conn).stats("bounded").locked == 2
        got[0].ack()
        drain(conn, got, 3)
        for m in got[1:]:
            m.ack()


def test_a_fanout_exchange_is_a_topic_and_its_queues_subscriptions(url: str) -> None:
    hub = Exchange("announce", type="fanout")
    with Connection(url) as a, Connection(url) as b:
        qa, qb = (
            Queue("listener-a", hub, auto_delete=True),
            Queue("listener-b", hub, auto_delete=True),
        )
        got: list[tuple[str, Any]] = []

        def on(who: str) -> Any:
            return lambda body, m: (got.append((who, body)), m.ack())

        with Consumer(a, [qa], callbacks=[on("a")]), Consumer(b, [qb], callbacks=[on("b")]):
            subs = {(s.topic, s.name) for s in mq(a).list_subscriptions()}
            assert subs == {("announce", "listener-a"), ("announce", "listener-b")}
            Producer(a).publish("hello", exchange=hub, declare=[hub])
            while len(got) < 2:
                a.drain_events(timeout=5) if not any(w == "a" for w, _ in got) else b.drain_events(
                    timeout=5
                )
        assert sorted(got) == [("a", "hello"), ("b", "hello")]
        # Auto-delete queues go with their channel.
    with Connection(url) as c:
        c.connect()
        assert mq(c).list_subscriptions() == []


def test_topic_bindings_route_in_the_broker_by_pattern(conn: Connection) -> None:
    ex = Exchange("events", type="topic")
    q = Queue("worker-events", ex, routing_key="worker.*")
    q(conn.default_channel).declare()
    producer = Producer(conn, exchange=ex)
    for key in ("worker.heartbeat", "task.sent", "worker.a.b"):
        producer.publish({"k": key}, routing_key=key, declare=[ex])
    # Transient traffic (Celery's events) goes out while the topic has subscribers.
    producer.publish({"k": "lossy"}, routing_key="worker.online", delivery_mode=1)
    subjects = [m.subject for m in mq(conn).peek("worker-events")]
    assert subjects == ["worker.heartbeat", "worker.online"]
    nobody = Exchange("unwatched", type="topic")
    Producer(conn, exchange=nobody).publish("x", routing_key="a", delivery_mode=1, declare=[nobody])


def test_a_transient_direct_exchange_routes_replies_another_process_bound(url: str) -> None:
    """kombu's reply pattern (pidbox, rpc): the replier never declared the reply queue."""
    replies = Exchange("reply.x", type="direct", durable=False)
    with Connection(url) as client, Connection(url) as server:
        q = Queue("oid-7.reply.x", replies, routing_key="oid-7", durable=False, auto_delete=True)
        got: list[Any] = []
        with Consumer(client, [q], callbacks=[lambda body, m: got.append(body)], no_ack=True):
            Producer(server).publish({"pong": 1}, exchange=replies, routing_key="oid-7",
                                     declare=[replies])  # fmt: skip
            Producer(server).publish({"pong": 2}, exchange=replies, routing_key="oid-other",
                                     declare=[replies])  # fmt: skip
            drain(client, got, 1)
            with pytest.raises(TimeoutError):
                client.drain_events(timeout=0.2)
        assert got == [{"pong": 1}]


def test_what_cannot_map_is_refused_clearly(conn: Connection) -> None:
    q = Queue("plain", Exchange("plain"), "plain")
    producer = Producer(conn)
    with pytest.raises(errors.InvalidArgument, match="this process declared no queue bound to it"):
        producer.publish("x", exchange=Exchange("plain"), routing_key="nobody", declare=[q])
    with pytest.raises(errors.InvalidArgument, match="no message priorities"):
        producer.publish("x", exchange=q.exchange, routing_key="plain", priority=3)
    with pytest.raises(errors.InvalidArgument, match="x-max-priority is refused"):
        Queue("prio", max_priority=10)(conn.default_channel).declare()


def test_a_republished_task_is_deduplicated_and_a_reused_id_refused(conn: Connection) -> None:
    q = Queue("dedup", Exchange("dedup"), "dedup")
    producer = Producer(conn)
    for _ in range(2):  # kombu's publish retry re-prepares the same message
        producer.publish({"a": 1}, exchange=q.exchange, routing_key="dedup", declare=[q],
                         headers={"id": "task-1"})  # fmt: skip
    assert mq(conn).stats("dedup").active == 1
    with pytest.raises(errors.DedupConflict, match="'task-1' was published with another body"):
        producer.publish(
            {"a": 2}, exchange=q.exchange, routing_key="dedup", headers={"id": "task-1"}
        )


def test_purge_removes_ready_and_scheduled_and_basic_get_works(conn: Connection) -> None:
    q = Queue("purged", Exchange("purged"), "purged")
    producer = Producer(conn)
    for i in range(300):
        producer.publish(i, exchange=q.exchange, routing_key="purged", declare=[q])
    producer.publish("later", exchange=q.exchange, routing_key="purged",
                     headers={"eta": "2099-01-01T00:00:00+00:00"})  # fmt: skip
    channel = conn.default_channel
    first = channel.basic_get("purged", no_ack=False)
    assert first is not None and first.payload == 0
    assert channel.queue_purge("purged") == 300  # 299 ready + the scheduled one
    assert mq(conn).stats("purged").locked == 1
    first.ack()
    assert mq(conn).stats("purged").total == 0
    assert channel.basic_get("purged", no_ack=True) is None


def test_options_are_checked_and_the_token_never_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(errors.InvalidArgument, match=r"\['visibility_timeout'\]"):
        Options.parse({"visibility_timeout": "soon"})
    with pytest.raises(errors.InvalidArgument, match="max_delivery_count"):
        Options.parse({"max_delivery_count": 0})
    opts = Options.parse({"token": "mqk_secret_value", "visibility_timeout": 90})
    assert opts.token == "mqk_secret_value" and "secret" not in repr(opts)
    assert opts.queue_defaults.lock_duration_ms == 90_000
    c = Connection("mqlite+http://127.0.0.1:9", transport_options={"token": "mqk_secret_value"})
    assert "secret" not in repr(c.transport) and "secret" not in c.as_uri()
    with pytest.raises(errors.InvalidArgument, match="must not carry the token"):
        Connection("mqlite+http://mqk_secret@127.0.0.1:9").transport  # noqa: B018


def test_one_embedded_client_per_file_per_process(url: str, tmp_path: Path) -> None:
    dsn = f"file:{tmp_path / 'mq.db'}"
    first = clients.acquire_embedded(dsn)
    assert clients.acquire_embedded(dsn) is first
    clients.release_embedded(dsn)
    clients.release_embedded(dsn)
    with Connection(url) as c:  # the file is free again
        c.connect()


def test_a_queue_is_created_with_the_config_its_declaration_asks_for(url: str) -> None:
    options = {"visibility_timeout": 45, "max_delivery_count": 4, "dedup_window": 0}
    with Connection(url, transport_options=options) as conn:
        ordered = Queue("orders", Exchange("orders"), "orders",
                        queue_arguments={"x-mqlite-ordering-mode": "group_fifo"})  # fmt: skip
        producer = Producer(conn)
        producer.publish("a", exchange=ordered.exchange, routing_key="orders", declare=[ordered],
                         MessageGroupId="customer-42")  # fmt: skip
        cfg = mq(conn).get_queue("orders").config
        assert (cfg.ordering_mode, cfg.lock_duration_ms) == ("group_fifo", 45_000)
        assert (cfg.max_delivery_count, cfg.dedup_window_ms) == (4, 0)
        assert [m.group_id for m in mq(conn).peek("orders")] == ["customer-42"]
        with pytest.raises(errors.GroupRequired):
            producer.publish("b", exchange=ordered.exchange, routing_key="orders")


def test_a_malformed_message_is_dead_lettered_and_the_consumer_goes_on(conn: Connection) -> None:
    q = Queue("poisoned", Exchange("poisoned"), "poisoned")
    producer = Producer(conn)
    producer.publish({"n": 1}, exchange=q.exchange, routing_key="poisoned", declare=[q])
    mq(conn).send_one("poisoned", OutMessage(b"{}", "headers-a-list",
                                             properties={mapping.HEADERS: "[1]"}))  # fmt: skip
    mq(conn).send_one("poisoned", OutMessage(b"{nope", "not-json",
                                             content_type="application/json"))  # fmt: skip
    producer.publish({"n": 2}, exchange=q.exchange, routing_key="poisoned")
    got: list[Any] = []

    def drop(message: Any, exc: Exception) -> None:
        message.ack()  # what Celery does with a body it cannot decode

    with Consumer(conn, [q], callbacks=[lambda body, m: (got.append(body), m.ack())],
                  on_decode_error=drop):  # fmt: skip
        drain(conn, got, 2)  # drain_events raises nothing for the malformed ones
    assert got == [{"n": 1}, {"n": 2}]
    dead = {m.message_id: m for m in mq(conn).peek("poisoned", State.DEAD_LETTERED)}
    assert dead["headers-a-list"].dead_letter_reason == mapping.MALFORMED
    assert "kombu.headers must be a JSON object" in dead["headers-a-list"].dead_letter_description
    assert dead["not-json"].dead_letter_reason == mapping.MALFORMED_BODY
    assert mq(conn).stats("poisoned").active == 0
    # basic_get: the malformed message is dead-lettered, the caller gets nothing.
    mq(conn).send_one("poisoned", OutMessage(b"x", "bad-props",
                                             properties={mapping.PROPERTIES: "7"}))  # fmt: skip
    assert conn.default_channel.basic_get("poisoned") is None
    assert "bad-props" in {m.message_id for m in mq(conn).peek("poisoned", State.DEAD_LETTERED)}
