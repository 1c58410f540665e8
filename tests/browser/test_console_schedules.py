"""The console's Schedules page (docs/cron.md, docs/console.md): the list with status and
next/last fire, add, pause and resume, delete, and a deleted target shown as such --
each checked against what the broker then reports."""

from __future__ import annotations

from console_support import ConsolePage
from e2e_support import ADMIN_TOKEN, b64, unique
from playwright.sync_api import expect


def _listed(console: ConsolePage, name: str) -> dict[str, object] | None:
    for s in console.broker.ok("AdminService/ListSchedules")["schedules"]:
        if s["name"] == name:
            return s  # type: ignore[no-any-return]
    return None


def test_add_pause_resume_and_delete_a_schedule(console: ConsolePage) -> None:
    page = console.page
    queue, name = console.broker.create_queue(unique("reports")), unique("nightly")
    console.signed_in(ADMIN_TOKEN)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Schedules").click()
    console.heading("Schedules")
    form = page.get_by_role("form", name="Add a schedule")
    form.get_by_label("Name").fill(name)
    form.get_by_label("Cron").fill("30 2 * * *")
    form.get_by_label("Time zone").fill("Europe/Berlin")
    form.get_by_label("Queue or topic").fill(queue)
    form.get_by_label("Body (text)").fill('{"report":"nightly"}')
    form.get_by_label("Properties (key=value per line)").fill("team=ops")
    form.get_by_label("After downtime").select_option("skip")
    form.get_by_role("button", name="Add schedule").click()
    expect(page.get_by_role("region", name="Add a schedule").locator(".result")).to_contain_text(
        f"Schedule {name} saved: next slot"
    )
    row = page.locator("#schedules-table tr", has_text=name)
    expect(row).to_contain_text("30 2 * * *")
    expect(row).to_contain_text("Europe/Berlin")
    expect(row.locator("[data-status]")).to_have_text("active")
    expect(row).to_contain_text("never")  # not fired yet
    stored = _listed(console, name)
    assert stored is not None
    assert (stored["timezone"], stored["catch_up"], stored["paused"]) == (
        "Europe/Berlin",
        "skip",
        False,
    )
    assert stored["message"] == {"body": b64('{"report":"nightly"}'), "properties": {"team": "ops"}}
    assert console.axe("schedules") == []

    row.get_by_role("button", name=f"Pause schedule {name}").click()
    expect(row.locator("[data-status]")).to_have_text("paused")
    assert _listed(console, name)["paused"] is True  # type: ignore[index]
    row.get_by_role("button", name=f"Resume schedule {name}").click()
    expect(row.locator("[data-status]")).to_have_text("active")
    resumed = _listed(console, name)
    assert resumed is not None and resumed["paused"] is False
    assert resumed["message"] == stored["message"]  # the rest kept as listed

    row.get_by_role("button", name=f"Delete schedule {name}").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete schedule").click()
    expect(page.locator("#schedules-table tr", has_text=name)).to_have_count(0)
    assert _listed(console, name) is None
    assert console.problems() == []


def test_a_bad_cron_is_refused_in_words_and_a_deleted_target_is_shown(
    console: ConsolePage,
) -> None:
    page = console.page
    broker = console.broker
    console.expect_http(400)  # the refused cron, on purpose
    gone, name = broker.create_queue(unique("gone")), unique("orphan")
    broker.ok("AdminService/CreateSchedule", {"name": name, "cron": "@hourly", "queue": gone})
    (info,) = [q for q in broker.ok("AdminService/ListQueues")["queues"] if q["name"] == gone]
    broker.ok("AdminService/DeleteQueue", {"name": gone, "generation": info["generation"]})
    console.signed_in(ADMIN_TOKEN)
    console.go("schedules")
    console.heading("Schedules")
    row = page.locator("#schedules-table tr", has_text=name)
    expect(row.locator("[data-status]")).to_have_text("target missing")
    form = page.get_by_role("form", name="Add a schedule")
    form.get_by_label("Name").fill(unique("bad"))
    form.get_by_label("Cron").fill("0 25 * * *")
    form.get_by_label("Queue or topic").fill(broker.create_queue())
    form.get_by_role("button", name="Add schedule").click()
    result = page.get_by_role("region", name="Add a schedule").locator(".result")
    expect(result).to_contain_text("field 2 (hour)")
    expect(result).to_contain_text("invalid_argument")
    broker.ok("AdminService/DeleteSchedule", {"name": name})
