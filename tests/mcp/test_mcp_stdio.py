"""``mqlite-mcp`` over stdio, as an agent host runs it: the real process, driven by the MCP
SDK's own client, against a real broker process. Each test is one MCP session."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from jsonschema import Draft202012Validator
from mcp_support import (
    ADMIN_TOKEN,
    GOLDEN,
    MONITOR_TOKEN,
    Broker,
    BrokerFactory,
    mcp_env,
    now_ms,
    ok,
    stdio_session,
    tool_error,
    unique,
)

from mqlite.mcp.tools import TOOLS
from mqlite.version import VERSION
from original_observe_decoder import decode


def run(scenario: Any) -> None:
    anyio.run(scenario)


def test_initialize_negotiates_and_lists_the_golden_tools(broker: Broker, tmp_path: Path) -> None:
    """The legacy handshake (``initialize``) and the current protocol's discovery both
    work; the tool list is the golden one and every input schema is valid JSON Schema."""

    async def scenario() -> None:
        async with stdio_session(mcp_env(broker), tmp_path / "err", mode="legacy") as c:
            assert c.server_info is not None
            assert (c.server_info.name, c.server_info.version) == ("mqlite-mcp", VERSION)
            assert c.server_capabilities.tools is not None
            legacy = await c.list_tools()
        async with stdio_session(mcp_env(broker), tmp_path / "err") as c:
            listed = await c.list_tools()
        for result in (legacy, listed):
            shown = [
                t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in result.tools
            ]
            assert shown == json.loads(GOLDEN.read_text(encoding="utf-8"))
        for tool in listed.tools:
            Draft202012Validator.check_schema(tool.input_schema)
            assert tool.input_schema["type"] == "object"
        assert [t.name for t in listed.tools] == [t.name for t in TOOLS]

    run(scenario)


def test_send_receive_complete_round_trip(broker: Broker, tmp_path: Path) -> None:
    queue = unique("mcp")

    async def scenario() -> None:
        async with stdio_session(mcp_env(broker), tmp_path / "err") as c:
            assert ok(await c.call_tool("create_queue", {"name": queue})) == {}
            sent = ok(
                await c.call_tool(
                    "send",
                    {
                        "queue": queue,
                        "body": "héllo agent",
                        "message_id": "m-1",
                        "subject": "greeting",
                        "properties": {"lang": "fr"},
                    },
                )
            )
            got = ok(await c.call_tool("receive", {"queue": queue, "wait_time_ms": 2000}))
            (msg,) = got["messages"]
            assert sent == {"seq_numbers": [msg["seq_number"]]}  # a list, as HTTP Send
            assert msg["body_text"] == "héllo agent"
            assert base64.b64decode(msg["body"]) == "héllo agent".encode()
            assert (msg["message_id"], msg["subject"], msg["properties"]) == (
                "m-1",
                "greeting",
                {"lang": "fr"},
            )
            assert msg["lock_token"] and msg["delivery_count"] == 1
            renewed = ok(
                await c.call_tool(
                    "renew",
                    {
                        "queue": queue,
                        "seq_number": msg["seq_number"],
                        "lock_token": msg["lock_token"],
                    },
                )
            )
            assert renewed["locked_until_ms"] >= msg["locked_until_ms"]
            settle = {
                "queue": queue,
                "seq_number": msg["seq_number"],
                "lock_token": msg["lock_token"],
            }
            assert ok(await c.call_tool("complete", settle)) == {"ok": True}
            stats = ok(await c.call_tool("stats", {"queue": queue}))
            assert stats["total"] == 0 and stats["queue"] == queue
            assert ok(await c.call_tool("peek", {"queue": queue})) == {"messages": []}

    run(scenario)


def test_binary_bodies_travel_as_base64_and_scheduled_sends_can_be_cancelled(
    broker: Broker, tmp_path: Path
) -> None:
    queue = broker.create_queue()
    raw = b"\xff\x00\xfe binary"

    async def scenario() -> None:
        async with stdio_session(mcp_env(broker), tmp_path / "err") as c:
            b64 = base64.b64encode(raw).decode()
            ok(await c.call_tool("send", {"queue": queue, "body_base64": b64}))
            (msg,) = ok(await c.call_tool("peek", {"queue": queue}))["messages"]
            assert msg["body"] == b64 and "body_text" not in msg
            both = await c.call_tool("send", {"queue": queue, "body": "a", "body_base64": "YQ=="})
            assert tool_error(both)["code"] == "invalid_argument"
            later = now_ms() + 3_600_000
            scheduled = ok(
                await c.call_tool(
                    "send",
                    {"queue": queue, "body": "later", "scheduled_enqueue_time_ms": later},
                )
            )
            peeked = ok(await c.call_tool("peek", {"queue": queue, "state": "scheduled"}))
            assert [m["seq_number"] for m in peeked["messages"]] == scheduled["seq_numbers"]
            cancel = {"queue": queue, "seq_number": scheduled["seq_numbers"][0]}
            assert ok(await c.call_tool("cancel", cancel)) == {"ok": True}
            assert tool_error(await c.call_tool("cancel", cancel))["code"] == "not_found"

    run(scenario)


def test_lock_lost_and_other_broker_errors_are_tool_errors(broker: Broker, tmp_path: Path) -> None:
    """Errors come back as results (isError, the wire code and message), never protocol
    failures: the session goes on after each one."""
    queue = broker.create_queue()
    broker.send(queue, "x")

    async def scenario() -> None:
        async with stdio_session(mcp_env(broker), tmp_path / "err") as c:
            (msg,) = ok(await c.call_tool("receive", {"queue": queue}))["messages"]
            wrong = {"queue": queue, "seq_number": msg["seq_number"], "lock_token": "0" * 32}
            for tool in ("complete", "renew", "abandon", "defer"):
                error = tool_error(await c.call_tool(tool, wrong))
                assert error["code"] == "lock_lost", (tool, error)
                assert "lock" in error["message"]
            missing = tool_error(await c.call_tool("stats", {"queue": unique("none")}))
            assert missing == {**missing, "code": "not_found", "reason": "queue_not_found"}
            bad = tool_error(await c.call_tool("receive", {"queue": queue, "max_messages": "2"}))
            assert bad["code"] == "invalid_argument" and "max_messages" in bad["message"]
            extra = tool_error(await c.call_tool("stats", {"queue": queue, "nope": 1}))
            assert extra["code"] == "invalid_argument"
            nulls = {"queue": queue, "from_seq": None, "state": None, "max": None}
            assert len(ok(await c.call_tool("peek", nulls))["messages"]) == 1  # null = absent
            negative = tool_error(
                await c.call_tool("receive", {"queue": queue, "max_messages": -1})
            )
            assert negative["code"] == "invalid_argument", negative  # not clamped silently
            assert "max_messages" in negative["message"] and "minimum of 1" in negative["message"]
            wire_name = {**wrong, "lock_token": msg["lock_token"], "dead_letter_reason": "x"}
            assert tool_error(await c.call_tool("reject", wire_name))["code"] == "invalid_argument"
            reject = {**wrong, "lock_token": msg["lock_token"], "reason": "bad"}
            reject["description"] = "it was bad"
            assert ok(await c.call_tool("reject", reject)) == {"ok": True}
            (dead,) = ok(await c.call_tool("peek", {"queue": queue, "state": "dead_lettered"}))[
                "messages"
            ]
            assert (dead["dead_letter_reason"], dead["dead_letter_description"]) == (
                "bad",
                "it was bad",
            )

    run(scenario)


def test_purge_needs_a_bound_or_all(broker: Broker, tmp_path: Path) -> None:
    queue = broker.create_queue()
    broker.send(queue, "a", "b")
    for m in broker.receive(queue, 2):
        broker.ok(
            "QueueService/Reject",
            {"queue": queue, "seq_number": m["seq_number"], "lock_token": m["lock_token"]},
        )

    async def scenario() -> None:
        async with stdio_session(mcp_env(broker), tmp_path / "err") as c:
            refused = tool_error(await c.call_tool("purge", {"queue": queue}))
            assert refused["code"] == "invalid_argument" and "all: true" in refused["message"]
            both = tool_error(await c.call_tool("purge", {"queue": queue, "max": 1, "all": True}))
            assert both["code"] == "invalid_argument"
            assert ok(await c.call_tool("stats", {"queue": queue}))["dead_lettered"] == 2
            assert ok(await c.call_tool("purge", {"queue": queue, "max": 1})) == {"purged": 1}
            assert ok(await c.call_tool("purge", {"queue": queue, "all": True})) == {"purged": 1}

    run(scenario)


def test_a_send_only_key_is_denied_what_it_may_not_do(broker: Broker, tmp_path: Path) -> None:
    """The broker decides: the token is forwarded as is, a refusal is a tool error."""
    queue = broker.create_queue()
    _, send_token = broker.create_key(["send"])

    async def scenario() -> None:
        async with stdio_session(mcp_env(broker, send_token), tmp_path / "err") as c:
            sent = ok(await c.call_tool("send", {"queue": queue, "body": "ok"}))
            assert sent["seq_numbers"][0] > 0
            for tool, args in (
                ("receive", {"queue": queue}),
                ("list_queues", {}),
                ("list_keys", {}),
            ):
                error = tool_error(await c.call_tool(tool, args))
                assert error["code"] == "permission_denied", (tool, error)

    run(scenario)
    assert send_token not in (tmp_path / "err").read_text()


def test_keys_topics_and_queue_admin(broker: Broker, tmp_path: Path) -> None:
    topic, sub, plain = unique("topic"), unique("sub"), unique("plain")
    secrets: list[str] = []

    async def scenario() -> None:
        async with stdio_session(mcp_env(broker), tmp_path / "err") as c:
            key_id = uuid.uuid4().hex
            created = ok(
                await c.call_tool(
                    "create_key", {"id": key_id, "name": "agent", "permissions": ["listen"]}
                )
            )
            assert created["key"]["id"] == key_id and created["token"].startswith("mqk_")
            secrets.append(created["token"])
            page = ok(await c.call_tool("list_keys", {"sort": "created_desc"}))
            assert key_id in [k["id"] for k in page["keys"]]
            assert ok(await c.call_tool("revoke_key", {"id": key_id})) == {"ok": True}

            expr = 'subject == "keep"'
            assert ok(await c.call_tool("test_filter", {"expr": expr}))["valid"] is True
            sample = {"expr": expr, "message": {"subject": "keep", "body": "x"}}
            assert ok(await c.call_tool("test_filter", sample))["matched"] is True
            ok(
                await c.call_tool(
                    "subscribe", {"topic": topic, "name": sub, "filter": {"expr": expr}}
                )
            )
            subs = ok(await c.call_tool("list_subscriptions", {}))["subscriptions"]
            assert {"topic": topic, "name": sub, "expr": expr} in subs
            ok(await c.call_tool("send", {"queue": topic, "body": "1", "subject": "keep"}))
            ok(await c.call_tool("send", {"queue": topic, "body": "2", "subject": "drop"}))
            assert ok(await c.call_tool("stats", {"queue": sub}))["active"] == 1
            (m,) = ok(await c.call_tool("receive", {"queue": sub}))["messages"]
            settle = {"queue": sub, "seq_number": m["seq_number"], "lock_token": m["lock_token"]}
            ok(await c.call_tool("defer", settle))
            back = ok(
                await c.call_tool(
                    "receive_deferred", {"queue": sub, "seq_numbers": [m["seq_number"]]}
                )
            )
            (again,) = back["messages"]
            ok(await c.call_tool("complete", {**settle, "lock_token": again["lock_token"]}))
            assert ok(await c.call_tool("unsubscribe", {"topic": topic, "name": sub})) == {}

            queues = ok(await c.call_tool("list_queues", {}))["queues"]
            assert sub not in [q["name"] for q in queues]
            config = {"max_delivery_count": 3, "ordering_mode": "group_fifo"}
            ok(await c.call_tool("create_queue", {"name": plain, "config": config}))
            queues = ok(await c.call_tool("list_queues", {}))["queues"]
            (info,) = [q for q in queues if q["name"] == plain]
            assert (info["max_delivery_count"], info["ordering_mode"]) == (3, "group_fifo")
            stale = {"name": plain, "generation": "stale"}
            assert tool_error(await c.call_tool("delete_queue", stale))["code"] != "internal"
            done = {"name": plain, "generation": info["generation"]}
            assert ok(await c.call_tool("delete_queue", done)) == {"deleted": True}

    run(scenario)
    stderr = (tmp_path / "err").read_text()
    assert secrets and secrets[0] not in stderr and ADMIN_TOKEN not in stderr
    assert '"tool": "create_key"' in stderr  # it logs the call, never the secret


def test_observe_with_a_monitor_token_and_nothing_else(broker: Broker, tmp_path: Path) -> None:
    """A read-only monitoring agent: the same tool list, observe answers, every other
    tool is the broker's permission_denied; a send-only key may not observe."""
    queue = broker.create_queue()
    broker.send(queue, "waiting")
    _, send_token = broker.create_key(["send"])

    async def scenario() -> None:
        async with stdio_session(mcp_env(broker, MONITOR_TOKEN), tmp_path / "err") as c:
            assert len((await c.list_tools()).tools) == len(TOOLS)
            seen = ok(await c.call_tool("observe", {}))
            decode(json.dumps(seen).encode())  # what the original's MCP host accepts
            assert seen["access"] == "monitor" and seen["collection"]["state"] == "available"
            (gauges,) = [q for q in seen["queues"] if q["queue"] == queue]
            assert gauges["active"] == 1, gauges
            assert seen["http"]["state"] == "available"
            glance = ok(await c.call_tool("overview", {}))
            assert queue in [row[0] for row in glance["queues"]]
            for tool, args in (("list_queues", {}), ("peek", {"queue": queue})):
                error = tool_error(await c.call_tool(tool, args))
                assert error["code"] == "permission_denied", (tool, error)
        async with stdio_session(mcp_env(broker), tmp_path / "err") as c:
            assert ok(await c.call_tool("observe", {}))["access"] == "manage"
        async with stdio_session(mcp_env(broker, send_token), tmp_path / "err") as c:
            error = tool_error(await c.call_tool("observe", {}))
            assert error["code"] == "permission_denied"

    run(scenario)
    stderr = (tmp_path / "err").read_text()
    assert MONITOR_TOKEN not in stderr and send_token not in stderr


def test_a_broker_gone_mid_session_is_a_tool_error(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    """The session outlives the broker: each call answers ``unavailable`` instead."""
    own = broker_factory()
    queue = own.create_queue()

    async def scenario() -> None:
        async with stdio_session(mcp_env(own), tmp_path / "err") as c:
            ok(await c.call_tool("stats", {"queue": queue}))
            await anyio.to_thread.run_sync(own.stop)
            for tool, args in (
                ("stats", {"queue": queue}),
                ("send", {"queue": queue, "body": "x"}),
            ):
                error = tool_error(await c.call_tool(tool, args))
                assert error["code"] == "unavailable", (tool, error)
            assert len((await c.list_tools()).tools) == len(TOOLS)

    run(scenario)
