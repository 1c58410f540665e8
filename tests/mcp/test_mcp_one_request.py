"""Every tool call is ONE request to the broker (issue 15): counted by the broker itself,
in ``observe``'s per-RPC request measurements, around a session of real tool calls."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import anyio
from mcp_support import Broker, mcp_env, ok, stdio_session, tool_error

from mqlite import wire


def requests_by_rpc(observation: dict[str, Any]) -> Counter[tuple[str, str]]:
    return Counter(
        {(r["rpc"], r["code"]): r["count"] for r in observation["http"].get("requests", [])}
    )


def test_each_tool_call_is_one_broker_request_and_a_bad_argument_is_none(
    broker: Broker, tmp_path: Path
) -> None:
    queue = broker.create_queue()

    async def scenario() -> Counter[tuple[str, str]]:
        async with stdio_session(mcp_env(broker), tmp_path / "err") as c:
            before = requests_by_rpc(ok(await c.call_tool("observe", {})))
            ok(await c.call_tool("send", {"queue": queue, "body": "one"}))
            (m,) = ok(await c.call_tool("receive", {"queue": queue}))["messages"]
            settle = {"queue": queue, "seq_number": m["seq_number"], "lock_token": m["lock_token"]}
            ok(await c.call_tool("renew", settle))
            ok(await c.call_tool("complete", settle))
            stale = {**settle, "lock_token": "0" * 32}
            assert tool_error(await c.call_tool("abandon", stale))["code"] == "lock_lost"
            ok(await c.call_tool("stats", {"queue": queue}))
            # Refused by the schema or the strict decoder: nothing is sent.
            tool_error(await c.call_tool("stats", {"queue": queue, "nope": 1}))
            tool_error(await c.call_tool("peek", {"queue": queue, "max": "many"}))
            tool_error(await c.call_tool("purge", {"queue": queue}))
            after = requests_by_rpc(ok(await c.call_tool("observe", {})))
        return after - before

    grown = anyio.run(scenario)
    grown.pop((wire.OBSERVE.name, "ok"), None)  # the first observe may count itself or not
    assert grown == Counter(
        {
            (wire.SEND.name, "ok"): 1,
            (wire.RECEIVE.name, "ok"): 1,
            (wire.RENEW_BATCH.name, "ok"): 1,
            (wire.COMPLETE.name, "ok"): 1,
            (wire.ABANDON.name, "lock_lost"): 1,
            (wire.STATS.name, "ok"): 1,
        }
    )
