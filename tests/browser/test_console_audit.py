"""The console's Audit page (docs/operations.md "Audit trail", docs/console.md): the
changes the broker recorded, with their actor and request, narrowed by queue -- each
row checked against what ListAudit reports."""

from __future__ import annotations

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, unique
from playwright.sync_api import expect


def test_the_audit_page_shows_who_changed_what(console: ConsolePage) -> None:
    page = console.page
    broker = console.broker
    key_id, token = broker.create_key(["manage"])
    mine = broker.create_queue(unique("audited"))
    by_key = unique("by-key")
    broker.ok("AdminService/CreateQueue", {"name": by_key}, token=token)
    broker.send(mine, "one", "two")
    for m in broker.receive(mine, 2):
        broker.ok("QueueService/Reject", {"queue": mine, "seq_number": m["seq_number"],
                                          "lock_token": m["lock_token"]})  # fmt: skip
    assert broker.ok("AdminService/Purge", {"queue": mine}, token=token) == {"purged": 2}
    listed = broker.ok("AdminService/ListAudit", {"queue": mine})["entries"]
    assert [e["action"] for e in listed] == ["CreateQueue", "Purge"]

    console.signed_in(ADMIN_TOKEN)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Audit").click()
    console.heading("Audit trail")
    table = page.locator("#audit-table")
    purge = table.locator("tr", has=page.locator("[data-action=Purge]"), has_text=mine)
    expect(purge).to_contain_text(f"key:{key_id}")
    expect(purge).to_contain_text('{"count":2}')
    expect(purge).to_contain_text(listed[1]["request_id"])
    expect(table.locator("tr", has_text=by_key)).to_contain_text(f"key:{key_id}")
    created = table.locator("tr", has=page.locator("[data-action=CreateQueue]"), has_text=mine)
    expect(created).to_contain_text("admin:1")
    assert console.axe("audit") == []

    form = page.get_by_role("form", name="Filter the audit trail")
    form.get_by_label("Queue or topic").fill(mine)
    form.get_by_label("Changes from").select_option(label="everything kept")
    form.get_by_role("button", name="Show").click()
    expect(table.locator("tbody tr")).to_have_count(2)
    expect(table.locator("tr", has_text=by_key)).to_have_count(0)
    # a change made while the page is open appears at the next refresh (the tail)
    broker.ok("AdminService/CreateQueue", {"name": mine, "config": {"max_delivery_count": 4}})
    page.get_by_role("button", name="Refresh now").click()
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(table.locator("tbody tr").last).to_contain_text('"max_delivery_count":[10,4]')
    assert console.problems() == []
