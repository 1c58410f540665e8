"""AdminService/Observe and /metrics through a real broker (api-reference "Observe",
"Permissions"; observability "Read-only monitoring access", "Private diagnostic log"):
who may observe, the authentication outcomes counted, /metrics off by default, the
diagnostic log file, and a monitor credential that keeps working while storage fails."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import httpx
from e2e_support import Broker, BrokerFactory, now_ms, unique

import mqlite
from mqlite import wire

MONITOR = "mqk_e2e_monitor_" + "m" * 24
DENIED_FOR_MONITOR = [
    ("QueueService/Send", {"queue": "q", "messages": [{"body": "eA=="}]}),
    ("QueueService/Receive", {"queue": "q"}),
    ("QueueService/Peek", {"queue": "q"}),
    ("QueueService/Stats", {"queue": "q"}),
    ("AdminService/ListQueues", {}),
    ("AdminService/Status", {}),
    ("AdminService/CreateQueue", {"name": "x"}),
    ("AuthService/ListKeys", {}),
]


def metrics(b: Broker, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return b.anon.get("/metrics", headers=headers)


def observe(b: Broker, token: str | bool | None = True) -> dict[str, Any]:
    out: dict[str, Any] = b.ok("AdminService/Observe", {}, token=token)
    return out


def outcomes(obs: dict[str, Any]) -> dict[str, int]:
    return {a["outcome"]: a["count"] for a in obs["http"]["authentication"]}


def test_who_may_observe(broker_factory: BrokerFactory) -> None:
    b = broker_factory({"MQLITE_METRICS": "on", "MQLITE_MONITOR_TOKENS": MONITOR})
    assert b.anon.get("/").json()["metrics"] == "/metrics"
    mon = observe(b, MONITOR)
    assert mon["access"] == "monitor" and mon["http"]["state"] == "available"
    assert metrics(b, MONITOR).status_code == 200
    for method, body in DENIED_FOR_MONITOR:
        b.err(method, body, 403, "permission_denied", token=MONITOR)
    assert observe(b)["access"] == "manage"
    _, manage_key = b.create_key(["manage"])
    assert observe(b, manage_key)["access"] == "manage"
    assert metrics(b, manage_key).status_code == 200
    for perms in (["send"], ["listen"], ["send", "listen"]):
        _, key = b.create_key(perms)
        b.err("AdminService/Observe", {}, 403, "permission_denied", token=key)
        assert metrics(b, key).status_code == 403
    # monitor is configuration-only: never a managed-key permission.
    body = {"id": "0" * 32, "name": "m", "permissions": ["monitor"]}
    b.err("AuthService/CreateKey", body, 400, "invalid_argument")
    assert metrics(b, None).status_code == 401 and metrics(b, "wrong").status_code == 401
    b.err("AdminService/Observe", {}, 401, "unauthenticated", token=None)


def test_authentication_outcomes_and_request_counts(broker_factory: BrokerFactory) -> None:
    b = broker_factory({"MQLITE_MONITOR_TOKENS": MONITOR})
    before = observe(b, MONITOR)
    key_id, revoked = b.create_key(["send"])
    b.ok("AuthService/RevokeKey", {"id": key_id})
    expires = now_ms() + 600
    _, expiring = b.create_key(["send"], expires_at_ms=expires)
    _, listener = b.create_key(["listen"])
    queue = b.create_queue()
    b.send(queue, "a", "b")
    b.err("QueueService/Send", {"queue": queue, "messages": []}, 401, "unauthenticated", token=None)
    b.err("QueueService/Stats", {"queue": queue}, 401, "unauthenticated", token="nope")
    b.err("QueueService/Stats", {"queue": queue}, 401, "unauthenticated", token=revoked)
    b.err("QueueService/Send", {"queue": queue}, 403, "permission_denied", token=listener)
    time.sleep(max(expires - now_ms(), 0) / 1000 + 0.05)  # past the key's expiry (e2e)
    b.err("QueueService/Send", {"queue": queue}, 401, "unauthenticated", token=expiring)
    after = observe(b, MONITOR)
    delta = {k: v - outcomes(before)[k] for k, v in outcomes(after).items()}
    assert delta["missing"] == 1 and delta["invalid"] == 1 and delta["revoked"] == 1
    assert delta["expired"] == 1 and delta["permission_denied"] == 1
    assert delta["success"] >= 6 and delta["backend_error"] == 0
    requests = {(r["rpc"], r["code"]): r for r in after["http"]["requests"]}
    assert requests["QueueService/Send", "ok"]["count"] == 1
    assert requests["QueueService/Send", "unauthenticated"]["count"] == 2
    assert requests["QueueService/Send", "permission_denied"]["count"] == 1
    assert requests["QueueService/Send", "ok"]["duration_seconds"] > 0
    handlers = {h["rpc"]: h for h in after["http"]["handler_latency"]}
    assert handlers["QueueService/Send"]["count"] == 1  # after authorization only
    assert handlers["QueueService/Send"]["buckets"][-1]["upper_bound_seconds"] == 20
    effects = {(m["queue"], m["event"]): m["count"] for m in after["messages"]}
    assert effects[queue, "enqueued"] == 2
    (gauges,) = [q for q in after["queues"] if q["queue"] == queue]
    assert gauges["active"] == 2 and after["collection"]["state"] == "available"


def test_metrics_are_off_by_default(broker_factory: BrokerFactory) -> None:
    b = broker_factory({"MQLITE_MONITOR_TOKENS": MONITOR})
    assert "metrics" not in b.anon.get("/").json()
    assert metrics(b, b.token).status_code == 404  # even with valid credentials
    assert metrics(b, MONITOR).status_code == 404
    assert metrics(b, None).status_code == 401
    assert observe(b, MONITOR)["collection"]["state"] == "available"  # Observe is not /metrics


def test_the_sdk_and_the_cli_observe(broker_factory: BrokerFactory, tmp_path: Path) -> None:
    b = broker_factory({"MQLITE_MONITOR_TOKENS": MONITOR})
    queue = b.create_queue()
    b.send(queue, "x")
    with mqlite.connect(b.base_url, token=MONITOR) as client:
        o = client.observe()
    assert isinstance(o, wire.ObserveResponse) and o.access == "monitor"
    assert {q.queue: q.active for q in o.queues or ()}[queue] == 1
    with mqlite.open_embedded(f"file:{tmp_path / 'e.db'}", background=False) as mq:
        e = mq.observe()
    assert e.access == "embedded" and e.http.state == "not_applicable" and e.http.requests == ()


def test_diagnostic_log_path_is_checked_at_startup(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    bad = tmp_path / "missing" / "diag.jsonl"
    proc, *_rest, err_path, _env, _port = broker_factory.spawn(
        {"MQLITE_TOKENS": "t" * 20, "MQLITE_DIAGNOSTIC_LOG": str(bad)}
    )
    assert proc.wait(timeout=30) == 1
    (line,) = [json.loads(x) for x in err_path.read_text().splitlines()]
    assert "MQLITE_DIAGNOSTIC_LOG" in line["msg"] and line["level"] == "ERROR"


def test_monitor_works_while_storage_fails(broker_factory: BrokerFactory, tmp_path: Path) -> None:
    trigger = tmp_path / "unreadable"
    diag = tmp_path / "diag.jsonl"
    b = broker_factory(
        {
            "MQLITE_MONITOR_TOKENS": MONITOR,
            "MQLITE_METRICS": "on",
            "FAULTY_SERVE_TRIGGER": str(trigger),
            "MQLITE_DIAGNOSTIC_LOG": str(diag),
        },
        faulty=True,
    )
    queue = unique()
    b.create_queue(queue)
    trigger.touch()
    try:
        o = observe(b, MONITOR)  # 200: authentication needs no database read
        assert o["collection"]["state"] == "unavailable" and o["queues"] is None
        assert o["collection"]["error_code"] == "io" and not o["runtime"]["read_available"]
        text = metrics(b, MONITOR).text
        assert "mqlite_collection_success 0.0" in text and "mqlite_queue_messages{" not in text
        b.err(
            "QueueService/Send", {"queue": queue, "messages": [{"body": "eA=="}]}, 500, "internal"
        )
    finally:
        os.unlink(trigger)
    assert observe(b, MONITOR)["collection"]["state"] == "available"

    def in_file() -> list[dict[str, Any]]:
        text = diag.read_text() if diag.exists() else ""
        return [json.loads(x) for x in text.splitlines() if x.endswith("}")]

    deadline = time.monotonic() + 10  # written by the log's own thread
    while not any(x["event"] == "storage.failure" for x in in_file()):
        assert time.monotonic() < deadline, in_file()
        time.sleep(0.1)
    lines = in_file()
    assert all(line["logger"] == "mqlite.diagnostics" for line in lines)
    assert stat.S_IMODE(diag.stat().st_mode) == 0o600

    def on_stderr() -> list[object]:
        lines = [x for x in b.stderr().splitlines() if x.startswith("{") and x.endswith("}")]
        return [json.loads(x).get("event") for x in lines]

    deadline = time.monotonic() + 10  # the log thread writes in batches
    while "storage.failure" not in on_stderr() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "storage.failure" in on_stderr()  # the same events on stderr
