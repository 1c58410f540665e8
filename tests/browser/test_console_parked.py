"""Deferred and scheduled messages in the console (issue 32 part 4) against a real broker:
deferred ones are listed and fetched by seq_number (ReceiveDeferred), then settled like any
received message; scheduled ones are listed with their due time and Cancel deletes one."""

from __future__ import annotations

import json

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, b64, now_ms, unique
from playwright.sync_api import expect


def _open(console: ConsolePage, name: str) -> None:
    console.signed_in(ADMIN_TOKEN)
    console.go(f"queues/{name}")
    console.heading(name)


def _states(console: ConsolePage, queue: str) -> dict[int, str]:
    resp = console.broker.ok("QueueService/Peek", {"queue": queue, "max": 100})
    return {m["seq_number"]: m["state"] for m in resp.get("messages", [])}


def test_deferred_messages_are_listed_fetched_by_seq_number_and_settled(
    console: ConsolePage,
) -> None:
    page = console.page
    name = console.broker.create_queue(unique("deferred"))
    seqs = console.broker.send(name, "a", "b", "c")
    for m in console.broker.receive(name, 3):
        console.broker.ok(
            "QueueService/Defer",
            {"queue": name, "seq_number": m["seq_number"], "lock_token": m["lock_token"]},
        )
    _open(console, name)
    panel = page.get_by_role("region", name="Deferred messages")
    panel.get_by_role("button", name="List deferred").click()
    listed = panel.locator("#deferred-list tbody tr")
    expect(listed).to_have_count(3)

    # One by its row's button
    with page.expect_request(lambda r: r.url.endswith(".QueueService/ReceiveDeferred")) as asked:
        panel.get_by_role("button", name=f"Receive deferred message {seqs[0]}").click()
    assert json.loads(asked.value.post_data or "{}") == {"queue": name, "seq_numbers": [seqs[0]]}
    assert asked.value.headers["authorization"] == f"Bearer {ADMIN_TOKEN}"
    got = panel.locator(f'#deferred-received article.message[data-seq="{seqs[0]}"]')
    expect(got.locator(".lock")).to_contain_text("Lock expires in")
    expect(listed).to_have_count(2)
    got.get_by_role("button", name=f"Complete message {seqs[0]}").click()
    expect(got.locator(".lock")).to_have_text("Completed: deleted from the queue.")

    # Two by typed seq_numbers; one that is not deferred is reported as skipped
    form = panel.get_by_role("form", name="Receive deferred messages")
    form.get_by_label("Seq numbers").fill(f"{seqs[1]}, {seqs[2]} {seqs[0]}")
    form.get_by_role("button", name="Receive deferred").click()
    expect(panel.get_by_text("Received 2 deferred messages under lock.")).to_be_visible()
    expect(panel.get_by_text(f"Not deferred (skipped): {seqs[0]}.")).to_be_visible()
    expect(panel.get_by_text("No deferred messages.")).to_be_visible()
    assert _states(console, name) == {seqs[1]: "locked", seqs[2]: "locked"}

    form.get_by_label("Seq numbers").fill("12, x")
    form.get_by_role("button", name="Receive deferred").click()
    expect(panel.get_by_role("alert")).to_contain_text('"x" is not a seq_number')


def test_scheduled_messages_are_listed_with_due_time_and_cancelled(console: ConsolePage) -> None:
    page = console.page
    name = console.broker.create_queue(unique("scheduled"))
    due = now_ms() + 3_600_000
    resp = console.broker.ok(
        "QueueService/Schedule",
        {
            "queue": name,
            "messages": [{"body": b64("later"), "subject": "s1"}, {"body": b64("later2")}],
            "scheduled_enqueue_time_ms": due,
        },
    )
    first, second = resp["seq_numbers"]
    _open(console, name)
    panel = page.get_by_role("region", name="Scheduled messages")
    panel.get_by_role("button", name="List scheduled").click()
    rows = panel.locator("#scheduled-list tbody tr")
    expect(rows).to_have_count(2)
    due_text = page.evaluate(
        """(ms) => { const d = new Date(ms), p = (n) => String(n).padStart(2, "0");
          return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
                 `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`; }""",
        due,
    )
    assert due_text in rows.nth(0).inner_text() and "59 min" in rows.nth(0).inner_text()
    cancel = panel.get_by_role("button", name=f"Cancel scheduled message {first}")
    cancel.click()
    page.keyboard.press("Escape")  # the dialog cancels without a call
    expect(page.get_by_role("dialog")).to_have_count(0)
    assert set(_states(console, name)) == {first, second}
    cancel.click()
    with page.expect_request(lambda r: r.url.endswith(".QueueService/Cancel")) as asked:
        page.get_by_role("dialog").get_by_role("button", name="Cancel message").click()
    assert json.loads(asked.value.post_data or "{}") == {"queue": name, "seq_number": first}
    expect(panel.get_by_text(f"Cancelled scheduled message {first}.")).to_be_visible()
    expect(rows).to_have_count(1)
    assert _states(console, name) == {second: "scheduled"}
