"""Every line a real broker process writes is one JSON object, through a whole life.

Spec: issue 9 "Logs are one format": gunicorn master and worker (boot lines, ``Worker
(pid:N) was sent SIGKILL!``), uvicorn, maintenance/engine, access and the startup banner
are each ``{"time", "level", "logger", "msg", ...}`` with an RFC 3339 UTC timestamp, so
a log shipper can parse every line of the appliance's stdout and stderr.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_support import Broker, BrokerFactory, b64, now_ms, unique

RFC3339_UTC_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
# A zone far from UTC: a local-time stamp labelled "Z" would be half a day off.
FAR_ZONE = {"TZ": "Pacific/Kiritimati"}  # UTC+14
DEADLINE_S = 20.0


def wall_clock() -> datetime:
    return datetime.fromtimestamp(now_ms() / 1000, UTC)


def json_lines(path: Path, *, finished: bool = False) -> list[dict[str, Any]]:
    """Every complete line of the file as a JSON object; fails naming the first line that
    is not. ``finished``: the writer has exited, so nothing may be left without a newline."""
    text = path.read_text()
    if finished:
        assert not text or text.endswith("\n"), f"{path.name}: a line cut short: {text[-200:]!r}"
    records = []
    for number, line in enumerate(text.split("\n")[:-1], 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise AssertionError(f"{path.name} line {number} is not JSON: {line!r}") from None
        assert isinstance(record, dict), (path.name, number, line)
        records.append(record)
    return records


def check_shape(record: dict[str, Any], started: datetime) -> None:
    assert RFC3339_UTC_MS.fullmatch(record.get("time", "")), record
    stamp = datetime.fromisoformat(record["time"])
    assert started - timedelta(seconds=5) <= stamp <= wall_clock() + timedelta(seconds=5), (
        "not UTC",
        record,
    )
    assert record.get("level") in LEVELS, record
    assert isinstance(record.get("logger"), str) and record["logger"], record
    assert isinstance(record.get("msg"), str), record
    assert isinstance(record.get("pid"), int), record


def wait_for(broker: Broker, predicate: Any, what: str) -> dict[str, Any]:
    """Poll the broker's stderr (with a deadline) for a JSON line matching ``predicate``."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        for record in reversed(json_lines(broker.stderr_path)):
            if predicate(record):
                return record
        time.sleep(0.05)
    raise AssertionError(f"no log line {what} within {DEADLINE_S} s:\n{broker.stderr()[-3000:]}")


def wait_healthy(broker: Broker) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        try:
            if httpx.get(broker.base_url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError("the respawned worker never became healthy")


def traffic(b: Broker, q: str) -> None:
    """Successes, client errors and a failing filter (an engine-side warning line)."""
    b.send(q, "one", "two")
    for m in b.receive(q, 2):
        settle = {"queue": q, "seq_number": m["seq_number"], "lock_token": m["lock_token"]}
        b.ok("QueueService/Complete", settle)
    b.rpc("QueueService/Stats", {"queue": unique("missing")})  # 404
    b.rpc("QueueService/Stats", {"queue": q}, token="mqk_wrong")  # 401
    b.rpc("QueueService/Send", {"queue": q, "bogus": 1})  # 400
    topic = unique("t")
    failing = {"expr": "body_json.a.b == 1"}  # fails at publish: a.b of a number
    b.ok("AdminService/Subscribe", {"topic": topic, "name": unique("s"), "filter": failing})
    b.ok("QueueService/Send", {"queue": topic, "messages": [{"body": b64('{"a": 2}')}]})


def ready_pid(b: Broker, other_than: int = 0) -> int:
    record = wait_for(
        b,
        lambda r: r.get("msg") == "broker ready" and r.get("pid") != other_than,
        "'broker ready'",
    )
    return int(record["pid"])


def test_every_line_of_a_broker_life_is_one_json_object(broker_factory: BrokerFactory) -> None:
    started = wall_clock()
    # every request's line (the default, errors, would skip the successful ones)
    first = broker_factory(
        {"MQLITE_TOKENS": None, "MQLITE_ACCESS_LOG": "all", **FAR_ZONE}, token=None
    )
    (listening, auth) = json_lines(first.stdout_path)[:2]
    first.token = auth["token"]  # the banner is JSON: a script reads the token from it
    assert auth["auth"] == "generated" and first.token.startswith("mqk_")
    q = first.create_queue()
    traffic(first, q)
    durable = first.create_queue()
    (kept,) = first.send(durable, "survives the kill and the restart")

    # The access log is written in 50 ms batches: let the lines so far reach the file, so
    # the kill does not take them with it (the test is about the lines, not the batching).
    last_send = {"route": "QueueService/Send", "queue": durable}
    wait_for(first, lambda r: last_send.items() <= r.items(), "for the last send")
    worker = ready_pid(first)
    os.kill(worker, signal.SIGKILL)
    respawned = ready_pid(first, other_than=worker)
    wait_healthy(first)
    first.close_clients()
    traffic(first, q)
    assert first.stop() == 0

    second = broker_factory({"MQLITE_ACCESS_LOG": "all", **FAR_ZONE}, db_path=first.db_path)
    assert [m["seq_number"] for m in second.receive(durable)] == [kept]
    traffic(second, q)
    assert second.stop() == 0

    records: list[dict[str, Any]] = []
    for b in (first, second):
        for path in (b.stdout_path, b.stderr_path):
            lines = json_lines(path, finished=True)
            assert lines, f"{path} is empty"
            records += lines
    for record in records:
        check_shape(record, started)

    def has(logger: str, pattern: str, **fields: Any) -> bool:
        return any(
            r["logger"] == logger
            and re.search(pattern, r["msg"])
            and all(r.get(k) == v for k, v in fields.items())
            for r in records
        )

    assert listening["logger"] == "mqlite.serve" and "listening on" in listening["msg"]
    assert has("gunicorn.error", r"^Booting worker with pid", pid=worker)
    assert has("gunicorn.error", r"^Booting worker with pid", pid=respawned)
    assert has("gunicorn.error", rf"^Worker \(pid:{worker}\) was sent SIGKILL!", level="ERROR")
    assert has("gunicorn.error", r"^Shutting down: Master")
    assert has("uvicorn.error", r"^Application startup complete")
    assert has("mqlite.access", r"^AdminService/CreateQueue$", status=200)
    # An audited verb's line carries the request id its audit row has (engine/audit.py).
    created = [r for r in records if r.get("route") == "AdminService/CreateQueue"]
    assert created and all(re.fullmatch(r"[0-9a-f]{16}", r["request_id"]) for r in created)
    assert has("mqlite.access", r"^QueueService/Stats$", status=404, level="WARNING")
    assert has("mqlite.filters", r"^subscription filter failed", level="WARNING")
    assert has("mqlite.server", r"^broker stopped$", pid=respawned)
    assert not any("color_message" in r for r in records)  # uvicorn's ANSI copy is dropped


@pytest.mark.parametrize(
    ("mode", "want_ok", "want_error"),
    [("errors", False, True), ("off", False, False), ("all", True, True)],
)
def test_mqlite_access_log_chooses_which_requests_get_a_line(
    broker_factory: BrokerFactory, mode: str, want_ok: bool, want_error: bool
) -> None:
    """``errors`` (the default, since the audit trail records who changed what) keeps
    4xx/5xx and drops fast successes; ``off`` keeps none; ``all`` keeps every request."""
    b = broker_factory({} if mode == "errors" else {"MQLITE_ACCESS_LOG": mode})
    q = b.create_queue()
    b.send(q, "x")
    b.err("QueueService/Stats", {"queue": "missing-" + q}, 404, "not_found")
    assert b.stop() == 0
    access = [r for r in json_lines(b.stderr_path) if r.get("logger") == "mqlite.access"]
    assert any(r["route"] == "QueueService/Send" for r in access) == want_ok
    assert any(r["status"] == 404 for r in access) == want_error
