"""The overview and the monitor credential from an ``AdminService/Observe`` answer.

This branch's broker has no Observe yet (issue 10 builds it), so the real broker's card
and Observe route are answered here by Playwright with an observation shaped as the spec
describes it (api-reference "Observe", observability "Maintenance failure diagnosis"):
the console's reading of it (js/observe.js), the monitor-only navigation, rates from
successive samples, maintenance failures, auth outcomes and an unavailable collection
are exercised. Every other call still reaches the real broker, and a monitor token
there is refused by everything but Observe."""

from __future__ import annotations

import json
from typing import Any

from console_support import MONITOR_TOKEN, ConsolePage
from e2e_support import ADMIN_TOKEN, now_ms
from playwright.sync_api import Route, expect

OBSERVE = "/mqlite.v1.AdminService/Observe"


def observation(n: int, access: str, *, available: bool = True) -> dict[str, Any]:
    t = now_ms()
    queues = [
        {
            "queue": "orders",
            "states": {
                "active": 5 + n,
                "locked": 1,
                "deferred": 0,
                "scheduled": 2,
                "dead_lettered": 3,
            },
            "retained": 11 + n,
            "unexpected": 0,
            "oldest_message_age_seconds": 12.5,
        }
    ]
    return {
        "sampled_at_ms": t,
        "started_at_ms": t - 3_600_000,
        "backend": "local file",
        "version": "0.3.3",
        "access": access,
        "collection": {
            "state": "available" if available else "unavailable",
            "last_success_at_ms": t if available else t - 60_000,
            "duration_seconds": 0.002,
            "error_code": "" if available else "busy",
        },
        "queue_count": 1 if available else None,
        "subscription_count": 0 if available else None,
        "queues": queues if available else None,
        "runtime": {
            "schema_version": "6",
            "read_available": True,
            "read_latency_seconds": 0.0004,
            "db_size_available": True,
            "db_size_bytes": 294_912,
        },
        "messages": [
            {"queue": "orders", "event": "enqueued", "count": 100 + 20 * n},
            {"queue": "orders", "event": "completed", "count": 90 + 10 * n},
        ],
        "storage": {
            "operations": [
                {"operation": "write", "outcome": "ok", "error_code": "", "count": 500},
                {"operation": "write", "outcome": "error", "error_code": "busy", "count": 2},
            ]
        },
        "maintenance": [
            {
                "task": "ttl",
                "enabled": True,
                "runs": {"success": 40, "error": 2, "interrupted": 0},
                "last_outcome": "failed",
                "last_run_at_ms": t - 1000,
                "last_success_at_ms": t - 120_000,
                "consecutive_failures": 2,
                "diagnostics": [
                    {
                        "at_ms": t - 1000,
                        "step": "expire",
                        "category": "busy",
                        "explanation": "the database was busy",
                        "fingerprint": "fp-7d2e",
                    }
                ],
            },
            {"task": "locks", "enabled": True, "last_outcome": "ok", "consecutive_failures": 0},
        ],
        "filters": [{"stage": "compile", "count": 0}, {"stage": "evaluate", "count": 1}],
        "http": {
            "state": "available",
            "authentication": [
                {"outcome": "success", "count": 40},
                {"outcome": "invalid", "count": 3},
            ],
        },
    }


def serve_observe(cp: ConsolePage, access: str, *, available: bool = True) -> None:
    """Answer the card (with Observe listed) and Observe; pass everything else through."""
    calls = {"n": 0}

    def card(route: Route) -> None:
        body = json.loads(route.fetch().text())
        body["endpoints"] = [*body["endpoints"], OBSERVE]
        route.fulfill(json=body)

    def observe(route: Route) -> None:
        auth = route.request.headers.get("authorization", "")
        if auth not in (f"Bearer {ADMIN_TOKEN}", f"Bearer {MONITOR_TOKEN}"):
            route.fulfill(status=401, json={"code": "unauthenticated", "message": "no"})
            return
        calls["n"] += 1
        route.fulfill(json=observation(calls["n"], access, available=available))

    cp.page.route(cp.broker.base_url + "/", card)
    cp.page.route(cp.broker.base_url + OBSERVE, observe)


def test_a_monitor_sees_the_overview_and_nothing_else(console: ConsolePage) -> None:
    assert console.broker.rpc("AdminService/ListQueues", token=MONITOR_TOKEN).status_code == 403
    serve_observe(console, "monitor")
    page = console.page
    console.signed_in(MONITOR_TOKEN)
    nav = page.get_by_role("navigation", name="Main")
    assert nav.get_by_role("link").all_inner_texts() == ["Overview"]
    expect(page.locator("#who")).to_have_text("Signed in: monitor (read-only)")
    console.go("queues")
    console.heading("Manage credential needed")
    expect(page.get_by_text("monitor credential")).to_be_visible()
    console.go("keys")
    console.heading("Manage credential needed")
    console.go("")
    console.heading("Overview")


def test_the_overview_reads_every_domain_of_the_observation(console: ConsolePage) -> None:
    serve_observe(console, "manage")
    console.broker.create_queue("orders")  # ListQueues (real) names the observed queue
    page = console.page
    console.signed_in(ADMIN_TOKEN)
    page.get_by_role("button", name="Refresh now").click()
    data = page.locator("#overview-data")
    expect(data.locator("figure.chart svg")).to_have_count(2)  # backlog and throughput
    text = data.inner_text()
    assert "0.3.3" in text and "available" in text
    assert "the database was busy" in text and "fp-7d2e" in text  # maintenance failure
    assert "invalid" in text and "busy" in text  # auth outcome, failing storage op
    assert "filter evaluate failures" in text
    console.screenshot("overview-observe")
    assert not console.axe("overview-observe")
    # Rates come from successive samples: the queues list shows them for managers.
    console.go("queues")
    row = page.locator("#queues-table tbody tr", has_text="orders")
    expect(row).to_contain_text("/s")


def test_an_unavailable_collection_is_unknown_not_zero(console: ConsolePage) -> None:
    serve_observe(console, "manage", available=False)
    console.signed_in(ADMIN_TOKEN)
    data = console.page.locator("#overview-data")
    expect(data).to_contain_text("counts are unknown, not zero")
    expect(data).to_contain_text("unavailable")
    expect(data).to_contain_text("busy")
