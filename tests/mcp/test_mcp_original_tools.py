"""An MCP host configured for the original's ``mqlite-mcp`` works unchanged (issue 28):
its 18 tools, each with the argument names the original declares (the spec's MCP page,
original-behaviour §10, and ``reject``'s ``reason``/``description``), pass our schema
check and become the request the broker expects. In-process: schema + strict decoder."""

from __future__ import annotations

from typing import Any

import pytest

from mqlite import errors, wire
from mqlite.mcp import convert
from mqlite.mcp.forward import Forwarder
from mqlite.mcp.tools import BY_NAME
from mqlite.sdk.http import HttpClient

KEY_ID = "e734810a9f634d75bd8a029c1f7e5062"

# The original's tools and every argument it declares, with a value of the right type.
ORIGINAL: dict[str, dict[str, Any]] = {
    "observe": {},
    "list_queues": {},
    "create_queue": {"name": "q"},
    "send": {"queue": "q", "body": "hello", "message_id": "m-1", "group_id": "g"},
    "receive": {"queue": "q", "max_messages": 2, "wait_time_ms": 100},
    "complete": {"queue": "q", "seq_number": 1, "lock_token": "t"},
    "abandon": {"queue": "q", "seq_number": 1, "lock_token": "t", "delay_ms": 10},
    "reject": {
        "queue": "q",
        "seq_number": 1,
        "lock_token": "t",
        "reason": "bad",
        "description": "why",
    },
    "renew": {"queue": "q", "seq_number": 1, "lock_token": "t"},
    "defer": {"queue": "q", "seq_number": 1, "lock_token": "t"},
    "receive_deferred": {"queue": "q", "seq_numbers": [1, 2]},
    "peek": {"queue": "q", "state": "dead_lettered", "max": 5},
    "stats": {"queue": "q"},
    "redrive": {"queue": "q", "max": 5},
    "purge": {"queue": "q", "max": 5},
    "create_key": {
        "id": KEY_ID,
        "name": "order-producer",
        "permissions": ["send"],
        "expires_at_ms": 0,
    },
    "list_keys": {"after_id": "", "limit": 100, "sort": "id_asc"},
    "revoke_key": {"id": KEY_ID},
}
# What the original requires (italics in original-behaviour §10; the key tools' docs).
ORIGINAL_REQUIRED: dict[str, set[str]] = {
    "create_queue": {"name"},
    "send": {"queue", "body"},
    "receive": {"queue"},
    "complete": {"queue", "seq_number", "lock_token"},
    "abandon": {"queue", "seq_number", "lock_token"},
    "reject": {"queue", "seq_number", "lock_token"},
    "renew": {"queue", "seq_number", "lock_token"},
    "defer": {"queue", "seq_number", "lock_token"},
    "receive_deferred": {"queue", "seq_numbers"},
    "peek": {"queue"},
    "stats": {"queue"},
    "redrive": {"queue"},
    "purge": {"queue"},
    "create_key": {"id", "name", "permissions"},
    "revoke_key": {"id"},
}


@pytest.fixture(scope="module")
def forwarder() -> Forwarder:
    return Forwarder(HttpClient("http://127.0.0.1:9", "t"))  # never called: check only


def test_the_original_has_18_tools_and_we_serve_each() -> None:
    assert len(ORIGINAL) == 18
    assert set(ORIGINAL) <= set(BY_NAME)


@pytest.mark.parametrize(("name", "arguments"), ORIGINAL.items(), ids=list(ORIGINAL))
def test_the_original_s_arguments_are_accepted(
    forwarder: Forwarder, name: str, arguments: dict[str, Any]
) -> None:
    tool = BY_NAME[name]
    assert set(arguments) <= set(tool.input_schema["properties"]), "an argument is missing"
    forwarder.check(tool, arguments)  # the schema check: no InvalidArgument
    route, request = tool.request(arguments)
    assert route in tool.routes and isinstance(request, route.request)


@pytest.mark.parametrize("name", ORIGINAL_REQUIRED, ids=list(ORIGINAL_REQUIRED))
def test_we_require_no_more_than_the_original(name: str) -> None:
    """A call the original's schema allows is never refused by ours as incomplete."""
    assert set(BY_NAME[name].input_schema.get("required", [])) <= ORIGINAL_REQUIRED[name]


def test_the_arguments_reach_the_wire_under_their_fields() -> None:
    _, reject = BY_NAME["reject"].request(ORIGINAL["reject"])
    assert (reject.dead_letter_reason, reject.dead_letter_description) == ("bad", "why")
    _, send = BY_NAME["send"].request(ORIGINAL["send"])
    (message,) = send.messages
    assert (message.body, message.message_id, message.group_id) == (b"hello", "m-1", "g")
    _, receive = BY_NAME["receive"].request(ORIGINAL["receive"])
    assert (receive.max_messages, receive.wait_time_ms) == (2, 100)


def test_reject_offers_reason_not_the_wire_name(forwarder: Forwarder) -> None:
    props = BY_NAME["reject"].input_schema["properties"]
    assert "reason" in props and "description" in props
    assert "dead_letter_reason" not in props
    with pytest.raises(errors.InvalidArgument, match="dead_letter_reason"):
        forwarder.check(BY_NAME["reject"], {**ORIGINAL["reject"], "dead_letter_reason": "x"})
    both = {**ORIGINAL["reject"], "dead_letter_reason": "x"}
    with pytest.raises(errors.InvalidArgument, match="not both"):
        BY_NAME["reject"].request(both)


def test_send_answers_seq_numbers_as_a_list() -> None:
    result = BY_NAME["send"].result(wire.SendResponse((42,)))
    assert result == {"seq_numbers": [42]}


# -- receive: the schema's default and bounds (issues 31 and 26) --------------------------


def test_receive_s_schema_default_agrees_with_its_description() -> None:
    prop = BY_NAME["receive"].input_schema["properties"]["max_messages"]
    assert prop["default"] == 1 and "1 to 256" in prop["description"]
    _, request = BY_NAME["receive"].request({"queue": "q"})
    assert request.max_messages in (0, 1)  # the wire's "0 means 1": one message


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"max_messages": -1}, "max_messages: -1 is less than the minimum of 1"),
        ({"max_messages": 0}, "max_messages: 0 is less than the minimum of 1"),
        ({"max_messages": 257}, "max_messages: 257 is greater than the maximum of 256"),
        ({"wait_time_ms": -5}, "wait_time_ms: -5 is less than the minimum of 0"),
        ({"wait_time_ms": 20_001}, "wait_time_ms: 20001 is greater than the maximum of 20000"),
    ],
)
def test_receive_out_of_bounds_is_invalid_argument_not_clamped(
    forwarder: Forwarder, arguments: dict[str, Any], words: str
) -> None:
    """Refused before anything is sent (the client points at a closed port: a call
    that got through would be ``unavailable``)."""
    outcome = forwarder.call(BY_NAME["receive"], {"queue": "q", **arguments})
    assert outcome.error is not None and outcome.error.code == "invalid_argument"
    assert outcome.error.message == words


# -- null arguments are absent, as on the wire ----------------------------------------------


def test_a_null_optional_argument_is_absent(forwarder: Forwarder) -> None:
    receive = BY_NAME["receive"]
    nulls = {"queue": "q", "max_messages": None, "wait_time_ms": None}
    cleaned = convert.without_nulls(receive.input_schema, nulls)
    assert cleaned == {"queue": "q"}
    forwarder.check(receive, cleaned)
    create = BY_NAME["create_queue"]
    nested = {"name": "q", "config": {"lock_duration_ms": None, "max_delivery_count": 3}}
    assert convert.without_nulls(create.input_schema, nested) == {
        "name": "q",
        "config": {"max_delivery_count": 3},
    }


def test_a_null_required_argument_is_still_refused(forwarder: Forwarder) -> None:
    outcome = forwarder.call(BY_NAME["stats"], {"queue": None})
    assert outcome.error is not None and outcome.error.code == "invalid_argument"
    assert "queue" in outcome.error.message and "None" in outcome.error.message
    outcome = forwarder.call(BY_NAME["stats"], {"queue": "q", "bogus": None})
    assert outcome.error is not None and "bogus" in outcome.error.message


# -- what the descriptions promise ----------------------------------------------------------


def test_create_queue_says_a_repeat_replaces_the_configuration() -> None:
    words = BY_NAME["create_queue"].description
    assert "REPLACES the queue's whole configuration" in words and "harmless" not in words


def test_purge_names_the_argument_that_purges_everything(forwarder: Forwarder) -> None:
    purge = BY_NAME["purge"]
    assert "`all: true`" in purge.description
    assert "all" in purge.input_schema["properties"]
    outcome = forwarder.call(purge, {"queue": "q"})
    assert outcome.error is not None and outcome.error.code == "invalid_argument"
    assert "`all: true`" in outcome.error.message


def test_observe_says_when_the_full_snapshot_is_needed() -> None:
    words = BY_NAME["observe"].description
    assert "overview" in words and "only when you need" in words
