"""The ops artifacts against real processes: a broker (``mqlite serve`` with metrics on, a
monitor token and a diagnostic log; its storage fault seam armed by a trigger file),
Prometheus scraping it with the token file and evaluating the production rules with 1 s
``for:``, Alertmanager delivering to a local webhook sink.

One scenario, in order: scrape auth (up, and a wrong token down with 401); traffic of
every kind; every dashboard query returns data; Observe's numbers equal the scraped ones;
the dead-letter alert fires, is delivered and resolves after a purge; then the database
becomes unreadable: collection fails with the gauges omitted, the storage alert fires,
the monitor still observes, the diagnostic log has the events, and restoring it logs the
recovery."""

from __future__ import annotations

import json
import time
from typing import Any

from e2e_support import Broker, b64, now_ms
from ops_support import DASHBOARD, dashboard_queries, expand_grafana_variables
from promstack import MONITOR_TOKEN, WRONG_TOKEN, Monitored, PromStack, alert_in, wait_until

DLQ_ALERT = "MQLiteDeadLettersRetained"
STORAGE_ALERT = "MQLiteStorageFaults"
STATES = ("active", "locked", "deferred", "scheduled", "dead_lettered")
STACK_BUDGET_S = 90.0  # asserted: the scenario takes about 25-35 s on the CI machine


def test_real_stack(monitored: Monitored) -> None:
    broker, stack = monitored.broker, monitored.stack
    started = time.monotonic()
    prom = stack.prometheus

    # The monitor token file opens /metrics; a wrong token is refused before the endpoint.
    target = prom.wait_target("mqlite", "up")
    assert target["scrapeUrl"].endswith("/metrics"), target
    wrong = prom.wait_target("mqlite-wrong-token", "down")
    assert "401" in wrong["lastError"], wrong
    assert [r["health"] for r in prom.rules()] == ["ok"] * len(prom.rules())

    queue = produce_traffic(broker)
    wait_until("collection_success 1", lambda: scalar(stack, "mqlite_collection_success") == 1, 10)

    firing = prom.wait_alert(DLQ_ALERT, "firing", queue=queue)
    assert firing[0]["labels"]["severity"] == "warning"
    assert firing[0]["annotations"]["runbook_url"] == (
        "https://github.com/mqlitehq/mqlite-py/blob/main/docs/operations.md#mqlitedeadlettersretained"
    )
    delivered = stack.sink.wait_for(lambda p: alert_in(p, DLQ_ALERT, "firing", queue=queue))
    assert delivered["receiver"] == "mqlite-team", delivered  # warnings are not paged
    assert delivered["_path"] == "/mqlite/team"
    assert_dashboard_queries_with_data(stack)  # while an alert fires: ALERTS has data too
    assert_observe_equals_scraped(broker, stack)

    # Purging the DLQ resolves it, in Prometheus and at the receiver.
    assert broker.ok("AdminService/Purge", {"queue": queue}) == {"purged": 1}
    prom.wait_alert(DLQ_ALERT, None, queue=queue)
    stack.sink.wait_for(lambda p: alert_in(p, DLQ_ALERT, "resolved", queue=queue))

    storage_failure_and_recovery(monitored, queue)
    elapsed = time.monotonic() - started
    print(f"real-stack scenario: {elapsed:.1f} s")
    assert elapsed < STACK_BUDGET_S


def produce_traffic(broker: Broker) -> str:
    """Sends, receives, completions, a dead-letter, a deferral, a schedule, a filter
    failure, failed authentications; returns the queue holding the dead letter."""
    queue = broker.create_queue()
    broker.send(queue, "a", "b", "c", "poison")
    first, second, third, poison = broker.receive(queue, 4)
    settle = {"queue": queue}
    broker.ok("QueueService/Complete", {**settle, **token_of(first)})
    broker.ok("QueueService/Abandon", {**settle, **token_of(second)})
    broker.ok("QueueService/Defer", {**settle, **token_of(third)})
    broker.ok(
        "QueueService/Reject", {**settle, **token_of(poison), "dead_letter_reason": "ops-test"}
    )
    broker.ok(
        "QueueService/Schedule",
        {
            "queue": queue,
            "messages": [{"body": b64("later")}],
            "scheduled_enqueue_time_ms": now_ms() + 3_600_000,
        },
    )
    failing = {"expr": "int(properties.n) > 1"}  # fails to evaluate on a non-number
    broker.ok("AdminService/Subscribe", {"topic": "t", "name": "fails", "filter": failing})
    unparsable = {"body": b64("x"), "properties": {"n": "NaN?"}}
    broker.ok("QueueService/Send", {"queue": "t", "messages": [unparsable]})
    for token in (None, WRONG_TOKEN):
        broker.err("QueueService/Stats", {"queue": queue}, 401, "unauthenticated", token=token)
    broker.err(
        "QueueService/Stats", {"queue": queue}, 403, "permission_denied", token=MONITOR_TOKEN
    )
    return queue


def token_of(m: dict[str, Any]) -> dict[str, Any]:
    return {"seq_number": m["seq_number"], "lock_token": m["lock_token"]}


def scalar(stack: PromStack, expr: str) -> float | None:
    result = stack.prometheus.query(f'{expr}{{job="mqlite"}}')
    return float(result[0]["value"][1]) if result else None


def assert_dashboard_queries_with_data(stack: PromStack) -> None:
    """EVERY dashboard query (panels and variables) returns a non-empty result."""
    prom = stack.prometheus
    dash = json.loads(DASHBOARD.read_text())
    queries = [(w, expand_grafana_variables(e)) for w, e in dashboard_queries(dash)]
    assert len(queries) == 50
    # This broker is not replicated: the lag panels' series are absent (never a zero);
    # tests/replication scrapes them from a broker under Litestream.
    lag = [(w, e) for w, e in queries if "mqlite_replication_lag_seconds" in e]
    assert len(lag) == 2 and all(prom.query(e) == [] for _, e in lag)
    queries = [q for q in queries if q not in lag]

    def without_data() -> list[str]:
        return [f"{where}: {expr}" for where, expr in queries if not prom.query(expr)]

    assert prom.query('mqlite_no_such_family{job="mqlite"}') == []  # emptiness is seen
    deadline = time.monotonic() + 15
    while (left := without_data()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == [], "dashboard queries without data:\n" + "\n".join(left)
    print(f"dashboard queries with data: {len(queries)}/{len(queries)}")


def observed(broker: Broker) -> dict[str, Any]:
    out: dict[str, Any] = broker.ok("AdminService/Observe", {}, token=MONITOR_TOKEN)
    return out


def assert_observe_equals_scraped(broker: Broker, stack: PromStack) -> None:
    """With the traffic settled, the broker's own numbers and Prometheus's agree: queue
    states, retained rows, committed effects and filter failures (a later scrape cannot
    differ from Observe on anything the traffic no longer changes)."""
    prom = stack.prometheus

    def native() -> dict[str, float]:
        o = observed(broker)
        out = {}
        for q in o["queues"]:
            for state in STATES:
                out[f"messages/{q['queue']}/{state}"] = float(q[state])
            out[f"retained/{q['queue']}"] = float(q["total"])
        for m in o["messages"]:
            out[f"events/{m['queue']}/{m['event']}"] = float(m["count"])
        for f in o["filters"]:
            out[f"filters/{f['stage']}"] = float(f["count"])
        return out

    def scraped() -> dict[str, float]:
        out = {}
        for labels, v in prom.values('mqlite_queue_messages{job="mqlite"}').items():
            d = dict(labels)
            out[f"messages/{d['queue']}/{d['state']}"] = v
        for labels, v in prom.values('mqlite_queue_retained_messages{job="mqlite"}').items():
            out[f"retained/{dict(labels)['queue']}"] = v
        for labels, v in prom.values('mqlite_message_events_total{job="mqlite"}').items():
            d = dict(labels)
            out[f"events/{d['queue']}/{d['event']}"] = v
        for labels, v in prom.values('mqlite_filter_failures_total{job="mqlite"}').items():
            out[f"filters/{dict(labels)['stage']}"] = v
        return out

    wait_until("Observe == scraped", lambda: (n := native()) == scraped() and n, 10)
    numbers = native()
    assert numbers["filters/evaluate"] == 1 and any(
        k.endswith("/dead_lettered") and v == 1 for k, v in numbers.items()
    )


def storage_failure_and_recovery(monitored: Monitored, queue: str) -> None:
    broker, stack, prom = monitored.broker, monitored.stack, monitored.stack.prometheus
    monitored.fault.touch()
    try:
        wait_until(
            "collection_success 0", lambda: scalar(stack, "mqlite_collection_success") == 0, 10
        )
        # Omitted, not zero: the series went stale (absent from the latest scrape).
        wait_until(
            "queue gauges omitted",
            lambda: prom.query('mqlite_queue_messages{job="mqlite"}') == [],
            10,
        )
        o = observed(broker)  # the monitor authenticates without the database
        assert o["collection"]["state"] == "unavailable" and o["queues"] is None
        firing = prom.wait_alert(STORAGE_ALERT, "firing")
        assert firing[0]["labels"]["severity"] == "critical"
        paged = stack.sink.wait_for(lambda p: alert_in(p, STORAGE_ALERT, "firing"))
        assert paged["receiver"] == "mqlite-pager", paged
        wait_until(
            "maintenance.failure logged", lambda: "maintenance.failure" in events(monitored), 10
        )
    finally:
        monitored.fault.unlink()
    wait_until("collection_success 1", lambda: scalar(stack, "mqlite_collection_success") == 1, 10)

    def tasks(kind: str) -> list[str]:
        return [line["task"] for line in diagnostic_lines(monitored) if line["event"] == kind]

    # Every task that failed recovers at its next pass (the TTL sweep runs every 10 s).
    wait_until(
        "every failed task recovered",
        lambda: set(tasks("maintenance.recovered")) == set(tasks("maintenance.failure")),
        15,
    )
    assert "storage.failure" in events(monitored)
    recovered = tasks("maintenance.recovered")
    assert sorted(recovered) == sorted(set(recovered))  # one recovery line per streak
    assert observed(broker)["collection"]["state"] == "available"


def diagnostic_lines(monitored: Monitored) -> list[dict[str, Any]]:
    if not monitored.diagnostic_log.exists():
        return []
    text = monitored.diagnostic_log.read_text()
    return [json.loads(line) for line in text.splitlines() if line.endswith("}")]


def events(monitored: Monitored) -> list[str]:
    return [line["event"] for line in diagnostic_lines(monitored)]
