"""Topics (subscribe with a filter, the filter tester) and access keys (create with the
one-time secret and its copy button, newest first with pagination, revoke) in the
console, checked against what the broker then does."""

from __future__ import annotations

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, unique
from playwright.sync_api import expect


def test_subscribe_with_a_filter_and_test_it(console: ConsolePage) -> None:
    page = console.page
    topic, sub = unique("topic"), unique("eu")
    console.signed_in(ADMIN_TOKEN)
    console.go("topics")
    console.heading("Topics")
    form = page.get_by_role("form", name="Subscribe")
    form.get_by_label("Topic").fill(topic)
    form.get_by_label("Subscription name").fill(sub)
    form.get_by_label("Filter").fill('properties["region"] == "eu" && subject startsWith "orders."')
    form.get_by_role("button", name="Subscribe").click()
    section = page.get_by_role("region", name=f"Topic {topic}")
    expect(section).to_contain_text(sub)
    expect(section).to_contain_text('properties["region"] == "eu"')
    subs = console.broker.ok("AdminService/ListSubscriptions")["subscriptions"]
    assert {"topic": topic, "name": sub, "expr": subs[-1]["expr"]} in subs

    # "Test" loads the subscription's filter into the tester.
    section.get_by_role("button", name=f"Test the filter of {sub}").click()
    tester = page.get_by_role("form", name="Test a filter")
    expect(tester.get_by_label("Filter expression")).to_be_focused()
    tester.get_by_label("Subject").fill("orders.new")
    tester.get_by_label("Sample properties (key=value per line)").fill("region=eu")
    tester.get_by_role("button", name="Test filter").click()
    outcome = page.locator("#filter-outcome p")
    expect(outcome).to_have_attribute("data-matched", "true")
    tester.get_by_label("Sample properties (key=value per line)").fill("region=us")
    tester.get_by_role("button", name="Test filter").click()
    expect(outcome).to_have_attribute("data-matched", "false")
    expect(outcome).to_contain_text("Not matched")
    tester.get_by_label("Filter expression").fill("subject ==")
    tester.get_by_role("button", name="Test filter").click()
    expect(outcome).to_have_attribute("data-valid", "false")
    expect(outcome).to_contain_text("does not compile")

    # A message published to the topic reaches the subscription exactly as tested.
    console.broker.ok(
        "QueueService/Send",
        {"queue": topic, "messages": [{"subject": "orders.new", "properties": {"region": "eu"}}]},
    )
    assert console.broker.ok("QueueService/Stats", {"queue": sub})["active"] == 1


def test_create_copy_list_and_revoke_a_key(console: ConsolePage) -> None:
    page = console.page
    console.context.grant_permissions(["clipboard-read", "clipboard-write"])
    for i in range(3):  # more keys than one page shows, created before the console's one
        console.broker.create_key(["send"], name=f"older-{i}")
    console.signed_in(ADMIN_TOKEN)
    console.go("keys")
    console.heading("Access keys")
    key_id = page.locator("#next-key-id").inner_text()
    assert len(key_id) == 32 and all(c in "0123456789abcdef" for c in key_id)
    form = page.get_by_role("form", name="Create an access key")
    form.get_by_label("Name").fill("console-made")
    form.get_by_label("listen").check()
    form.get_by_label("Expires (local time)").fill("2999-01-02 03:04")
    form.get_by_role("button", name="Create key").click()

    secret_panel = page.locator("#secret-panel")
    expect(secret_panel).to_be_visible()
    expect(page.locator("#secret-title")).to_be_focused()
    secret = page.get_by_role("textbox", name="Secret").input_value()
    assert secret.startswith("mqk_")
    page.get_by_role("button", name="Copy secret").click()
    expect(page.locator("#copy-status")).to_have_text("Copied to the clipboard.")
    assert page.evaluate("() => navigator.clipboard.readText()") == secret
    r = console.broker.rpc("QueueService/Stats", {"queue": "nope"}, token=secret)
    assert r.status_code == 404  # the listen key authenticates (and the queue is unknown)
    page.get_by_role("button", name="I have saved it").click()
    expect(secret_panel).to_have_count(0)
    assert secret not in page.content()  # gone from the page once dismissed
    assert page.locator("#next-key-id").inner_text() != key_id  # a fresh ID for the next one

    # Newest first: the console's key heads page one; its expiry is shown in local time.
    first_row = page.locator("#keys-list tbody tr").first
    expect(first_row).to_contain_text("console-made")
    expect(first_row).to_contain_text(key_id)
    expect(first_row).to_contain_text("2999-01-02 03:04:00")
    listed = console.broker.ok("AuthService/ListKeys", {"sort": "created_desc", "limit": 1})
    assert listed["keys"][0]["id"] == key_id

    first_row.get_by_role("button", name=f"Revoke key console-made ({key_id})").click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke key").click()
    expect(page.get_by_text(f"Revoked console-made ({key_id}).")).to_be_visible()
    expect(page.locator("#keys-list tbody tr").first).to_contain_text("revoked")
    r = console.broker.rpc("QueueService/Stats", {"queue": "nope"}, token=secret)
    assert r.status_code == 401


def test_keys_page_through_newest_first(console: ConsolePage) -> None:
    made = [console.broker.create_key(["send"], name=f"page-{i:02d}")[0] for i in range(21)]
    console.signed_in(ADMIN_TOKEN)
    console.go("keys")
    rows = console.page.locator("#keys-list tbody tr")
    expect(rows).to_have_count(20)
    expect(rows.first).to_contain_text(made[-1])
    older = console.page.get_by_role("button", name="Older")
    older.click()
    expect(console.page.get_by_text("Page 2")).to_be_visible()
    expect(rows.first).to_contain_text(made[0])
    console.page.get_by_role("button", name="Newer").click()
    expect(rows.first).to_contain_text(made[-1])
