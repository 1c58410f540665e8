"""Searching a queue in the console (issue 32 part 5) against a real broker: the filter
expression is compiled by TestFilter first (an invalid one shows the broker's error with a
caret at its column and peeks nothing), each peeked message is evaluated by TestFilter
with the message as the sample, matches are highlighted, and results are paged."""

from __future__ import annotations

import json

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, b64, unique
from playwright.sync_api import expect

EXPR = 'properties["region"] == "eu" && subject startsWith "orders."'


def test_search_compiles_first_highlights_matches_and_pages(console: ConsolePage) -> None:
    page = console.page
    name = console.broker.create_queue(unique("search"))
    messages = [
        {
            "subject": "orders.new" if i % 2 == 0 else "billing",
            "properties": {"region": "eu" if i % 3 else "us"},
            "body": b64(f"m{i}"),
        }
        for i in range(25)
    ]
    seqs = console.broker.ok("QueueService/Send", {"queue": name, "messages": messages})[
        "seq_numbers"
    ]
    want = {
        seqs[i]
        for i, m in enumerate(messages)
        if m["subject"] == "orders.new" and m["properties"]["region"] == "eu"
    }
    console.signed_in(ADMIN_TOKEN)
    console.go(f"queues/{name}")
    console.heading(name)
    search = page.get_by_role("form", name="Search messages")
    panel = page.get_by_role("region", name="Search messages")

    # An invalid expression: the broker's error and a caret, and no Peek at all.
    peeks: list[str] = []
    page.on(
        "request", lambda r: peeks.append(r.url) if r.url.endswith(".QueueService/Peek") else None
    )
    search.get_by_label("Filter expression").fill("subject = 'x'")
    with page.expect_request(lambda r: r.url.endswith(".AdminService/TestFilter")) as asked:
        search.get_by_role("button", name="Search").click()
    assert json.loads(asked.value.post_data or "{}") == {"expr": "subject = 'x'"}
    error = panel.locator("#search-error")
    expect(error).to_contain_text("The expression does not compile")
    expect(error).to_contain_text("(1:9)")
    assert error.locator("pre.caret").inner_text() == "subject = 'x'\n        ^"
    assert peeks == []

    # A valid one: the first page of 20, matches marked.
    search.get_by_label("Filter expression").fill(EXPR)
    search.get_by_role("button", name="Search").click()
    cards = panel.locator("#search-results article.message")
    expect(cards).to_have_count(20)
    expect(error).to_have_count(0)
    first_page = {
        int(s)
        for s in panel.locator('#search-results article[data-matched="true"]').evaluate_all(
            "(els) => els.map((e) => e.dataset.seq)"
        )
    }
    assert first_page == {s for s in want if s <= seqs[19]}
    assert panel.locator("article.match .badge.match").count() == len(first_page)
    expect(
        panel.get_by_text(f"{len(first_page)} of 20 messages match (seq {seqs[0]} to {seqs[19]}).")
    ).to_be_visible()

    # Next page, only matches.
    search.get_by_label("Only matches").check()
    panel.get_by_role("button", name="Next page").click()
    expect(panel.get_by_text(f"(seq {seqs[20]} to {seqs[24]})")).to_be_visible()
    second = {int(s) for s in cards.evaluate_all("(els) => els.map((e) => e.dataset.seq)")}
    assert second == {s for s in want if s > seqs[19]}
    assert panel.get_by_role("button", name="Next page").is_hidden()
