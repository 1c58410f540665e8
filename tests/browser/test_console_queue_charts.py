"""Per-queue charts (issue 32 part 7) against a real broker: drawn from successive Observe
samples taken at each refresh, kept in the tab across page changes (the overview and the
queue page share one store), and a sample without queue data is a gap named "no data",
never a zero."""

from __future__ import annotations

import json
import re

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, unique
from playwright.sync_api import Locator, Route, expect

OBSERVE = "/mqlite.v1.AdminService/Observe"


def _chart(console: ConsolePage, title: str) -> Locator:
    return console.page.locator("#queue-charts figure.chart", has_text=title)


def test_queue_charts_draw_from_observe_samples_and_survive_page_changes(
    console: ConsolePage,
) -> None:
    page = console.page
    name = console.broker.create_queue(unique("charts"))
    console.signed_in(ADMIN_TOKEN)
    console.set_refresh("every 2 s")
    console.go(f"queues/{name}")
    console.heading(name)
    for _ in range(3):  # traffic between samples
        console.broker.send(name, "a", "b")
        page.wait_for_timeout(2100)
    throughput = _chart(console, "Throughput (per second)")
    expect(throughput.locator("svg polyline.s1")).to_have_count(1, timeout=10_000)
    expect(throughput.locator(".legend")).to_contain_text(re.compile(r"enqueued \d"))
    backlog = _chart(console, "Backlog (messages)")
    expect(backlog.locator("svg")).to_have_count(1)
    expect(backlog.locator(".legend")).to_contain_text(
        re.compile(r"waiting \(active\+scheduled\+deferred\) [1-9]")
    )
    expect(_chart(console, "Oldest active or locked message (age)").locator("svg")).to_have_count(1)
    first = (backlog.locator("svg desc").text_content() or "").split(" to ")[0]  # "From hh:mm:ss"

    # Away to the overview and back: the history is still there, from the same start.
    console.go("")
    console.heading("Overview")
    page.wait_for_timeout(2100)
    console.go(f"queues/{name}")
    console.heading(name)
    expect(backlog.locator("svg desc")).to_contain_text(first, timeout=10_000)


def test_a_sample_without_queue_data_is_no_data_not_zero(console: ConsolePage) -> None:
    page = console.page
    name = console.broker.create_queue(unique("charts-gap"))
    console.broker.send(name, "x")

    def unavailable(route: Route) -> None:
        obs = json.loads(route.fetch().text())
        obs["collection"].update(state="unavailable", error_code="busy")
        obs.update(queues=None, queue_count=None, subscription_count=None)
        route.fulfill(json=obs)

    page.route(console.broker.base_url + OBSERVE, unavailable)
    console.signed_in(ADMIN_TOKEN)
    console.set_refresh("every 2 s")
    console.go(f"queues/{name}")
    console.heading(name)
    backlog = _chart(console, "Backlog (messages)")
    expect(backlog).to_contain_text("No data: the samples so far carry no counts", timeout=10_000)
    expect(backlog.locator("svg")).to_have_count(0)  # nothing drawn, no zero line

    page.unroute(console.broker.base_url + OBSERVE)
    expect(backlog.locator("svg")).to_have_count(1, timeout=12_000)
    expect(backlog.locator(".gap-note")).to_contain_text("with no data (gaps in the line)")
    expect(backlog.locator(".legend li").first).to_have_text(
        "waiting (active+scheduled+deferred) 1"
    )
