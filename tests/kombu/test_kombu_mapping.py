"""The pure kombu -> mqlite translation: messages, queue arguments, bindings, URLs."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mqlite
from mqlite import errors
from mqlite.kombu import clients, mapping
from mqlite.types import Message, OrderingMode, QueueKind

NOW = 1_799_000_000_000


def payload(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "body": '[[2, 2], {}, {"callbacks": null}]',
        "content-type": "application/json",
        "content-encoding": "utf-8",
        "headers": {"task": "proj.add", "id": "t-1", "retries": 0, "eta": None},
        "properties": {
            "delivery_info": {"exchange": "celery", "routing_key": "celery"},
            "delivery_tag": "tag-changes-per-publish",
            "body_encoding": None,
            "priority": 0,
            "correlation_id": "t-1",
            "reply_to": "reply-oid",
            "delivery_mode": 2,
        },
    }
    for key, value in over.items():
        if key in ("headers", "properties"):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return base


def test_a_celery_message_maps_field_by_field_and_round_trips() -> None:
    out = mapping.outgoing(payload(), "celery", NOW)
    m = out.message
    assert m.body == b'[[2, 2], {}, {"callbacks": null}]'
    assert (m.message_id, m.subject, m.correlation_id, m.reply_to) == (
        "t-1",
        "celery",
        "t-1",
        "reply-oid",
    )
    assert m.content_type == "application/json"
    assert json.loads(m.properties[mapping.HEADERS])["task"] == "proj.add"
    assert (out.ttl_ms, out.at_ms, out.transient) == (None, None, False)
    received = Message(
        seq_number=7, queue="celery", body=m.body, message_id=m.message_id, subject=m.subject,
        correlation_id=m.correlation_id, reply_to=m.reply_to, content_type=m.content_type,
        properties=m.properties, delivery_count=2,
    )  # fmt: skip
    back = mapping.incoming(received, "new-tag")
    assert back["headers"] == payload()["headers"]
    assert back["body"] == m.body and back["content-encoding"] == "utf-8"
    assert back["properties"]["delivery_tag"] == "new-tag"
    assert back["properties"]["delivery_info"] == {
        "exchange": "celery",
        "routing_key": "celery",
        "redelivered": True,
    }
    assert back["properties"]["delivery_mode"] == 2


def test_a_republished_message_is_the_same_body_and_id_so_the_dedup_window_catches_it() -> None:
    a = mapping.outgoing(payload(), "celery", NOW).message
    b = mapping.outgoing(payload(properties={"delivery_tag": "another"}), "celery", NOW).message
    assert a == b


def test_a_retry_is_a_new_publication_and_id_less_messages_never_share_an_id() -> None:
    retry = mapping.outgoing(payload(headers={"retries": 2}), "celery", NOW).message
    assert retry.message_id == "t-1#retry-2"
    plain = payload(headers={"id": None})
    ids = {mapping.outgoing(plain, "celery", NOW).message.message_id for _ in range(3)}
    assert len(ids) == 3
    explicit = payload(properties={"message_id": "m-9"})
    assert mapping.outgoing(explicit, "celery", NOW).message.message_id == "m-9"


def test_eta_expiration_group_and_transient_map() -> None:
    later = payload(
        headers={"eta": "2027-01-15T08:00:00+00:00"},
        properties={"expiration": "5000", "MessageGroupId": "cust-42", "delivery_mode": 1},
    )
    out = mapping.outgoing(later, "celery", NOW)
    assert out.at_ms == 1_800_000_000_000  # 2027-01-15T08:00:00Z, after NOW
    assert (out.ttl_ms, out.message.group_id, out.transient) == (5000, "cust-42", True)
    # A due ETA is sent at once (the broker refuses a schedule in its past).
    past = payload(headers={"eta": "2020-01-01T00:00:00Z"})
    assert mapping.outgoing(past, "celery", NOW).at_ms is None
    assert mapping.eta_ms({"eta": "2020-01-01T00:00:00"}) == 1_577_836_800_000  # naive = UTC
    with pytest.raises(errors.InvalidArgument, match="not ISO 8601"):
        mapping.eta_ms({"eta": "tomorrow"})


def test_a_priority_is_refused_naming_the_task() -> None:
    with pytest.raises(
        errors.InvalidArgument, match=r"no message priorities \(priority=5 on task proj.add\)"
    ):
        mapping.outgoing(payload(properties={"priority": 5}), "celery", NOW)


def test_queue_arguments_map_or_are_refused_by_name() -> None:
    d = mapping.QueueDefaults(lock_duration_ms=60_000, max_delivery_count=5)
    assert mapping.queue_config("q", None, d).lock_duration_ms == 60_000
    cfg = mapping.queue_config(
        "q",
        {
            "x-message-ttl": 300_000,
            "x-delivery-limit": 3,
            "x-mqlite-ordering-mode": "group_fifo",
            "x-mqlite-lock-duration-ms": 5000,
            "x-expires": 10_000,
        },
        d,
    )
    assert (cfg.default_ttl_ms, cfg.dead_letter_on_expire, cfg.max_delivery_count) == (
        300_000,
        False,
        3,
    )
    assert (cfg.ordering_mode, cfg.lock_duration_ms, cfg.dedup_window_ms) == (
        "group_fifo",
        5000,
        600_000,
    )
    strict = mapping.queue_config("q", {"x-single-active-consumer": True}, d)
    assert strict.ordering_mode == OrderingMode.STRICT_FIFO
    assert mapping.as_subscription(cfg).kind == QueueKind.SUBSCRIPTION
    for arg, text in [
        ("x-max-priority", "no message priorities"),
        ("x-dead-letter-exchange", "its own DLQ"),
        ("x-mqlite-colour", "unknown argument x-mqlite-colour"),
        ("x-custom", "no mqlite equivalent"),
    ]:
        with pytest.raises(errors.InvalidArgument, match=text):
            mapping.queue_config("q", {arg: 1}, d)


def test_binding_keys_become_filters_the_broker_evaluates() -> None:
    assert mapping.binding_filter("fanout", ["anything"]) == ""
    assert mapping.binding_filter("topic", ["#"]) == ""
    assert mapping.binding_filter("direct", ["oid-1"]) == 'subject == "oid-1"'
    expr = mapping.binding_filter("topic", ["worker.*", "task.#"])
    with mqlite.open_embedded(":memory:", background=False) as mq:

        def matches(subject: str) -> bool:
            r = mq.test_filter(expr, mqlite.OutMessage(subject=subject))
            assert r.valid, r.error
            return r.matched

        assert matches("worker.heartbeat") and matches("task.sent.x")
        assert not matches("worker.a.b") and not matches("workerXheartbeat")


def test_urls_name_a_broker_or_a_file_and_never_carry_the_token() -> None:
    assert clients.target("http://127.0.0.1:6754", "/") == clients.Target(
        endpoint="http://127.0.0.1:6754"
    )
    assert clients.target("https://mq.example.com", "/").endpoint == "https://mq.example.com"
    assert clients.target(None, "data/mq.db").dsn == "file:data/mq.db"  # mqlite:///data/mq.db
    assert clients.target(None, "/srv/mq.db").dsn == "file:/srv/mq.db"  # mqlite:////srv/mq.db
    assert clients.target("file://./mq.db", "/").dsn == "file:./mq.db"  # mqlite+file://./mq.db
    with pytest.raises(errors.InvalidArgument, match="must not carry the token"):
        clients.target("http://mqk_secret@127.0.0.1:6754", "/")
    with pytest.raises(errors.InvalidArgument, match="needs a database path"):
        clients.target(None, "/")
    with pytest.raises(errors.InvalidArgument, match="names a host"):
        clients.target("broker.example", "/")
    with pytest.raises(errors.InvalidArgument, match="unsupported broker URL scheme"):
        clients.target("amqp://h", "/")
    assert clients.resolve_token({}, {"MQLITE_TOKEN": " mqk_env "}) == "mqk_env"
    assert clients.resolve_token({"token": "mqk_opt"}, {"MQLITE_TOKEN": "mqk_env"}) == "mqk_opt"
    assert clients.resolve_token({}, {}) is None


@pytest.mark.parametrize(
    ("properties", "body", "content_type", "reason", "says"),
    [
        ({mapping.HEADERS: "{not json"}, b"[]", "", mapping.MALFORMED, "kombu.headers is not JSON"),
        ({mapping.HEADERS: "[1, 2]"}, b"[]", "", mapping.MALFORMED, "not an array"),
        ({mapping.HEADERS: "42"}, b"[]", "", mapping.MALFORMED, "not a number"),
        ({mapping.PROPERTIES: '"text"'}, b"[]", "", mapping.MALFORMED, "kombu.properties"),
        ({mapping.PROPERTIES: '{"body_encoding": "base64"}'}, b"!!", "", mapping.MALFORMED,
         "not valid base64"),
        ({mapping.PROPERTIES: '{"body_encoding": "rot13"}'}, b"x", "", mapping.MALFORMED,
         "unknown body_encoding"),
    ],
)  # fmt: skip
def test_a_message_the_transport_cannot_map_raises_malformed_with_its_reason(
    properties: dict[str, str], body: bytes, content_type: str, reason: str, says: str
) -> None:
    m = Message(seq_number=1, queue="q", body=body, content_type=content_type,
                properties=properties)  # fmt: skip
    with pytest.raises(mapping.Malformed) as caught:
        mapping.incoming(m, "tag")
    assert caught.value.reason == reason
    assert says in str(caught.value)


def test_a_base64_body_is_decoded_by_the_transport_and_other_serializers_are_not_read() -> None:
    props = {mapping.PROPERTIES: '{"body_encoding": "base64"}'}
    m = Message(seq_number=1, queue="q", body=b"WzFd", properties=props)
    back = mapping.incoming(m, "tag")
    assert back["body"] == b"[1]" and "body_encoding" not in back["properties"]
    # The body is the consumer's to decode (and its accept_content's to allow), not the
    # mapping's: nothing is decoded twice, and nothing foreign is unpickled here.
    pickled = Message(seq_number=2, queue="q", body=b"\x80\x04K\x01.",
                      content_type="application/x-python-serialize")  # fmt: skip
    assert mapping.incoming(pickled, "tag")["body"] == b"\x80\x04K\x01."
