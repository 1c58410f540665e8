"""Stored XSS (issue 32 part 8): queue, topic, subscription and key names, subjects,
properties, bodies, dead-letter reasons and filter texts that carry HTML/JS payloads are
stored through the API and then shown on every console page that lists them. They must
render as text: no element is created from them, no handler runs, and no CSP violation
is reported (the fixture fails the test on any)."""

from __future__ import annotations

import json

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, b64, unique
from playwright.sync_api import expect

MARK = "injected"
PAYLOAD = f'<img src=x onerror="window.pwned=1"><script>window.pwned=2</script><b id={MARK}>b</b>'


def _assert_inert(console: ConsolePage, where: str) -> None:
    page = console.page
    found = page.evaluate(
        f"""() => ({{
          marked: document.querySelectorAll("#{MARK}").length,
          imgs: document.querySelectorAll('img[src="x"]').length,
          scripts: [...document.scripts].filter((s) => !s.src).length,
          pwned: window.pwned === undefined ? null : window.pwned,
        }})"""
    )
    assert found == {"marked": 0, "imgs": 0, "scripts": 0, "pwned": None}, (where, found)


def test_html_and_script_payloads_render_as_text_everywhere(console: ConsolePage) -> None:
    page = console.page
    b = console.broker
    queue = b.create_queue(f"q{PAYLOAD}{unique('x')}")
    topic, sub = f"t{PAYLOAD}{unique('t')}", f"s{PAYLOAD}{unique('s')}"
    expr = f"subject == {json.dumps(PAYLOAD)}"  # a string literal with escaped quotes
    b.ok("AdminService/Subscribe", {"topic": topic, "name": sub, "filter": {"expr": expr}})
    message = {
        "subject": PAYLOAD,
        "properties": {PAYLOAD: PAYLOAD},
        "body": b64(PAYLOAD),
        "content_type": PAYLOAD,
    }
    b.ok("QueueService/Send", {"queue": queue, "messages": [message, message, message]})
    b.ok("QueueService/Send", {"queue": topic, "messages": [message]})
    got = b.receive(queue, 1)[0]
    b.ok(
        "QueueService/Reject",
        {
            "queue": queue,
            "seq_number": got["seq_number"],
            "lock_token": got["lock_token"],
            "dead_letter_reason": PAYLOAD,
            "dead_letter_description": PAYLOAD,
        },
    )
    b.create_key(["send"], name=PAYLOAD)

    console.signed_in(ADMIN_TOKEN)
    page.get_by_role("button", name="Refresh now").click()
    _assert_inert(console, "overview")
    console.go("queues")
    console.heading("Queues")
    expect(page.get_by_role("link", name=queue)).to_be_visible()
    _assert_inert(console, "queues")

    page.get_by_role("link", name=queue).click()
    console.heading(queue)
    page.get_by_role("form", name="Peek messages").get_by_role("button", name="Peek").click()
    expect(page.locator("#peek-results article.message")).to_have_count(3)
    expect(page.locator("#peek-results pre.body").first).to_have_text(PAYLOAD)
    page.get_by_role("form", name="Receive messages").get_by_role("button", name="Receive").click()
    expect(page.locator("#received article.message")).to_have_count(1)
    page.get_by_role("button", name="Load dead letters").click()
    expect(page.locator("#dlq-table > tbody > tr").first).to_contain_text(PAYLOAD)
    search = page.get_by_role("form", name="Search messages")
    search.get_by_label("Filter expression").fill(expr)
    search.get_by_role("button", name="Search").click()
    expect(page.locator("#search-results article.match").first).to_be_visible()
    search.get_by_label("Filter expression").fill(f"{PAYLOAD} ==")  # invalid: the error shows it
    search.get_by_role("button", name="Search").click()
    expect(page.locator("#search-error pre.caret")).to_contain_text(PAYLOAD)
    page.locator("#received").get_by_role("button", name="Reject…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Reason").fill(PAYLOAD)
    dialog.get_by_role("button", name="Reject").click()
    expect(page.locator("#received .lock").first).to_have_text(
        "Rejected: moved to the dead letters."
    )
    _assert_inert(console, "queue page")

    console.go(f"queues/{sub}")
    console.heading(sub)
    _assert_inert(console, "subscription page")

    console.go("topics")
    console.heading("Topics")
    expect(page.get_by_role("region", name=f"Topic {topic}")).to_contain_text(expr)
    publish = page.get_by_role("form", name="Publish to a topic")
    publish.get_by_label("Topic").fill(topic)
    publish.get_by_label("Subject").fill(PAYLOAD)
    publish.get_by_role("button", name="Preview routing").click()
    expect(page.locator("#publish-routing")).to_contain_text("Would reach 1 of 1 subscription")
    _assert_inert(console, "topics")

    console.go("keys")
    console.heading("Access keys")
    expect(page.locator("#keys-list")).to_contain_text(PAYLOAD)
    _assert_inert(console, "keys")
