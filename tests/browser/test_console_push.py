"""The push panel of the console's queue page (docs/push.md, docs/console.md): the target's
URL and status, pause and resume (the secret kept: the console never sees it), delete
after a confirmation -- each checked against what the broker then reports. The target is a
public address that is never reached (the queue stays empty)."""

from __future__ import annotations

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, unique
from playwright.sync_api import expect

URL = "https://203.0.114.1/hooks/orders"


def _listed(console: ConsolePage, queue: str) -> dict[str, object] | None:
    for p in console.broker.ok("AdminService/ListPushes")["pushes"]:
        if p["queue"] == queue:
            return p  # type: ignore[no-any-return]
    return None


def test_the_push_panel_shows_pauses_resumes_and_deletes(console: ConsolePage) -> None:
    page = console.page
    broker = console.broker
    queue = broker.create_queue(unique("hooked"))
    body = {"queue": queue, "url": URL, "max_in_flight": 4, "timeout_ms": 2500, "paused": True}
    secret = broker.ok("AdminService/CreatePush", body)["push"]["secret"]
    console.signed_in(ADMIN_TOKEN)
    console.go(f"queues/{queue}")
    console.heading(queue)
    box = page.locator("#push-target")
    expect(box).to_contain_text(URL)
    expect(box.locator("[data-push-status]")).to_have_text("paused")
    assert secret not in page.content()
    assert console.axe("push") == []

    page.get_by_role("button", name="Resume push").click()
    expect(box.locator("[data-push-status]")).to_have_text("active")
    resumed = _listed(console, queue)
    assert resumed is not None and resumed["paused"] is False
    assert (resumed["max_in_flight"], resumed["timeout_ms"]) == (4, 2500)  # kept as listed
    page.get_by_role("button", name="Pause push").click()
    expect(box.locator("[data-push-status]")).to_have_text("paused")
    assert _listed(console, queue)["paused"] is True  # type: ignore[index]

    page.get_by_role("button", name="Delete push target…").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete push target").click()
    expect(box).to_contain_text("No push target")
    assert _listed(console, queue) is None
    assert console.problems() == []
