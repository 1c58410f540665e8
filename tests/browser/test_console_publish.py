"""Publishing to a topic from the Topics page (issue 32 part 6) against a real broker:
the routing preview evaluates every subscription's filter with TestFilter on the message
before anything is sent, Publish confirms naming the matched subscriptions, and the
message is a Send to the topic that reaches exactly those subscriptions."""

from __future__ import annotations

import json

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, unique
from playwright.sync_api import expect


def _stats(console: ConsolePage, queue: str) -> int:
    return int(console.broker.ok("QueueService/Stats", {"queue": queue})["active"])


def test_publish_previews_routing_per_subscription_then_sends(console: ConsolePage) -> None:
    page = console.page
    topic = unique("pub-topic")
    eu, us, every = unique("pub-eu"), unique("pub-us"), unique("pub-all")
    for name, expr in (
        (eu, 'properties["region"] == "eu"'),
        (us, 'properties["region"] == "us"'),
        (every, ""),
    ):
        console.broker.ok(
            "AdminService/Subscribe", {"topic": topic, "name": name, "filter": {"expr": expr}}
        )
    console.signed_in(ADMIN_TOKEN)
    console.go("topics")
    console.heading("Topics")
    pub = page.get_by_role("form", name="Publish to a topic")
    panel = page.get_by_role("region", name="Publish to a topic")
    pub.get_by_label("Topic").fill(topic)
    pub.get_by_label("Body (text)").fill('{"n":1}')
    pub.get_by_label("Subject").fill("orders.new")
    pub.get_by_label("Properties").fill("region=eu")

    calls: list[dict[str, object]] = []
    page.on(
        "request",
        lambda r: (
            calls.append(json.loads(r.post_data or "{}"))
            if r.url.endswith(".AdminService/TestFilter")
            else None
        ),
    )
    sends: list[str] = []
    page.on(
        "request", lambda r: sends.append(r.url) if r.url.endswith(".QueueService/Send") else None
    )
    pub.get_by_role("button", name="Preview routing").click()
    expect(panel.get_by_text(f"Would reach 2 of 3 subscriptions of {topic}.")).to_be_visible()
    routing = panel.get_by_role("region", name=f"Routing of the message to {topic}")
    for name, verdict in ((eu, "matches"), (us, "no match"), (every, "matches")):
        expect(routing.locator("tr", has_text=name)).to_contain_text(verdict)
    assert len(calls) == 3 and all(c["message"]["subject"] == "orders.new" for c in calls)  # type: ignore[index]
    assert sends == []  # a preview sends nothing

    # Publish: the confirmation names the matched subscriptions; Escape sends nothing.
    pub.get_by_role("button", name="Publish…").click()
    dialog = page.get_by_role("dialog", name=f"Publish to {topic}?")
    names = ", ".join(sorted([eu, every]))  # in ListSubscriptions order (by name)
    expect(dialog).to_contain_text(f"It will be delivered to 2 subscriptions: {names}.")
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    assert sends == []
    pub.get_by_role("button", name="Publish…").click()
    with page.expect_request(lambda r: r.url.endswith(".QueueService/Send")) as asked:
        dialog.get_by_role("button", name="Publish").click()
    sent = json.loads(asked.value.post_data or "{}")
    assert sent["queue"] == topic and sent["messages"][0]["properties"] == {"region": "eu"}
    assert asked.value.headers["authorization"] == f"Bearer {ADMIN_TOKEN}"
    expect(panel.get_by_text(f"Published to {topic}: seq_number ")).to_be_visible()
    assert (_stats(console, eu), _stats(console, us), _stats(console, every)) == (1, 0, 1)
