"""Responses both ways: the server encodes (omission rules), the SDK decodes (leniently)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from wire_cases import Case, case_id
from wire_response_cases import FULL_MESSAGE, QUEUE_INFO, RESPONSE_CASES

from mqlite import errors, wire
from mqlite.types import Message, QueueConfig, QueueInfo, Stats

RECEIVE_KEYS = {
    "seq_number", "enqueued_at_ms", "locked_until_ms", "delivery_count", "lock_token",
    "message_id", "correlation_id", "reply_to", "group_id", "content_type", "subject",
    "properties", "body", "last_error", "last_error_at_ms",
}  # fmt: skip
PEEK_KEYS = RECEIVE_KEYS - {"lock_token"} | {
    "state", "visible_at_ms", "expires_at_ms", "dead_letter_reason", "dead_letter_description",
}  # fmt: skip


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.parametrize("case", RESPONSE_CASES, ids=case_id)
def test_encode_response_is_the_golden_json(case: Case) -> None:
    route, value, expected = case
    body = wire.encode_response(route, value)
    assert body.endswith(b"\n") and b": " not in body and b", " not in body
    assert json.loads(body) == expected
    assert list(json.loads(body)) == list(expected)


@pytest.mark.parametrize("case", RESPONSE_CASES, ids=case_id)
def test_response_round_trip_is_stable(case: Case) -> None:
    route, value, expected = case
    decoded = wire.decode_response(route, wire.encode_response(route, value))
    assert json.loads(wire.encode_response(route, decoded)) == expected
    assert decoded == value and type(decoded) is type(value)


def test_every_route_has_a_response_case() -> None:
    assert {r.name for r, _, _ in RESPONSE_CASES} == {r.name for r in wire.ROUTES}


def test_receive_view_never_has_state_or_peek_fields() -> None:
    body = wire.encode_response(wire.RECEIVE, wire.ReceiveResponse.of([FULL_MESSAGE]))
    (m,) = json.loads(body)["messages"]
    assert set(m) == RECEIVE_KEYS


def test_peek_view_never_has_a_lock_token() -> None:
    body = wire.encode_response(wire.PEEK, wire.PeekResponse.of([FULL_MESSAGE]))
    (m,) = json.loads(body)["messages"]
    assert set(m) == PEEK_KEYS


@pytest.mark.parametrize("route", [wire.RECEIVE, wire.RECEIVE_DEFERRED, wire.PEEK])
def test_every_empty_message_field_is_omitted(route: wire.Route[Any, Any]) -> None:
    body = wire.encode_response(route, route.response.of([Message(0), Message(7)]))
    assert json.loads(body) == {"messages": [{}, {"seq_number": 7}]}


def test_decoded_messages_carry_the_view_fields() -> None:
    got = wire.decode_response(
        wire.RECEIVE, wire.encode_response(wire.RECEIVE, wire.ReceiveResponse.of([FULL_MESSAGE]))
    ).values("")[0]
    want = dataclasses.replace(
        FULL_MESSAGE,
        queue="",
        state="",
        visible_at_ms=0,
        expires_at_ms=0,
        dead_letter_reason="",
        dead_letter_description="",
    )
    assert got == want
    peeked = wire.decode_response(
        wire.PEEK, wire.encode_response(wire.PEEK, wire.PeekResponse.of([FULL_MESSAGE]))
    ).values("")[0]
    assert peeked == dataclasses.replace(FULL_MESSAGE, queue="", lock_token="")


def test_list_queues_carries_the_whole_config_and_generation() -> None:
    decoded = wire.decode_response(
        wire.LIST_QUEUES,
        wire.encode_response(wire.LIST_QUEUES, wire.ListQueuesResponse.of([QUEUE_INFO])),
    )
    assert decoded.values() == [QUEUE_INFO]
    rich = QueueInfo(
        "q",
        QueueConfig(
            ordering_mode="strict_fifo",
            dead_letter_on_expire=False,
            dlq_max_age_ms=5,
            dlq_max_count=3,
            dlq_max_bytes=-1,
        ),
        "g",
        1,
        2,
    )
    body = wire.encode_response(wire.LIST_QUEUES, wire.ListQueuesResponse.of([rich]))
    (got,) = wire.decode_response(wire.LIST_QUEUES, body).values()
    assert got.config == rich.config  # the times are not on the wire
    assert (got.created_at_ms, got.updated_at_ms) == (0, 0)


# -- lenient decoding (an old SDK talking to a newer broker, or the reverse) -------------


def test_unknown_response_fields_are_ignored_at_any_depth() -> None:
    body = dumps({"messages": [{"seq_number": 3, "new_field": {"x": 1}}], "cursor": "z"})
    assert wire.decode_response(wire.RECEIVE, body).values("q") == [Message(3, "q")]


def test_null_and_absent_response_fields_take_zero_values() -> None:
    assert wire.decode_response(wire.SEND, b'{"seq_numbers":null}\n') == wire.SendResponse(())
    stats = wire.decode_response(wire.STATS, b'{"queue":"q","active":2,"total":null}')
    assert stats.value() == Stats("q", active=2)
    old = dumps({"queues": [{"name": "q", "kind": "queue"}]})
    (q,) = wire.decode_response(wire.LIST_QUEUES, old).values()
    zeros = QueueConfig(lock_duration_ms=0, max_delivery_count=0)  # Go's zero values
    assert (q.name, q.generation, q.config) == ("q", "", zeros)
    assert wire.decode_response(wire.CREATE_QUEUE, b"") == wire.EmptyResponse()


def test_response_enums_are_not_enforced() -> None:
    body = dumps({"keys": [{"id": "a", "name": "n", "permissions": ["observe"]}]})
    (key,) = wire.decode_response(wire.LIST_KEYS, body).values()[0]
    assert key.permissions == ("observe",) and key.created_at_ms == 0


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b"not json", "malformed QueueService/Send response: Expecting value"),
        (b"[]", "malformed QueueService/Send response: response body: want object, got array"),
        (b'{"seq_numbers":["1"]}', "seq_numbers[0]: want integer, got string"),
        (b'{"seq_numbers":{}}', "seq_numbers: want array, got object"),
    ],
)
def test_malformed_responses_are_internal_errors(body: bytes, detail: str) -> None:
    with pytest.raises(errors.Internal) as info:
        wire.decode_response(wire.SEND, body)
    assert detail in info.value.message


def test_defaults_read_back_from_storage_are_still_omitted() -> None:
    """msgspec omits a default by identity: an equal value built at run time (as SQLite
    returns it) must still be omitted (``canonical``)."""
    mode, kind = "".join(["stan", "dard"]), "".join(["que", "ue"])
    config = QueueConfig(lock_duration_ms=int("30000"), ordering_mode=mode, kind=kind)
    body = wire.encode_response(
        wire.LIST_QUEUES, wire.ListQueuesResponse.of([QueueInfo("q", config, "")])
    )
    assert "ordering_mode" not in json.loads(body)["queues"][0]
    request = wire.CreateQueueRequest("q", wire.QueueConfigJSON.of(config))
    assert json.loads(wire.encode_request(wire.CREATE_QUEUE, request)) == {
        "name": "q",
        "config": {},
    }


def test_response_body_type_errors_name_the_path() -> None:
    body = dumps({"messages": [{"properties": {"k": 1}}]})
    with pytest.raises(errors.Internal, match=r"messages\[0\]\.properties\.k: want string"):
        wire.decode_response(wire.PEEK, body)
