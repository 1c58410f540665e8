"""Requests both ways: the SDK encodes, the server decodes; exact JSON and round trips."""

from __future__ import annotations

import json
from typing import Any

import pytest
from wire_cases import REQUEST_CASES, Case, case_id

from mqlite import errors, wire
from mqlite.types import OutMessage, QueueConfig, ReceiveMode


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.parametrize("case", REQUEST_CASES, ids=case_id)
def test_encode_request_is_the_golden_json(case: Case) -> None:
    route, value, expected = case
    body = wire.encode_request(route, value)
    assert body.endswith(b"\n")
    assert json.loads(body) == expected
    assert list(json.loads(body)) == list(expected)  # key order too


@pytest.mark.parametrize("case", REQUEST_CASES, ids=case_id)
def test_decode_request_of_the_golden_json(case: Case) -> None:
    route, value, expected = case
    assert wire.decode_request(route, dumps(expected)) == value


@pytest.mark.parametrize("case", REQUEST_CASES, ids=case_id)
def test_request_round_trip(case: Case) -> None:
    route, value, _ = case
    decoded = wire.decode_request(route, wire.encode_request(route, value))
    assert decoded == value
    assert type(decoded) is type(value)


def test_every_route_has_a_request_case() -> None:
    assert {r.name for r, _, _ in REQUEST_CASES} == {r.name for r in wire.ROUTES}


def test_send_decodes_into_out_messages() -> None:
    req = wire.decode_request(wire.SEND, b'{"queue":"q","messages":[{"body":"aGk="}]}')
    assert req.out_messages() == (OutMessage(body=b"hi"),)
    assert isinstance(req.out_messages(), tuple)
    assert type(req.out_messages()[0]) is OutMessage  # the engine checks the exact type


def test_output_only_message_fields_are_accepted_and_ignored() -> None:
    echoed = {
        "seq_number": 5,
        "enqueued_at_ms": 1,
        "expires_at_ms": 2,
        "visible_at_ms": 3,
        "locked_until_ms": 4,
        "delivery_count": 2,
        "lock_token": "t",
        "state": "locked",
        "dead_letter_reason": "r",
        "dead_letter_description": "d",
        "body": "aGk=",
    }
    req = wire.decode_request(wire.SEND, dumps({"queue": "q", "messages": [echoed]}))
    assert req.out_messages() == (OutMessage(body=b"hi"),)


def test_ignored_fields_are_still_type_checked() -> None:
    body = dumps({"queue": "q", "messages": [{"seq_number": "5"}]})
    with pytest.raises(errors.InvalidArgument, match=r"messages\[0\].seq_number: want"):
        wire.decode_request(wire.SEND, body)


def test_test_filter_uses_the_sample_times_send_does_not() -> None:
    sample = {"subject": "a", "enqueued_at_ms": 10, "visible_at_ms": 20, "seq_number": 1}
    req = wire.decode_request(wire.TEST_FILTER, dumps({"expr": "true", "message": sample}))
    assert (req.message, req.enqueued_at_ms, req.visible_at_ms) == (OutMessage(subject="a"), 10, 20)
    no_times = wire.decode_request(wire.TEST_FILTER, b'{"expr":"true","message":{}}')
    assert (no_times.enqueued_at_ms, no_times.visible_at_ms) == (0, 0)
    assert no_times.message == OutMessage()


def test_create_queue_config_zeros_pass_through_and_absent_takes_defaults() -> None:
    zeros = {"lock_duration_ms": 0, "max_delivery_count": 0}
    req = wire.decode_request(wire.CREATE_QUEUE, dumps({"name": "q", "config": zeros}))
    assert req.queue_config == QueueConfig(lock_duration_ms=0, max_delivery_count=0)
    absent = wire.decode_request(wire.CREATE_QUEUE, b'{"name":"q","config":{}}')
    assert absent.queue_config == QueueConfig()
    assert absent.queue_config is not None and absent.queue_config.dead_letter_on_expire is True
    assert wire.decode_request(wire.CREATE_QUEUE, b'{"name":"q"}').queue_config is None


def test_a_null_nested_object_is_absent_and_a_non_object_is_refused() -> None:
    """``null`` = absent (issue 28, tests/wire/test_wire_null.py); any other non-object
    is still a 400."""
    absent = wire.decode_request(wire.CREATE_QUEUE, b'{"name":"q","config":null}')
    assert absent.queue_config is None
    with pytest.raises(errors.InvalidArgument, match=r"^config: want object, got string$"):
        wire.decode_request(wire.CREATE_QUEUE, b'{"name":"q","config":"x"}')


def test_dead_letter_on_expire_false_is_encoded() -> None:
    body = wire.encode_request(
        wire.CREATE_QUEUE,
        wire.CreateQueueRequest(
            "q", wire.QueueConfigJSON.of(QueueConfig(dead_letter_on_expire=False))
        ),
    )
    assert json.loads(body) == {"name": "q", "config": {"dead_letter_on_expire": False}}


@pytest.mark.parametrize("filter_json", [None, {}, {"expr": ""}])
def test_subscribe_without_an_expression_matches_all(filter_json: Any) -> None:
    doc: dict[str, Any] = {"topic": "t", "name": "s"}
    if filter_json is not None:
        doc["filter"] = filter_json
    req = wire.decode_request(wire.SUBSCRIBE, dumps(doc))
    assert (req.topic, req.name, req.expr) == ("t", "s", "")


def test_receive_mode_property() -> None:
    assert wire.ReceiveRequest("q").mode is ReceiveMode.PEEK_LOCK
    assert wire.ReceiveRequest("q", receive_mode=1).mode is ReceiveMode.RECEIVE_AND_DELETE


def test_batch_items_are_seq_token_pairs() -> None:
    body = b'{"queue":"q","messages":[{"seq_number":1,"lock_token":"a"}]}'
    req = wire.decode_request(wire.COMPLETE_BATCH, body)
    assert [(m.seq_number, m.lock_token) for m in req.messages] == [(1, "a")]


def test_body_is_standard_padded_base64_both_ways() -> None:
    raw = bytes(range(256))
    body = wire.encode_request(wire.SEND, wire.SendRequest("q", (wire.MessageJSON(body=raw),)))
    text = json.loads(body)["messages"][0]["body"]
    assert "+" in text and "/" in text and text.endswith("=")
    assert wire.decode_request(wire.SEND, body).messages[0].body == raw


def test_empty_body_field_is_omitted_and_decodes_empty() -> None:
    req = wire.decode_request(wire.SEND, b'{"queue":"q","messages":[{"body":""}]}')
    assert req.messages[0].body == b""


def test_unicode_and_escaped_surrogate_pairs() -> None:
    doc = '{"queue":"q","messages":[{"properties":{"k\\u00e9":"\\ud83d\\ude00"},"subject":"ü"}]}'
    req = wire.decode_request(wire.SEND, doc.encode())
    assert req.messages[0].properties == {"ké": "\U0001f600"}
    assert req.messages[0].subject == "ü"
    again = wire.decode_request(wire.SEND, wire.encode_request(wire.SEND, req))
    assert again == req


def test_surrounding_whitespace_is_fine() -> None:
    req = wire.decode_request(wire.STATS, b' \r\n\t{"queue":"q"}\n ')
    assert req == wire.MetricsRequest("q")


@pytest.mark.parametrize("body", [b"", b"  \n", b"{}", b" {} "])
def test_fieldless_routes_accept_empty_or_empty_object(body: bytes) -> None:
    for route in (wire.LIST_QUEUES, wire.LIST_SUBSCRIPTIONS, wire.STATUS):
        assert wire.decode_request(route, body) == wire.EmptyRequest()


def test_int64_bounds_are_accepted() -> None:
    lo, hi = -(1 << 63), (1 << 63) - 1
    req = wire.decode_request(wire.PEEK, dumps({"queue": "q", "from_seq": hi, "max": lo}))
    assert (req.from_seq, req.max) == (hi, lo)


def test_encode_request_of_a_bad_value_is_invalid_argument() -> None:
    bad = wire.SendRequest("q", (wire.MessageJSON(body=object()),))  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidArgument, match="cannot encode QueueService/Send"):
        wire.encode_request(wire.SEND, bad)


def test_a_float_field_decodes_on_the_slow_path_too() -> None:
    """An explicit default sends the decoder down the slow walker, which must know the
    retry policy's float fields (it once raised TypeError: a 500 for a valid request)."""
    body = (
        b'{"name":"q","config":{"default_ttl_ms":0,"retry_initial_delay_ms":60000,'
        b'"retry_multiplier":1.5,"retry_jitter":0.25,"retry_max_delay_ms":900000}}'
    )
    got = wire.decode_request(wire.CREATE_QUEUE, body)
    assert got.config is not None
    cfg = got.config.value()
    assert (cfg.retry_multiplier, cfg.retry_jitter, cfg.retry_initial_delay_ms) == (
        1.5,
        0.25,
        60_000,
    )
    with_int = wire.decode_request(
        wire.CREATE_QUEUE, b'{"name":"q","config":{"default_ttl_ms":0,"retry_multiplier":3}}'
    )
    assert with_int.config is not None and with_int.config.value().retry_multiplier == 3.0
