"""The ``overview`` tool's answer: the broker at a glance, built from one Observe.

``observe`` answers the whole observation (tens of KB even on an empty broker: every
counter, histogram and HTTP measurement), too much for an agent's context when it only
asks "is the broker healthy, and which queue is backing up?". This keeps what answers
that: health (collection, read probe, failing maintenance, replication), storage (file
size, failed storage operations) and one compact row per queue (counts by state, oldest
message age). Rows are arrays under ``queue_columns`` (field names once, not per queue):
50 queues fit in well under 4 KB. Past ``BUDGET`` bytes the quietest queues are left
out and counted, so the answer stays small on any broker.

It reads the observation as JSON and only a few fields, tolerating either spelling of
the ones the original's contract renamed (``oldest_message_age_ms`` /
``oldest_age_seconds``; per-row ``count`` / ``duration.count``), so the summary does not
depend on the Observe response's exact shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec

BUDGET = 3_500  # bytes of JSON for the queue rows; the rest of the answer is < 500
COLUMNS = ("queue", "kind", "active", "locked", "deferred", "scheduled", "dead_lettered")
AGE_COLUMN = "oldest_age_s"
_STATES = COLUMNS[2:]


def overview(response: Any) -> dict[str, Any]:
    """The summary of an Observe response (a decoded Struct or its JSON object)."""
    obs: Mapping[str, Any] = (
        msgspec.to_builtins(response) if isinstance(response, msgspec.Struct) else response
    )
    queues = obs.get("queues")
    rows = [_row(q) for q in queues] if isinstance(queues, list | tuple) else None
    failing = [t for t in (_failing(m) for m in obs.get("maintenance") or ()) if t]
    collection = obs.get("collection") or {}
    runtime = obs.get("runtime") or {}
    replication = obs.get("replication") or {}
    problems = []
    if collection.get("state") != "available":
        problems.append(f"queue collection unavailable ({collection.get('error_code') or '?'})")
    if runtime.get("read_available") is False:
        problems.append("storage read probe failed")
    problems += [f"maintenance task {t['task']} failing" for t in failing]
    if replication.get("state") == "unavailable":
        problems.append("replication unavailable")
    out: dict[str, Any] = {
        "health": "degraded" if problems else "ok",
        "problems": problems,
        "version": obs.get("version", ""),
        "backend": obs.get("backend", ""),
        "storage": {
            # The original's 0 beside db_size_available false is unknown, not empty.
            "db_size_bytes": (
                runtime.get("db_size_bytes") if runtime.get("db_size_available", True) else None
            ),
            "failed_operations": _failed_operations(obs.get("storage") or {}),
        },
        "failing_maintenance": failing,
    }
    if replication.get("state", "disabled") != "disabled":
        out["replication"] = {k: replication.get(k) for k in ("state", "lag_seconds")}
    if rows is None:
        out["queues"] = None  # unknown, not none: the collection is unavailable
        return out
    out["queue_count"] = sum(1 for r in rows if r[1] == "queue")
    out["subscription_count"] = sum(1 for r in rows if r[1] == "subscription")
    out["queue_columns"] = [*COLUMNS, AGE_COLUMN]
    shown = _within_budget(rows)
    out["queues"] = shown
    if len(shown) < len(rows):
        out["queues_omitted"] = len(rows) - len(shown)
        out["note"] = "the quietest queues are left out: stats or observe show every queue"
    return out


def _row(q: Mapping[str, Any]) -> list[Any]:
    if "oldest_message_age_ms" in q:
        age = (q.get("oldest_message_age_ms") or 0) / 1000
    else:
        age = q.get("oldest_age_seconds") or 0
    return [q.get("queue", ""), q.get("kind", ""), *(q.get(s) or 0 for s in _STATES), round(age, 1)]


def _failing(task: Mapping[str, Any]) -> dict[str, Any] | None:
    """A maintenance task whose latest run failed, with how often in a row and why."""
    if "consecutive_failures" not in task and "last_outcome" not in task:
        failures = task.get("failures") or 0  # the original's row: counts since start only
        return {"task": task.get("task", ""), "failures": failures} if failures else None
    streak = task.get("consecutive_failures") or 0
    if not streak and task.get("last_outcome") != "failed":
        return None
    out: dict[str, Any] = {"task": task.get("task", ""), "consecutive_failures": streak}
    diagnostics = task.get("diagnostics") or ()
    if diagnostics:
        out["error"] = str(diagnostics[-1].get("explanation", ""))[:200]
    return out


def _failed_operations(storage: Mapping[str, Any]) -> int:
    """Storage operations that failed (``error`` or ``outcome_unknown``) since start."""
    total = 0
    for op in storage.get("operations") or ():
        if op.get("outcome") in ("error", "outcome_unknown"):
            count = op.get("count")
            if count is None:
                count = (op.get("duration") or {}).get("count", 0)
            total += count or 0
    return int(total)


def _interest(row: list[Any]) -> tuple[Any, ...]:
    """Dead letters first, then backlog, then age: what an agent looks for."""
    return (row[6] > 0, row[6], row[2] + row[3], row[-1])


def _within_budget(rows: list[list[Any]]) -> list[list[Any]]:
    """All rows (by name) if they fit ``BUDGET``, else the most interesting that fit."""
    sizes = [len(json.dumps(r, ensure_ascii=False)) + 2 for r in rows]
    if sum(sizes) <= BUDGET:
        return rows
    keep, used = set(), 0
    for i in sorted(range(len(rows)), key=lambda i: _interest(rows[i]), reverse=True):
        if used + sizes[i] > BUDGET:
            continue
        keep.add(i)
        used += sizes[i]
    return [r for i, r in enumerate(rows) if i in keep]
