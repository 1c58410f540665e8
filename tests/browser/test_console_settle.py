"""Receive and settle in the console (issue 32 part 1) against a real broker: Receive
peek-locks 1–32 messages with a live lock countdown; Complete, Abandon (delay, error), Defer,
Reject (reason + description) and Renew each call the documented RPC with the signed-in
token, and an expired lock shows the broker's own ``lock_lost`` answer."""

from __future__ import annotations

import json
import re
from typing import Any

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, unique
from playwright.sync_api import Locator, Page, expect


def _open_queue(console: ConsolePage, name: str) -> None:
    console.signed_in(ADMIN_TOKEN)
    console.go(f"queues/{name}")
    console.heading(name)


def _settle_call(page: Page, method: str) -> Any:
    """``with`` it: ``.value`` is the request the next click sends to ``QueueService/<method>``."""
    return page.expect_request(lambda r: r.url.endswith(f".QueueService/{method}"))


def _peek(console: ConsolePage, queue: str, state: str) -> list[dict[str, object]]:
    resp = console.broker.ok("QueueService/Peek", {"queue": queue, "state": state, "max": 100})
    return list(resp.get("messages", []))


def test_receive_lists_locked_messages_and_each_settlement_calls_its_rpc(
    console: ConsolePage,
) -> None:
    page = console.page
    name = console.broker.create_queue(unique("settle"))
    console.broker.send(name, "one", "two", "three", "four", "five")
    _open_queue(console, name)

    recv = page.get_by_role("form", name="Receive messages")
    recv.get_by_label("How many").fill("4")
    with page.expect_request(lambda r: r.url.endswith(".QueueService/Receive")) as asked:
        recv.get_by_role("button", name="Receive").click()
    assert json.loads(asked.value.post_data or "{}")["max_messages"] == 4
    assert asked.value.headers["authorization"] == f"Bearer {ADMIN_TOKEN}"
    rows = page.locator("#received article.message")
    expect(rows).to_have_count(4)
    expect(page.get_by_text("Received 4 messages under lock.")).to_be_visible()
    first_lock = rows.first.locator(".lock")
    expect(first_lock).to_have_text(re.compile(r"^Lock expires in \d"))
    before = first_lock.inner_text()
    expect(first_lock).not_to_have_text(before, timeout=3000)  # it counts down live
    assert {m["state"] for m in _peek(console, name, "locked")} == {"locked"}
    seqs = [int(rows.nth(i).get_attribute("data-seq") or 0) for i in range(4)]

    def row(seq: int) -> Locator:
        return page.locator(f'#received article.message[data-seq="{seq}"]')

    # Complete
    with _settle_call(page, "Complete") as call:
        row(seqs[0]).get_by_role("button", name=f"Complete message {seqs[0]}").click()
    assert call.value.headers["authorization"] == f"Bearer {ADMIN_TOKEN}"
    expect(row(seqs[0]).locator(".lock")).to_have_text("Completed: deleted from the queue.")
    assert row(seqs[0]).locator(".actions.settle button").count() == 0

    # Abandon with a delay, in a dialog (Enter submits)
    row(seqs[1]).get_by_role("button", name=f"Abandon… message {seqs[1]}").click()
    dialog = page.get_by_role("dialog", name="Abandon the message?")
    dialog.get_by_label("Delay (ms)").fill("60000")
    dialog.get_by_label("Error").fill("ValueError: <b>bad</b> input")
    with _settle_call(page, "Abandon") as call:
        dialog.get_by_label("Delay (ms)").press("Enter")
    sent = json.loads(call.value.post_data or "{}")
    assert (sent["delay_ms"], sent["error"]) == (60000, "ValueError: <b>bad</b> input")
    expect(row(seqs[1]).locator(".lock")).to_contain_text("Abandoned: receivable again in 1 min")
    (parked,) = [m for m in _peek(console, name, "scheduled") if m["seq_number"] == seqs[1]]
    assert parked["last_error"] == "ValueError: <b>bad</b> input"  # kept with the message

    # Defer
    with _settle_call(page, "Defer"):
        row(seqs[2]).get_by_role("button", name=f"Defer message {seqs[2]}").click()
    expect(row(seqs[2]).locator(".lock")).to_contain_text(
        f"Deferred: fetch it by seq_number {seqs[2]}"
    )
    assert [m["seq_number"] for m in _peek(console, name, "deferred")] == [seqs[2]]

    # Reject with reason and description; Escape first cancels without a call
    reject = row(seqs[3]).get_by_role("button", name=f"Reject… message {seqs[3]}")
    reject.click()
    dialog = page.get_by_role("dialog", name="Reject (dead-letter) the message?")
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(reject).to_be_focused()
    reject.click()
    dialog.get_by_label("Reason").fill("bad-sku")
    dialog.get_by_label("Description").fill("sku A-1 unknown")
    with _settle_call(page, "Reject"):
        dialog.get_by_role("button", name="Reject").click()
    expect(row(seqs[3]).locator(".lock")).to_have_text("Rejected: moved to the dead letters.")
    dead = _peek(console, name, "dead_lettered")
    assert [(m["dead_letter_reason"], m["dead_letter_description"]) for m in dead] == [
        ("bad-sku", "sku A-1 unknown")
    ]

    # Renew: the countdown moves to the broker's new deadline
    recv.get_by_label("How many").fill("1")
    recv.get_by_role("button", name="Receive").click()
    expect(rows).to_have_count(5)
    fifth = rows.first
    seq5 = int(fifth.get_attribute("data-seq") or 0)
    until = int(fifth.locator(".lock").get_attribute("data-locked-until") or 0)
    page.wait_for_timeout(1100)  # a real broker's clock must move for the deadline to
    with _settle_call(page, "Renew"):
        fifth.get_by_role("button", name=f"Renew message {seq5}").click()
    expect(fifth.get_by_text("Lock renewed.")).to_be_visible()
    assert int(fifth.locator(".lock").get_attribute("data-locked-until") or 0) > until


def test_receive_is_bounded_to_32(console: ConsolePage) -> None:
    page = console.page
    name = console.broker.create_queue(unique("settle-max"))
    console.broker.send(name, *[f"m{i}" for i in range(40)])
    _open_queue(console, name)
    recv = page.get_by_role("form", name="Receive messages")
    asked: list[str] = []
    page.on(
        "request",
        lambda r: asked.append(r.url) if r.url.endswith(".QueueService/Receive") else None,
    )
    recv.get_by_label("How many").fill("99")
    recv.get_by_role("button", name="Receive").click()
    assert recv.get_by_label("How many").evaluate("(el) => el.validity.rangeOverflow")
    recv.get_by_label("How many").fill("32")
    with page.expect_request(lambda r: r.url.endswith(".QueueService/Receive")) as call:
        recv.get_by_role("button", name="Receive").click()
    assert json.loads(call.value.post_data or "{}")["max_messages"] == 32
    expect(page.locator("#received article.message")).to_have_count(32)
    assert len(asked) == 1  # 99 was refused in the page, never sent


def test_settling_an_expired_lock_shows_the_brokers_lock_lost(console: ConsolePage) -> None:
    page = console.page
    console.expect_http(409)
    name = console.broker.create_queue(unique("settle-expire"), lock_duration_ms=1000)
    console.broker.send(name, "late")
    _open_queue(console, name)
    page.get_by_role("form", name="Receive messages").get_by_role("button", name="Receive").click()
    row = page.locator("#received article.message").first
    expect(row.locator(".lock")).to_have_text("Lock expired", timeout=5000)
    seq = row.get_attribute("data-seq")
    with _settle_call(page, "Complete") as call:
        row.get_by_role("button", name=f"Complete message {seq}").click()
    assert call.value.headers["authorization"] == f"Bearer {ADMIN_TOKEN}"
    alert = row.get_by_role("alert")
    expect(alert).to_contain_text("The lock was lost or the message already settled")
    expect(alert.locator("code")).to_have_text("lock_lost")
    # the row keeps its buttons: nothing was settled
    expect(row.get_by_role("button", name=f"Complete message {seq}")).to_be_visible()


def test_a_subscription_page_receives_and_settles_too(console: ConsolePage) -> None:
    page = console.page
    topic, sub = unique("settle-topic"), unique("settle-sub")
    console.broker.ok(
        "AdminService/Subscribe", {"topic": topic, "name": sub, "filter": {"expr": ""}}
    )
    console.broker.send(topic, "fanned out")
    _open_queue(console, sub)
    page.get_by_role("form", name="Receive messages").get_by_role("button", name="Receive").click()
    row = page.locator("#received article.message").first
    expect(row.locator("pre.body")).to_have_text("fanned out")
    seq = row.get_attribute("data-seq")
    with _settle_call(page, "Complete") as call:
        row.get_by_role("button", name=f"Complete message {seq}").click()
    assert json.loads(call.value.post_data or "{}")["queue"] == sub
    expect(row.locator(".lock")).to_have_text("Completed: deleted from the queue.")
    assert _peek(console, sub, "") == []
