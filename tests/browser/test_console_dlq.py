"""The dead-letter browser (issue 32 part 3) against a real broker: filter dead letters by
reason and age, select rows, redrive exactly the selection (into another queue or back),
purge exactly the selection, and resubmit one. Each action is AdminService/Redrive or
Purge with the selected seq_numbers and the signed-in token."""

from __future__ import annotations

import json

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, unique
from playwright.sync_api import expect


def _dead_letter(console: ConsolePage, queue: str, reasons: list[str]) -> list[int]:
    seqs = console.broker.send(queue, *[f"body-{i}" for i in range(len(reasons))])
    got = {m["seq_number"]: m for m in console.broker.receive(queue, len(reasons))}
    for seq, reason in zip(seqs, reasons, strict=True):
        console.broker.ok(
            "QueueService/Reject",
            {
                "queue": queue,
                "seq_number": seq,
                "lock_token": got[seq]["lock_token"],
                "dead_letter_reason": reason,
                "dead_letter_description": f"why {seq}",
            },
        )
    return seqs


def _states(console: ConsolePage, queue: str) -> dict[int, str]:
    resp = console.broker.ok("QueueService/Peek", {"queue": queue, "max": 100})
    return {m["seq_number"]: m["state"] for m in resp.get("messages", [])}


def test_select_filter_redrive_purge_and_resubmit_dead_letters(console: ConsolePage) -> None:
    page = console.page
    name = console.broker.create_queue(unique("dlq"))
    other = console.broker.create_queue(unique("dlq-other"))
    s1, s2, s3, s4 = _dead_letter(console, name, ["bad-sku", "timeout", "bad-sku", "timeout"])
    console.signed_in(ADMIN_TOKEN)
    console.go(f"queues/{name}")
    console.heading(name)
    dlq = page.get_by_role("region", name="Dead-letter browser")
    dlq.get_by_role("button", name="Load dead letters").click()
    rows = dlq.locator("#dlq-table > tbody > tr")
    expect(rows).to_have_count(4)
    expect(dlq.get_by_text("4 of 4 dead letters shown · 0 selected")).to_be_visible()
    assert dlq.get_by_role("button", name="Redrive selected").is_disabled()

    # Filter by reason, select every row shown, redrive them into another queue.
    dlq.get_by_label("Reason").select_option("timeout")
    expect(rows).to_have_count(2)
    dlq.get_by_label("Select every dead letter shown").check()
    expect(dlq.get_by_text("2 of 4 dead letters shown · 2 selected")).to_be_visible()
    dlq.get_by_label("Redrive into").fill(other)
    with page.expect_request(lambda r: r.url.endswith(".AdminService/Redrive")) as asked:
        dlq.get_by_role("button", name="Redrive selected").click()
    assert json.loads(asked.value.post_data or "{}") == {
        "queue": name,
        "seq_numbers": [s2, s4],
        "target": other,
    }
    assert asked.value.headers["authorization"] == f"Bearer {ADMIN_TOKEN}"
    expect(dlq.get_by_text(f"Redrove into {other} 2 dead letters.")).to_be_visible()
    assert sorted(_states(console, other).values()) == ["active", "active"]
    dlq.get_by_label("Redrive into").fill("")

    # Any reason again: the two bad-sku rows remain; purge one selected row.
    dlq.get_by_label("Reason").select_option("")
    expect(rows).to_have_count(2)
    dlq.get_by_label(f"Select dead letter {s1}").check()
    dlq.get_by_role("button", name="Purge selected…").click()
    dialog = page.get_by_role("dialog", name="Purge 1 dead letter?")
    with page.expect_request(lambda r: r.url.endswith(".AdminService/Purge")) as asked:
        dialog.get_by_role("button", name="Purge selected").click()
    assert json.loads(asked.value.post_data or "{}") == {"queue": name, "seq_numbers": [s1]}
    expect(dlq.get_by_text("Purged 1 dead letter.")).to_be_visible()
    expect(rows).to_have_count(1)
    assert _states(console, name) == {s3: "dead_lettered"}

    # Resubmit the last one: a redrive of that message back into its queue.
    with page.expect_request(lambda r: r.url.endswith(".AdminService/Redrive")) as asked:
        dlq.get_by_role("button", name=f"Resubmit dead letter {s3}").click()
    assert json.loads(asked.value.post_data or "{}") == {"queue": name, "seq_numbers": [s3]}
    expect(dlq.get_by_text("No dead letters.")).to_be_visible()
    assert _states(console, name) == {s3: "active"}


def test_the_age_filter_hides_younger_dead_letters(console: ConsolePage) -> None:
    page = console.page
    name = console.broker.create_queue(unique("dlq-age"))
    (seq,) = _dead_letter(console, name, ["young"])
    console.signed_in(ADMIN_TOKEN)
    console.go(f"queues/{name}")
    dlq = page.get_by_role("region", name="Dead-letter browser")
    dlq.get_by_role("button", name="Load dead letters").click()
    expect(dlq.locator("#dlq-table > tbody > tr")).to_have_count(1)
    dlq.get_by_label("Select dead letter").check()
    dlq.get_by_label("Age", exact=True).select_option(label="older than 1 min")
    expect(dlq.get_by_text("No dead letter matches the filter.")).to_be_visible()
    # a row the filter hides is no longer selected: nothing to act on
    assert dlq.get_by_role("button", name="Redrive selected").is_disabled()
    dlq.get_by_label("Age", exact=True).select_option(label="any age")
    expect(dlq.locator(f'#dlq-table > tbody > tr[data-seq="{seq}"]')).to_have_count(1)
