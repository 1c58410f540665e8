"""Inspecting a message in the console (issue 32 part 2): every field the wire carries is
shown, the body as text, pretty JSON or hex, or downloaded as its exact bytes; a body over
256 KiB is not drawn until the operator asks for it."""

from __future__ import annotations

import json

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, b64, unique
from playwright.sync_api import expect

LAZY_BYTES = 256 * 1024


def _peek_all(console: ConsolePage, queue: str, state: str = "") -> None:
    page = console.page
    console.signed_in(ADMIN_TOKEN)
    console.go(f"queues/{queue}")
    console.heading(queue)
    peek = page.get_by_role("form", name="Peek messages")
    if state:
        peek.get_by_label("State").select_option(state)
    peek.get_by_role("button", name="Peek").click()


def test_the_message_view_shows_every_wire_field(console: ConsolePage) -> None:
    page = console.page
    name = console.broker.create_queue(unique("inspect"))
    message = {
        "message_id": "mid-1",
        "correlation_id": "corr-7",
        "reply_to": "replies",
        "group_id": "g-1",
        "subject": "orders.new",
        "content_type": "application/json",
        "properties": {"region": "eu", "tier": "gold"},
        "body": b64(json.dumps({"sku": "A-1", "qty": 2})),
    }
    console.broker.ok("QueueService/Send", {"queue": name, "messages": [message]})
    got = console.broker.receive(name, 1)[0]  # delivery 1, then dead-letter it
    console.broker.ok(
        "QueueService/Reject",
        {
            "queue": name,
            "seq_number": got["seq_number"],
            "lock_token": got["lock_token"],
            "dead_letter_reason": "bad-sku",
            "dead_letter_description": "sku A-1 unknown",
        },
    )
    _peek_all(console, name, "dead_lettered")
    card = page.locator("#peek-results article.message").first
    facts = card.locator("dl.facts").inner_text()
    for label, value in [
        ("Seq number", str(got["seq_number"])),
        ("State", "dead-lettered"),
        ("Delivery count", "1"),
        ("Message ID", "mid-1"),
        ("Correlation ID", "corr-7"),
        ("Reply to", "replies"),
        ("Group ID", "g-1"),
        ("Subject", "orders.new"),
        ("Content type", "application/json"),
        ("Dead-letter reason", "bad-sku"),
        ("Dead-letter description", "sku A-1 unknown"),
    ]:
        assert f"{label}\n{value}" in facts, (label, facts)
    assert "Enqueued\n20" in facts
    props = card.get_by_role("region", name=f"Properties of message {got['seq_number']}")
    assert "region" in props.inner_text() and "gold" in props.inner_text()

    body = card.locator("pre.body")
    assert body.inner_text() == json.dumps({"sku": "A-1", "qty": 2}, indent=2)
    card.get_by_label("Show body as").select_option("text")
    assert body.inner_text() == json.dumps({"sku": "A-1", "qty": 2})
    card.get_by_label("Show body as").select_option("hex")
    assert body.inner_text().startswith("00000000  7b 22 73 6b 75")
    with page.expect_download() as dl:
        card.get_by_role("button", name="Download body").click()
    assert dl.value.suggested_filename == f"message-{got['seq_number']}.bin"
    assert json.loads(dl.value.path().read_bytes()) == {"sku": "A-1", "qty": 2}


def test_a_body_over_256_kib_loads_on_request_only(console: ConsolePage) -> None:
    page = console.page
    name = console.broker.create_queue(unique("inspect-big"))
    big = "x" * (LAZY_BYTES + 1)
    console.broker.send(name, big, "small")
    _peek_all(console, name)
    cards = page.locator("#peek-results article.message")
    expect(cards).to_have_count(2)
    first, second = cards.nth(0), cards.nth(1)
    assert first.locator("pre.body").is_hidden()
    assert first.locator("pre.body").text_content() == ""  # not decoded, not drawn
    expect(first.get_by_text("Over 256 KiB: shown on request.")).to_be_visible()
    assert first.get_by_label("Show body as").is_disabled()
    expect(second.locator("pre.body")).to_have_text("small")  # small bodies show at once
    first.get_by_role("button", name="Load the 256.0 KiB body").click()
    expect(first.locator("pre.body")).to_be_visible()
    assert first.locator("pre.body").text_content() == big
    expect(first.locator("pre.body")).to_be_focused()
    with page.expect_download() as dl:
        first.get_by_role("button", name="Download body").click()
    assert dl.value.path().read_bytes() == big.encode()
