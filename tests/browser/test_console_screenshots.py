"""The screenshots in docs/console.md, taken of a real broker's console. Every run takes
them (so the pages they show must render, pass the fixture's checks and match what the
doc names); ``make console-screenshots`` (MQLITE_DOC_SCREENSHOTS=1) writes them over
docs/img/console-*.png, otherwise they go to tests/browser/artifacts/. The test also
pins that docs/console.md shows every one of them and that each is checked in."""

from __future__ import annotations

import os
import re
from pathlib import Path

from console_support import ARTIFACTS, REPO, ConsolePage
from e2e_support import ADMIN_TOKEN, b64, unique
from playwright.sync_api import Locator, expect

DOC = REPO / "docs" / "console.md"
IMG = REPO / "docs" / "img"
SHOTS = ("overview", "queue-receive", "dead-letters", "search", "publish")


def _target(name: str) -> Path:
    if os.environ.get("MQLITE_DOC_SCREENSHOTS") == "1":
        return IMG / f"console-{name}.png"
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / f"doc-console-{name}.png"


def _shot(where: Locator, name: str) -> None:
    where.screenshot(path=str(_target(name)), animations="disabled")


def test_docs_show_every_screenshot_and_each_is_checked_in() -> None:
    shown = set(re.findall(r"\(img/console-([a-z-]+)\.png\)", DOC.read_text()))
    assert shown == set(SHOTS)
    for name in SHOTS:
        assert (IMG / f"console-{name}.png").stat().st_size > 0, name


def test_take_the_documented_screenshots(console: ConsolePage) -> None:
    page = console.page
    b = console.broker
    queue = b.create_queue(unique("orders"))
    messages = [
        {
            "subject": "orders.new" if i % 2 == 0 else "orders.paid",
            "content_type": "application/json",
            "properties": {"region": "eu" if i % 3 else "us"},
            "body": b64(f'{{"order": {1000 + i}, "sku": "A-{i}"}}'),
        }
        for i in range(8)
    ]
    b.ok("QueueService/Send", {"queue": queue, "messages": messages})
    for m in b.receive(queue, 2):
        b.ok(
            "QueueService/Reject",
            {
                "queue": queue,
                "seq_number": m["seq_number"],
                "lock_token": m["lock_token"],
                "dead_letter_reason": "bad-sku",
                "dead_letter_description": f"sku {m['seq_number']} unknown",
            },
        )
    topic = unique("events")
    for name, expr in (("eu-orders", 'properties["region"] == "eu"'), ("all-orders", "")):
        b.ok(
            "AdminService/Subscribe",
            {"topic": topic, "name": unique(name), "filter": {"expr": expr}},
        )

    console.signed_in(ADMIN_TOKEN)
    page.get_by_role("button", name="Refresh now").click()
    expect(page.locator("figure.chart svg").first).to_be_visible()
    _shot(page.locator("main"), "overview")

    console.go(f"queues/{queue}")
    console.heading(queue)
    recv = page.get_by_role("form", name="Receive messages")
    recv.get_by_label("How many").fill("2")
    recv.get_by_role("button", name="Receive").click()
    expect(page.locator("#received article.message")).to_have_count(2)
    _shot(page.get_by_role("region", name="Receive and settle"), "queue-receive")

    dlq = page.get_by_role("region", name="Dead-letter browser")
    dlq.get_by_role("button", name="Load dead letters").click()
    dlq.get_by_label("Select every dead letter shown").check()
    _shot(dlq, "dead-letters")

    search = page.get_by_role("form", name="Search messages")
    search.get_by_label("Filter expression").fill(
        'properties["region"] == "eu" && subject == "orders.new"'
    )
    search.get_by_label("Only matches").check()
    search.get_by_role("button", name="Search").click()
    expect(page.locator("#search-results article.match").first).to_be_visible()
    _shot(page.get_by_role("region", name="Search messages"), "search")

    console.go("topics")
    console.heading("Topics")
    publish = page.get_by_role("form", name="Publish to a topic")
    publish.get_by_label("Topic").fill(topic)
    publish.get_by_label("Body (text)").fill('{"order": 1001}')
    publish.get_by_label("Properties").fill("region=us")
    publish.get_by_role("button", name="Preview routing").click()
    expect(page.locator("#publish-routing table")).to_be_visible()
    _shot(page.get_by_role("region", name="Publish to a topic"), "publish")
