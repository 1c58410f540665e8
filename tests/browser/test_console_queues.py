"""A queue's whole life in the console against a real broker: create, send a test
message, peek it decoded, dead-letter (through the API, as a consumer would) and redrive
at a rate, purge with the typed confirmation, delete with the exact-name confirmation
(refused in words while the queue holds messages)."""

from __future__ import annotations

import json
import re

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, b64, now_ms, unique
from playwright.sync_api import expect

DEAD_ONE = re.compile(r"dead-lettered1(?!\d)")  # the stats list's text: term, then count


def dead_letter_one(console: ConsolePage, queue: str) -> None:
    msg = console.broker.receive(queue, 1)[0]
    console.broker.ok(
        "QueueService/Reject",
        {
            "queue": queue,
            "seq_number": msg["seq_number"],
            "lock_token": msg["lock_token"],
            "dead_letter_reason": "bad-sku",
            "dead_letter_description": "sku A-1 unknown",
        },
    )


def test_create_send_peek_redrive_purge_delete(console: ConsolePage) -> None:
    page = console.page
    name = unique("console")
    console.signed_in(ADMIN_TOKEN)
    console.go("queues")
    console.heading("Queues")

    create = page.get_by_role("form", name="Create a queue")
    create.get_by_label("Name").fill(name)
    create.get_by_label("Max deliveries").fill("3")
    create.get_by_role("button", name="Create queue").click()
    page.get_by_role("link", name=name).first.click()
    console.heading(name)
    assert "Max deliveries\n3" in console.text("section[aria-labelledby=p-configuration]")

    send = page.get_by_role("form", name="Send a test message")
    send.get_by_label("Body (text)").fill('{"id":1,"sku":"A-1"}')
    send.get_by_label("Content type").fill("application/json")
    send.get_by_label("Properties").fill("region=eu\ntier=gold")
    send.get_by_label("Subject").fill("orders.created")
    send.get_by_role("button", name="Send message").click()
    expect(page.get_by_text("Sent: seq_number")).to_be_visible()
    # Issue 31: what belonged to that message does not ride along with the next one.
    expect(send.get_by_label("Subject")).to_have_value("")
    expect(send.get_by_label("Properties")).to_have_value("")
    expect(send.get_by_label("Body (text)")).to_have_value('{"id":1,"sku":"A-1"}')
    console.broker.send(name, b"\x00\x01\x02binary")

    peek = page.get_by_role("form", name="Peek messages")
    peek.get_by_role("button", name="Peek").click()
    cards = page.locator("#peek-results article.message")
    expect(cards).to_have_count(2)
    first = cards.nth(0)
    body = first.locator("pre.body")
    assert json.loads(body.inner_text()) == {"id": 1, "sku": "A-1"}
    assert '\n  "id": 1' in body.inner_text()  # pretty-printed
    assert "region" in first.inner_text() and "gold" in first.inner_text()
    first.get_by_label("Show body as").select_option("hex")
    assert body.inner_text().startswith("00000000  7b 22 69 64")
    assert cards.nth(1).locator("pre.body").get_attribute("data-kind") == "hex"

    # Dead-letter the JSON message as a consumer would, then find it by state.
    dead_letter_one(console, name)
    peek.get_by_label("State").select_option("dead_lettered")
    peek.get_by_role("button", name="Peek").click()
    expect(cards).to_have_count(1)
    assert "bad-sku" in cards.nth(0).inner_text() and "sku A-1 unknown" in cards.nth(0).inner_text()
    page.get_by_role("button", name="Refresh now").click()
    expect(page.locator("#queue-stats")).to_contain_text(DEAD_ONE)

    dead = page.get_by_role("region", name="Dead letters")
    redrive = dead.get_by_role("form", name="Redrive dead letters")
    redrive.get_by_label("Rate per second").fill("10")
    with page.expect_request(lambda r: r.url.endswith(".AdminService/Redrive")) as asked:
        redrive.get_by_role("button", name="Redrive").click()
    assert asked.value.post_data_json == {"queue": name, "target": "", "max": 0, "rate_per_sec": 10}
    expect(dead.get_by_text("Redrove 1 dead letter.")).to_be_visible()
    assert console.broker.ok("QueueService/Stats", {"queue": name})["dead_lettered"] == 0

    # Purge: the action stays disabled until "purge" is typed exactly.
    dead_letter_one(console, name)
    page.get_by_role("button", name="Refresh now").click()
    expect(page.locator("#queue-stats")).to_contain_text(DEAD_ONE)
    dead.get_by_role("button", name="Purge dead letters…").click()
    dialog = page.get_by_role("dialog")
    go = dialog.get_by_role("button", name="Purge")
    expect(go).to_be_disabled()
    dialog.get_by_role("textbox").fill("Purge")
    expect(go).to_be_disabled()
    dialog.get_by_role("textbox").fill("purge")
    go.click()
    expect(dead.get_by_text("Purged 1 dead letter.")).to_be_visible()
    assert console.broker.ok("QueueService/Stats", {"queue": name})["dead_lettered"] == 0

    # Delete: refused in words while messages remain, done once the queue is empty.
    console.expect_http(409)
    deletion = page.get_by_role("region", name="Delete queue")
    deletion.get_by_role("button", name="Delete queue…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_role("textbox").fill(name + "x")
    expect(dialog.get_by_role("button", name="Delete queue")).to_be_disabled()
    dialog.get_by_role("textbox").fill(name)
    dialog.get_by_role("button", name="Delete queue").click()
    alert = deletion.get_by_role("alert")
    expect(alert).to_contain_text("still holds messages")
    expect(alert).to_contain_text("queue_not_empty")
    for m in console.broker.receive(name, 10):
        console.broker.ok(
            "QueueService/Complete",
            {"queue": name, "seq_number": m["seq_number"], "lock_token": m["lock_token"]},
        )
    deletion.get_by_role("button", name="Delete queue…").click()
    page.get_by_role("dialog").get_by_role("textbox").fill(name)
    page.get_by_role("dialog").get_by_role("button", name="Delete queue").click()
    console.heading("Queues")
    expect(page.get_by_text(f"Deleted the queue {name}.")).to_be_visible()
    names = [q["name"] for q in console.broker.ok("AdminService/ListQueues")["queues"]]
    assert name not in names


def test_a_broker_error_is_shown_in_words_with_its_code(console: ConsolePage) -> None:
    console.expect_http(400)
    name = console.broker.create_queue(unique("grouped"), ordering_mode="group_fifo")
    console.signed_in(ADMIN_TOKEN)
    console.go(f"queues/{name}")
    console.heading(name)
    send = console.page.get_by_role("form", name="Send a test message")
    send.get_by_label("Body (text)").fill("no group")
    send.get_by_role("button", name="Send message").click()
    alert = send.locator("xpath=..").get_by_role("alert")
    expect(alert).to_contain_text("needs a group ID")
    expect(alert).to_contain_text("group_required")
    assert b64("x")  # the helper module is the e2e one: same broker semantics


def test_delete_is_fenced_on_the_generation_the_page_was_loaded_with(
    console: ConsolePage,
) -> None:
    """operations "Delete a queue": the queue is deleted and re-created under the same name
    while its page is open; confirming the old page's deletion must not hit the new one."""
    console.expect_http(409)
    page = console.page
    name = console.broker.create_queue(unique("replaced"))
    console.signed_in(ADMIN_TOKEN)
    console.go(f"queues/{name}")
    console.heading(name)
    deletion = page.get_by_role("region", name="Delete queue")

    def generation() -> str:
        listed = console.broker.ok("AdminService/ListQueues")["queues"]
        return str(next(q for q in listed if q["name"] == name)["generation"])

    shown = generation()
    expect(deletion).to_contain_text(f"Generation {shown}")
    console.broker.ok("AdminService/DeleteQueue", {"name": name, "generation": shown})
    console.broker.create_queue(name)
    replacement = generation()
    assert replacement != shown
    deletion.get_by_role("button", name="Delete queue…").click()
    page.get_by_role("dialog").get_by_role("textbox").fill(name)
    page.get_by_role("dialog").get_by_role("button", name="Delete queue").click()
    alert = deletion.get_by_role("alert")
    expect(alert).to_contain_text("replacement queue: nothing was deleted")
    expect(alert).to_contain_text("queue_changed")
    assert generation() == replacement  # the replacement is still there


def test_the_queue_form_sets_a_retry_policy_and_a_message_shows_its_last_error(
    console: ConsolePage,
) -> None:
    page = console.page
    name = unique("retrying")
    console.signed_in(ADMIN_TOKEN)
    console.go("queues")
    create = page.get_by_role("form", name="Create a queue")
    create.get_by_label("Name").fill(name)
    create.get_by_label("Retry: first delay (ms)").fill("60000")
    create.get_by_label("Retry: multiplier").fill("1.5")
    create.get_by_label("Retry: jitter").fill("0.25")
    create.get_by_role("button", name="Create queue").click()
    page.get_by_role("link", name=name).first.click()
    console.heading(name)
    config = console.text("section[aria-labelledby=p-configuration]")
    assert "Retry policy\n60000 ms (1 min 00 s) × 1.5 per failure, at most 900000 ms" in config
    assert "jitter 0.25" in config

    console.broker.send(name, b"job")
    msg = console.broker.receive(name, 1)[0]
    console.broker.ok(
        "QueueService/Abandon",
        {
            "queue": name,
            "seq_number": msg["seq_number"],
            "lock_token": msg["lock_token"],
            "error": "KeyError: 'sku-9'",
        },
    )
    peek = page.get_by_role("form", name="Peek messages")
    peek.get_by_role("button", name="Peek").click()
    card = page.locator("#peek-results article.message").first
    expect(card).to_contain_text("Last error")
    assert "KeyError: 'sku-9'" in card.inner_text() and "scheduled" in card.inner_text()


def test_a_queue_holding_only_scheduled_messages_shows_no_oldest_age(
    console: ConsolePage,
) -> None:
    """Issue 31: "Oldest" is the age of the oldest active or locked message; a queue with
    only scheduled ones has none, so it shows a dash, never "0 ms"."""
    page = console.page
    name = unique("later")
    console.broker.ok("AdminService/CreateQueue", {"name": name})
    console.broker.ok(
        "QueueService/Schedule",
        {
            "queue": name,
            "messages": [{"body": b64(b"x")}],
            "scheduled_enqueue_time_ms": now_ms() + 3_600_000,
        },
    )
    console.signed_in(ADMIN_TOKEN)
    console.go("queues")
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=name))
    expect(row).to_contain_text("—")
    assert "0 ms" not in row.inner_text()
    page.get_by_role("link", name=name).first.click()
    stats = page.locator("#queue-stats")
    expect(stats).to_contain_text("oldest active/locked")
    assert "0 ms" not in stats.inner_text()
