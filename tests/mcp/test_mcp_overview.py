"""The ``overview`` tool (issue 28): the broker at a glance from one Observe, under 4 KB
for 50 queues where ``observe`` answers tens of KB. End to end on a real broker through
the real ``mqlite-mcp``; the summarizing rules in-process on observation JSON (either
spelling of the fields the original's Observe contract renamed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp_support import BrokerFactory, mcp_env, ok, stdio_session

from mqlite.mcp.overview import BUDGET, overview

QUEUES = 50


def test_overview_of_50_queues_is_under_4_kb_and_observe_is_not(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    own = broker_factory()
    names = [f"orders-eu-{i:02d}" for i in range(QUEUES)]
    for name in names:
        own.create_queue(name)
    own.send(names[0], "a", "b", "c")
    own.send(names[1], "x")
    (m,) = own.receive(names[1])
    settle = {"queue": names[1], "seq_number": m["seq_number"], "lock_token": m["lock_token"]}
    own.ok("QueueService/Reject", settle)
    sizes: dict[str, int] = {}

    async def scenario() -> dict[str, Any]:
        async with stdio_session(mcp_env(own), tmp_path / "err") as c:
            full = await c.call_tool("observe", {})
            summary = await c.call_tool("overview", {})
            sizes["observe"] = len(full.content[0].text.encode())
            sizes["overview"] = len(summary.content[0].text.encode())
            return dict(ok(summary))

    seen = anyio.run(scenario)
    assert sizes["overview"] < 4096, sizes
    assert sizes["observe"] > 4 * sizes["overview"], sizes
    assert seen["health"] == "ok" and seen["problems"] == []
    assert seen["queue_count"] == QUEUES and "queues_omitted" not in seen
    columns = seen["queue_columns"]
    rows = {r[0]: dict(zip(columns, r, strict=True)) for r in seen["queues"]}
    assert set(rows) == set(names)
    assert rows[names[0]]["active"] == 3 and rows[names[0]]["oldest_age_s"] >= 0
    assert rows[names[1]]["dead_lettered"] == 1 and rows[names[1]]["active"] == 0
    assert rows[names[2]]["active"] == 0 and rows[names[2]]["kind"] == "queue"
    assert seen["storage"]["db_size_bytes"] > 0
    assert seen["storage"]["failed_operations"] == 0
    assert seen["failing_maintenance"] == []
    print(f"overview {sizes['overview']} B, observe {sizes['observe']} B for {QUEUES} queues")


def _observation(queues: list[dict[str, Any]] | None, **extra: Any) -> dict[str, Any]:
    return {
        "version": "1",
        "backend": "local",
        "collection": {"state": "available" if queues is not None else "unavailable"},
        "runtime": {"read_available": True, "db_size_bytes": 4096},
        "queues": queues,
        "storage": {"operations": []},
        "maintenance": [],
        **extra,
    }


def test_an_unavailable_collection_is_said_not_hidden() -> None:
    seen = overview(_observation(None, collection={"state": "unavailable", "error_code": "busy"}))
    assert seen["queues"] is None and seen["health"] == "degraded"
    assert seen["problems"] == ["queue collection unavailable (busy)"]


def test_failing_maintenance_and_storage_errors_in_either_shape() -> None:
    ours = {
        "task": "ttl",
        "last_outcome": "failed",
        "consecutive_failures": 2,
        "diagnostics": [{"explanation": "disk I/O error"}],
    }
    healthy = {"task": "locks", "last_outcome": "ok", "consecutive_failures": 0}
    original = {"task": "dedup", "runs": 5, "failures": 1, "interrupted": 0}
    ops = [
        {"operation": "write", "outcome": "error", "error_code": "io", "count": 3},
        {"operation": "read", "outcome": "ok", "count": 90},
        {"operation": "write", "outcome": "outcome_unknown", "duration": {"count": 1}},
    ]
    seen = overview(
        _observation([], maintenance=[ours, healthy, original], storage={"operations": ops})
    )
    assert seen["failing_maintenance"] == [
        {"task": "ttl", "consecutive_failures": 2, "error": "disk I/O error"},
        {"task": "dedup", "failures": 1},
    ]
    assert seen["storage"]["failed_operations"] == 4
    assert seen["health"] == "degraded" and "maintenance task ttl failing" in seen["problems"]


def test_the_oldest_age_in_either_spelling() -> None:
    row = {"queue": "a", "kind": "queue", "active": 1}
    seen = overview(_observation([{**row, "oldest_age_seconds": 2.25}]))
    assert seen["queues"] == [["a", "queue", 1, 0, 0, 0, 0, 2.2]]
    seen = overview(_observation([{**row, "oldest_message_age_ms": 2500}]))
    assert seen["queues"] == [["a", "queue", 1, 0, 0, 0, 0, 2.5]]


def test_past_the_budget_the_quietest_queues_are_left_out_and_counted() -> None:
    quiet = [
        {"queue": f"quiet-queue-with-a-long-name-{i:04d}", "kind": "queue"} for i in range(400)
    ]
    loud = {"queue": "zz-dead", "kind": "queue", "dead_lettered": 9, "active": 1}
    seen = overview(_observation([*quiet, loud]))
    assert len(json.dumps(seen["queues"])) <= BUDGET + 100
    assert seen["queues_omitted"] == 401 - len(seen["queues"]) > 0
    assert ["zz-dead", "queue", 1, 0, 0, 0, 9, 0] in seen["queues"]
    assert seen["queues"] == sorted(seen["queues"])  # still in name order
    assert len(json.dumps(seen).encode()) < 4096
