"""The tool table is complete and derived: every route has a tool or a written reason,
every schema is valid JSON Schema built from the request Struct, the annotations match
the words, and the golden file pins what agents see. In-process, no broker."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator
from mcp_support import GOLDEN, modules_loaded_by

from mqlite import errors, wire
from mqlite.mcp import convert
from mqlite.mcp.listener import BearerGate
from mqlite.mcp.server import listing_json
from mqlite.mcp.tools import BY_NAME, NOT_TOOLS, TOOLS

REPO = Path(__file__).resolve().parents[2]
SERVED = {r.name for t in TOOLS for r in t.routes}


@pytest.mark.parametrize("route", wire.ROUTES, ids=lambda r: r.name)
def test_every_route_has_a_tool_or_a_reason(route: wire.Route[Any, Any]) -> None:
    """A new RPC fails here until it gets a tool in mqlite.mcp.tools (or a reason why not
    in NOT_TOOLS): an agent cannot silently miss a verb."""
    if route.name in NOT_TOOLS:
        assert route.name not in SERVED, f"{route.name} is both served and excluded"
        assert len(NOT_TOOLS[route.name]) > 20, "say why it is not a tool"
    else:
        assert route.name in SERVED, f"{route.name} has no MCP tool and no reason in NOT_TOOLS"


def test_nothing_in_the_table_is_stale() -> None:
    names = {r.name for r in wire.ROUTES}
    assert set(NOT_TOOLS) <= names
    assert names >= SERVED
    assert len(BY_NAME) == len(TOOLS)
    assert all(re.fullmatch(r"[a-z][a-z_]*[a-z]", t.name) for t in TOOLS)


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_every_input_schema_is_valid_json_schema_with_every_argument_described(tool: Any) -> None:
    schema = tool.input_schema
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert "$ref" not in json.dumps(schema), "hosts read flat schemas best"
    for name, prop in schema["properties"].items():
        assert prop.get("description"), f"{tool.name}.{name} has no description"


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_other_routes_of_a_tool_take_the_same_request(tool: Any) -> None:
    assert all(r.request is tool.route.request for r in tool.also)


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_annotations_and_descriptions_agree(tool: Any) -> None:
    """Destructive tools say so first; read-only ones are exactly the reads."""
    assert tool.full_description.startswith("Destructive:") == tool.destructive
    assert not (tool.read_only and tool.destructive)
    assert tool.full_description.endswith(")."), "the credential it needs closes it"


def test_the_hints_are_the_ones_agents_rely_on() -> None:
    read_only = {t.name for t in TOOLS if t.read_only}
    destructive = {t.name for t in TOOLS if t.destructive}
    assert read_only == {
        "observe",
        "overview",
        "list_queues",
        "list_subscriptions",
        "test_filter",
        "peek",
        "stats",
        "list_keys",
        "list_schedules",
        "list_audit",
        "list_pushes",
    }
    assert destructive == {
        "delete_queue",
        "unsubscribe",
        "purge",
        "cancel",
        "revoke_key",
        "delete_schedule",
        "delete_push",
    }
    assert not BY_NAME["receive"].idempotent and not BY_NAME["send"].idempotent
    assert BY_NAME["complete"].idempotent and BY_NAME["create_queue"].idempotent


def test_the_tool_list_is_the_golden_one() -> None:
    """What agents see changes only deliberately: after a change, run
    `.venv/bin/python scripts/gen_mcp_tools.py` and review the diff of the golden."""
    assert listing_json() == json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_the_issue_s_tool_set() -> None:
    assert [t.name for t in TOOLS] == [
        "observe",
        "overview",
        "list_queues",
        "create_queue",
        "delete_queue",
        "subscribe",
        "unsubscribe",
        "list_subscriptions",
        "test_filter",
        "send",
        "receive",
        "complete",
        "abandon",
        "reject",
        "renew",
        "defer",
        "receive_deferred",
        "peek",
        "stats",
        "redrive",
        "purge",
        "cancel",
        "create_key",
        "list_keys",
        "revoke_key",
        "create_schedule",
        "list_schedules",
        "delete_schedule",
        "list_audit",
        "create_push",
        "list_pushes",
        "delete_push",
    ]


def test_create_queue_offers_every_config_field() -> None:
    offered = BY_NAME["create_queue"].input_schema["properties"]["config"]["properties"]
    assert list(offered) == list(wire.QueueConfigJSON.__struct_fields__)


# -- arguments to requests, responses to results ------------------------------------------


def test_send_takes_one_message_as_top_level_arguments() -> None:
    props = BY_NAME["send"].input_schema["properties"]
    assert {"queue", "body", "body_base64", "message_id", "group_id", "subject"} <= set(props)
    assert {"properties", "scheduled_enqueue_time_ms", "ttl_ms"} <= set(props)
    assert not {"messages", "seq_number", "lock_token", "state"} & set(props), "output-only"
    route, req = BY_NAME["send"].request({"queue": "q", "body": "hé", "group_id": "g"})
    assert route is wire.SEND
    assert req.messages[0].body == "hé".encode() and req.messages[0].group_id == "g"
    at = {"queue": "q", "body_base64": "AP8=", "scheduled_enqueue_time_ms": 10**13}
    route, req = BY_NAME["send"].request(at)
    assert route is wire.SCHEDULE and req.messages[0].body == b"\x00\xff"


def test_a_wrong_argument_is_refused_in_the_broker_s_words_before_sending() -> None:
    with pytest.raises(errors.InvalidArgument, match="unknown field"):
        BY_NAME["stats"].request({"queue": "q", "extra": 1})
    with pytest.raises(errors.InvalidArgument, match="not both"):
        BY_NAME["send"].request({"queue": "q", "body": "a", "body_base64": "YQ=="})
    with pytest.raises(errors.InvalidArgument, match="all: true"):
        BY_NAME["purge"].request({"queue": "q"})
    with pytest.raises(errors.InvalidArgument, match="not valid Unicode"):
        BY_NAME["send"].request({"queue": "q", "body": "\ud800"})


def test_receive_always_carries_a_fresh_attempt_id() -> None:
    _, a = BY_NAME["receive"].request({"queue": "q"})
    _, b = BY_NAME["receive"].request({"queue": "q"})
    assert a.receive_attempt_id and a.receive_attempt_id != b.receive_attempt_id


def test_renew_is_a_one_item_renew_batch_and_a_stale_lock_is_lock_lost() -> None:
    route, req = BY_NAME["renew"].request({"queue": "q", "seq_number": 7, "lock_token": "t"})
    assert route is wire.RENEW_BATCH and req.messages == (wire.SettleItem(7, "t"),)
    good = wire.RenewBatchResponse((wire.BatchResult(7, True, 99),))
    assert BY_NAME["renew"].result(good) == {"seq_number": 7, "locked_until_ms": 99}
    with pytest.raises(errors.LockLost):
        BY_NAME["renew"].result(wire.RenewBatchResponse((wire.BatchResult(7, False),)))


def test_bodies_come_back_as_base64_and_as_text_when_utf8() -> None:
    """``body`` is the wire's (and the original tool's) base64; ``body_text`` is added
    when the body is UTF-8 text (issue 28); an empty body is omitted, as on the wire."""
    text = wire.ReceivedMessage(seq_number=1, lock_token="t", body="hé".encode())
    binary = wire.ReceivedMessage(seq_number=2, body=b"\xff")
    empty = wire.ReceivedMessage(seq_number=3)
    shown = convert.result_json(wire.ReceiveResponse((text, binary, empty)))
    assert shown == {
        "messages": [
            {"seq_number": 1, "lock_token": "t", "body": "aMOp", "body_text": "hé"},
            {"seq_number": 2, "body": base64.b64encode(b"\xff").decode()},
            {"seq_number": 3},
        ]
    }
    assert msgspec.json.decode(json.dumps(shown))  # plain JSON all the way down


# -- the HTTP listener's gate -------------------------------------------------------------


def test_the_bearer_gate_wants_exactly_the_token() -> None:
    async def app(*_: Any) -> None:
        raise AssertionError("never reached in this test")

    gate = BearerGate(app, "mqk_secret")
    assert gate.allows([(b"authorization", b"Bearer mqk_secret")])
    assert gate.allows([(b"Authorization", b"bearer  mqk_secret ")])
    for headers in (
        [],
        [(b"authorization", b"Bearer mqk_secre")],
        [(b"authorization", b"Bearer mqk_secretX")],
        [(b"authorization", b"Basic mqk_secret")],
        [(b"authorization", b"Bearer ")],
        [(b"authorization", b"mqk_secret")],
    ):
        assert not gate.allows(headers), headers
    with pytest.raises(ValueError):
        BearerGate(app, "")


def test_the_forwarder_loads_no_engine() -> None:
    """Building the server imports the SDK's HTTP client and the wire, never the engine."""
    loaded = modules_loaded_by(
        "from mqlite.mcp.forward import Forwarder\n"
        "from mqlite.mcp.server import build\n"
        "from mqlite.sdk.http import HttpClient\n"
        "build(Forwarder(HttpClient('http://127.0.0.1:9', 't')))"
    )
    heavy = ("mqlite.engine", "mqlite.server", "sqlite3", "re2", "apscheduler")
    assert [m for m in loaded if m.split(".")[0] in heavy or m.startswith(heavy)] == []
