"""Every view at 1280×800 and 390×844 (light, and dark on the desktop), each scanned by
axe-core with no serious or critical violation and saved as a screenshot under
tests/browser/artifacts/; the stale state when the broker goes away; keyboard-only use."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from console_support import DESKTOP, PHONE, ConsolePage, open_console
from e2e_support import ADMIN_TOKEN, Broker, BrokerFactory, unique
from playwright.sync_api import Browser, expect

SIZES = {
    "desktop": (DESKTOP, "light"),
    "phone": (PHONE, "light"),
    "desktop-dark": (DESKTOP, "dark"),
}


@pytest.fixture
def populated(console_broker: Broker) -> str:
    """A queue with a JSON, a text, a binary and a dead-lettered message, and a topic."""
    b = console_broker
    q = b.create_queue(unique("shown"))
    b.ok(
        "QueueService/Send",
        {
            "queue": q,
            "messages": [
                {
                    "body": "eyJvcmRlciI6NDIsIml0ZW1zIjpbMSwyXX0=",
                    "content_type": "application/json",
                    "properties": {"region": "eu"},
                    "subject": "orders.new",
                },
                {"body": "aGVsbG8gd29ybGQ=", "message_id": "greeting"},
                {"body": "AAECAwQFBgcICQoLDA0ODxAREhM="},
            ],
        },
    )
    m = b.receive(q, 1)[0]
    b.ok(
        "QueueService/Reject",
        {
            "queue": q,
            "seq_number": m["seq_number"],
            "lock_token": m["lock_token"],
            "dead_letter_reason": "poison",
        },
    )
    b.ok(
        "AdminService/Subscribe",
        {
            "topic": unique("events"),
            "name": unique("sub"),
            "filter": {"expr": 'subject startsWith "orders."'},
        },
    )
    return q


@pytest.fixture(params=list(SIZES))
def sized(
    request: pytest.FixtureRequest, browser: Browser, console_broker: Broker
) -> Iterator[tuple[str, ConsolePage]]:
    viewport, scheme = SIZES[request.param]
    for cp in open_console(browser, console_broker, viewport=viewport, scheme=scheme):
        yield request.param, cp


def assert_no_sideways_scroll(cp: ConsolePage, name: str) -> None:
    """Nothing overflows the viewport sideways (tables scroll inside their own region)."""
    wide = cp.page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 1, f"{name}: {wide} px of horizontal scrolling"


def scan(cp: ConsolePage, label: str, name: str) -> None:
    cp.screenshot(f"{name}-{label}")
    serious = cp.axe(f"{name}-{label}")
    assert not serious, f"{name} ({label}): {serious}"


def test_every_view_is_accessible_and_screenshotted(
    sized: tuple[str, ConsolePage], populated: str
) -> None:
    label, cp = sized
    page = cp.page
    cp.open()
    cp.heading("Sign in")
    # The theme follows prefers-color-scheme (the axe scan then checks its contrast).
    rgb = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    brightness = sum(int(c) for c in rgb[rgb.index("(") + 1 : -1].split(",")[:3]) / 765
    assert (brightness < 0.2) if label.endswith("dark") else (brightness > 0.8), rgb
    scan(cp, label, "sign-in")
    cp.signed_in(ADMIN_TOKEN)
    page.get_by_role("button", name="Refresh now").click()  # a second sample: charts draw
    expect(page.locator("figure.chart svg").first).to_be_visible()
    scan(cp, label, "overview")
    cp.go("queues")
    cp.heading("Queues")
    expect(page.get_by_role("link", name=populated)).to_be_visible()
    scan(cp, label, "queues")
    cp.go(f"queues/{populated}")
    cp.heading(populated)
    page.get_by_role("form", name="Peek messages").get_by_role("button", name="Peek").click()
    expect(page.locator("#peek-results article")).to_have_count(3)
    scan(cp, label, "queue")
    assert_no_sideways_scroll(cp, "queue")
    # The operating panels, populated: a received message, the dead-letter browser, the
    # deferred and scheduled lists, search results and the charts.
    page.get_by_role("form", name="Receive messages").get_by_role("button", name="Receive").click()
    expect(page.locator("#received article.message")).to_have_count(1)
    page.get_by_role("button", name="Load dead letters").click()
    expect(page.locator("#dlq-table > tbody > tr")).to_have_count(1)
    page.get_by_role("button", name="List deferred").click()
    page.get_by_role("button", name="List scheduled").click()
    search = page.get_by_role("form", name="Search messages")
    search.get_by_label("Filter expression").fill('subject == "orders.new"')
    search.get_by_role("button", name="Search").click()
    expect(page.locator("#search-results article.message")).not_to_have_count(0)
    page.get_by_role("button", name="Refresh now").click()
    expect(page.locator("#queue-charts figure.chart svg").first).to_be_visible()
    scan(cp, label, "queue-operate")
    assert_no_sideways_scroll(cp, "queue-operate")
    page.locator("#received").get_by_role("button", name="Reject…").click()
    expect(page.get_by_role("dialog")).to_be_visible()
    scan(cp, label, "reject-dialog")
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Purge dead letters…").click()
    expect(page.get_by_role("dialog")).to_be_visible()
    scan(cp, label, "purge-dialog")
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0)
    expect(page.get_by_role("button", name="Purge dead letters…")).to_be_focused()
    cp.go("topics")
    cp.heading("Topics")
    expect(page.locator("#topics-list table").first).to_be_visible()
    scan(cp, label, "topics")
    topic = page.locator("#topics-list section.topic h3").first.inner_text().removeprefix("Topic ")
    publish = page.get_by_role("form", name="Publish to a topic")
    publish.get_by_label("Topic").fill(topic)
    publish.get_by_label("Subject").fill("orders.new")
    publish.get_by_role("button", name="Preview routing").click()
    expect(page.locator("#publish-routing table")).to_be_visible()
    scan(cp, label, "topics-publish")
    assert_no_sideways_scroll(cp, "topics")
    cp.broker.create_key(["send"], name="listed")  # the keys table has a row
    cp.go("keys")
    cp.heading("Access keys")
    key_id = page.locator("#keys-list tbody td code").first
    expect(key_id).to_be_visible()
    scan(cp, label, "keys")
    # The key id stays on one line (it used to wrap two characters per line at 390 px).
    lines = key_id.evaluate("(el) => el.getClientRects().length")
    height = key_id.evaluate("(el) => el.getBoundingClientRect().height")
    font = key_id.evaluate("(el) => parseFloat(getComputedStyle(el).fontSize)")
    assert lines == 1 and height < 2 * font, (lines, height, font)
    assert_no_sideways_scroll(cp, "keys")


def test_keyboard_alone_signs_in_and_navigates(console: ConsolePage) -> None:
    page = console.page
    console.broker.create_queue(unique("kbd"))  # the overview then has a queue table
    console.open()
    console.heading("Sign in")
    expect(page.get_by_label("Access token")).to_be_focused()
    page.keyboard.type(ADMIN_TOKEN)
    page.keyboard.press("Enter")
    console.heading("Overview")
    expect(page.locator("h1#page-title")).to_be_focused()  # focus follows the navigation
    page.keyboard.press("Shift+Tab")
    order = []
    page.locator("#skip-link").focus()
    for _ in range(6):
        page.keyboard.press("Tab")
        order.append(
            page.evaluate(
                "() => document.activeElement.textContent.trim() || document.activeElement.id"
            )
        )
    assert order[:4] == ["Overview", "Queues", "Topics", "Access keys"], order
    # A refresh re-renders the data but keeps the keyboard focus where it was.
    console.set_refresh("every 2 s")
    region = page.get_by_role("region", name="Largest queues by retained messages")
    region.focus()
    before = page.locator("#freshness").inner_text()
    expect(page.locator("#freshness")).not_to_have_text(before, timeout=8_000)
    expect(region).to_be_focused()
    page.locator("#nav a", has_text="Queues").focus()
    page.keyboard.press("Enter")
    console.heading("Queues")


def test_the_data_turns_stale_when_the_broker_stops(
    browser: Browser, broker_factory: BrokerFactory
) -> None:
    broker = broker_factory({})
    broker.create_queue("watched")
    for cp in open_console(browser, broker):
        cp.expect_offline()
        cp.signed_in(ADMIN_TOKEN)
        cp.set_refresh("every 2 s")
        expect(cp.page.locator("#freshness")).to_contain_text("Live")
        assert cp.page.evaluate("() => document.body.dataset.stale") == "false"
        broker.stop()
        expect(cp.page.locator("#freshness")).to_have_text("Stale", timeout=15_000)
        banner = cp.page.locator("#stale-banner")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("Could not reach the broker")
        expect(banner).to_contain_text("Showing what was current at")
        # The last data stays on screen, marked stale (not replaced by zeros or a blank).
        assert cp.page.evaluate("() => document.body.dataset.stale") == "true"
        expect(cp.page.locator("#overview-data")).to_contain_text(
            re.compile(r"Backend\s*local(?! file)")
        )
        cp.screenshot("stale")


def test_a_route_with_a_malformed_escape_shows_not_found(console: ConsolePage) -> None:
    console.signed_in(ADMIN_TOKEN)
    console.go("queues/%E0%A4%A")  # decodeURIComponent throws URIError on it
    console.heading("Not found")
    expect(console.page.get_by_role("link", name="Go to the overview")).to_be_visible()
    assert console.problems() == []  # no uncaught error
    console.go("queues")  # the router still works
    console.heading("Queues")
