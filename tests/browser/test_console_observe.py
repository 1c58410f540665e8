"""The overview from the real ``AdminService/Observe`` and what a monitor credential may
open (api-reference "Observe"; access-keys "HTTP, console and MCP": a configured monitor
token opens the observability views only).

Traffic produced here through the API (sends, completions, a dead letter, a filter that
fails at publish, rejected tokens) must show in the overview, the charts and the queue
rates. Maintenance failures and an unavailable collection cannot be caused on demand
without breaking the broker, so one test takes the broker's real Observe answer and
edits those two domains in flight, keeping every other field as the broker sent it."""

from __future__ import annotations

import json
import re

from console_support import MONITOR_TOKEN, ConsolePage
from e2e_support import ADMIN_TOKEN, b64, unique
from playwright.sync_api import Route, expect

OBSERVE = "/mqlite.v1.AdminService/Observe"


def traffic(cp: ConsolePage) -> str:
    """Sends, completions, a dead letter, a failing filter and two rejected tokens."""
    b = cp.broker
    q = b.create_queue(unique("observed"))
    b.send(q, *[f"m{i}" for i in range(6)])
    for m in b.receive(q, 3):
        b.ok(
            "QueueService/Complete",
            {"queue": q, "seq_number": m["seq_number"], "lock_token": m["lock_token"]},
        )
    m = b.receive(q, 1)[0]
    b.ok(
        "QueueService/Reject",
        {"queue": q, "seq_number": m["seq_number"], "lock_token": m["lock_token"]},
    )
    topic = unique("t")
    b.ok(
        "AdminService/Subscribe",
        {"topic": topic, "name": unique("s"), "filter": {"expr": 'int(properties["n"]) > 1'}},
    )
    b.ok(
        "QueueService/Send",
        {"queue": topic, "messages": [{"body": b64("x"), "properties": {"n": "x"}}]},
    )
    for _ in range(2):
        assert b.rpc("AdminService/Status", token="mqk_wrong").status_code == 401
    return q


def test_a_monitor_sees_the_overview_and_nothing_else(console: ConsolePage) -> None:
    assert console.broker.rpc("AdminService/ListQueues", token=MONITOR_TOKEN).status_code == 403
    page = console.page
    console.signed_in(MONITOR_TOKEN)
    nav = page.get_by_role("navigation", name="Main")
    assert nav.get_by_role("link").all_inner_texts() == ["Overview"]
    expect(page.locator("#who")).to_have_text("Signed in: monitor (read-only)")
    expect(page.locator("#overview-data")).to_contain_text("monitor")  # "Your access"
    for route in ("queues", "topics", "keys", "queues/anything"):
        console.go(route)
        console.heading("Manage credential needed")
        expect(page.get_by_text("monitor credential")).to_be_visible()
    console.go("")
    console.heading("Overview")
    console.screenshot("overview-monitor")
    assert not console.axe("overview-monitor")


def test_the_overview_shows_the_brokers_observation(console: ConsolePage) -> None:
    q = traffic(console)
    page = console.page
    console.signed_in(ADMIN_TOKEN)
    data = page.locator("#overview-data")
    expect(data).to_contain_text("available")
    console.broker.send(q, "later-1", "later-2")  # between two samples: a rate
    page.get_by_role("button", name="Refresh now").click()
    expect(data.locator("figure.chart svg")).to_have_count(2)  # backlog and throughput
    # Two samples: each chart draws its series as lines, not a single dot.
    expect(data.locator("figure.chart svg polyline").first).to_be_visible()
    observed = console.broker.ok("AdminService/Observe")
    entities = page.get_by_role("region", name="Entities")
    expect(entities).to_contain_text(re.compile(rf"Queues{observed['queue_count']}(?!\d)"))
    expect(entities).to_contain_text(
        re.compile(rf"Subscriptions{observed['subscription_count']}(?!\d)")
    )
    text = data.inner_text()
    assert "Backend\nlocal\n" in text and "Schema" in text
    auth = page.get_by_role("region", name="Authentication outcomes since start")
    assert re.search(r"invalid\s+[1-9]", auth.inner_text()), auth.inner_text()  # 2 bad tokens
    assert re.search(r"filter evaluate failures\s+[1-9]", text), text
    maint = page.get_by_role("region", name="Maintenance tasks")
    for task in ("locks", "scheduled", "ttl"):
        expect(maint).to_contain_text(task)
    expect(page.get_by_role("region", name="Largest queues by retained messages")).to_contain_text(
        q
    )
    console.screenshot("overview-observed")
    assert not console.axe("overview-observed")
    # The queues list: per-state counts and the oldest age from Observe, and in/out rates
    # from its event counters between two refreshes of this page.
    console.go("queues")
    row = page.locator("#queues-table tbody tr", has_text=q)
    expect(row).to_contain_text("/s")
    console.broker.send(q, "later-3", "later-4", "later-5")
    for m in console.broker.receive(q, 2):
        console.broker.ok(
            "QueueService/Complete",
            {"queue": q, "seq_number": m["seq_number"], "lock_token": m["lock_token"]},
        )
    page.get_by_role("button", name="Refresh now").click()
    nonzero = re.compile(r"^(?!0\.0/s)[\d.]+/s$")
    expect(row.locator("td").nth(7)).to_have_text(nonzero)  # In
    expect(row.locator("td").nth(8)).to_have_text(nonzero)  # Out
    cells = row.locator("td").all_inner_texts()
    # queue; active 2 + 2 + 3 - 2 completed, locked, deferred, scheduled, dead 1 (Reject)
    assert cells[:6] == ["queue", "5", "0", "0", "0", "1"], cells
    assert re.fullmatch(r"\d+(\.\d)? (ms|s)", cells[6]), cells  # the oldest active message


def test_maintenance_failures_and_an_unavailable_collection(console: ConsolePage) -> None:
    def edited(route: Route) -> None:
        obs = json.loads(route.fetch().text())
        task = obs["maintenance"][0]
        at = obs["sampled_at_ms"] - 1000
        task.update(last_outcome="failed", consecutive_failures=2, last_run_at_ms=at)
        task["diagnostics"] = [
            {
                "at_ms": at,
                "step": "expire",
                "category": "busy",
                "explanation": "the database was busy",
                "fingerprint": "fp-7d2e",
            }
        ]
        obs["collection"].update(state="unavailable", error_code="busy")
        obs.update(queues=None, queue_count=None, subscription_count=None)
        route.fulfill(json=obs)

    console.page.route(console.broker.base_url + OBSERVE, edited)
    console.signed_in(ADMIN_TOKEN)
    data = console.page.locator("#overview-data")
    expect(data).to_contain_text("counts are unknown, not zero")
    expect(data).to_contain_text("unavailable")
    failures = console.page.get_by_role("region", name="Recent maintenance failures, newest first")
    expect(failures).to_contain_text("the database was busy")
    expect(failures).to_contain_text("fp-7d2e")
    console.screenshot("overview-degraded")
