"""``mqlite cron add|list|rm`` (docs/cron.md), embedded and against a real broker."""

from __future__ import annotations

from cli_support import Cli


def test_cron_add_list_rm(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue)
    name = f"nightly-{queue}"
    added = cli.json(
        "cron", "add", name, "30 2 * * *", queue, "run report", "--tz", "Europe/Berlin",
        "--subject", "report", "--prop", "kind=nightly", "--prop", "team=ops",
        "--catch-up", "skip",
    )["schedule"]  # fmt: skip
    assert (added["name"], added["cron"], added["timezone"], added["catch_up"]) == (
        name, "30 2 * * *", "Europe/Berlin", "skip",
    )  # fmt: skip
    assert added["message"]["properties"] == {"kind": "nightly", "team": "ops"}
    assert added["status"] == "active" and added["next_fire_at_ms"] > 0
    listed = {s["name"]: s for s in cli.json("cron", "list")["schedules"]}
    assert listed[name]["message"]["subject"] == "report"
    table = cli.ok("cron", "list")
    assert "NEXT" in table and name in table and "Europe/Berlin" in table
    text = cli.ok("cron", "add", name, "@hourly", queue, "--paused")
    assert f"schedule {name}: @hourly (UTC) -> {queue}, paused" in text
    assert cli.ok("cron", "rm", name).strip() == f"deleted schedule {name}"
    r = cli.run("cron", "rm", name)
    assert r.returncode == 1 and b"no schedule" in r.stderr
    assert name not in cli.ok("cron", "list")


def test_cron_add_refusals_name_the_field(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue)
    r = cli.run("cron", "add", "s", "* 25 * * *", queue, "x")
    assert r.returncode == 1 and b"field 2 (hour)" in r.stderr
    r = cli.run("cron", "add", "s", "@daily", queue, "x", "--tz", "Mars/Base")
    assert r.returncode == 1 and b"timezone" in r.stderr
    r = cli.run("cron", "add", "s", "@daily", "no-such-queue", "x")
    assert r.returncode == 1 and b"no-such-queue" in r.stderr
    r = cli.run("cron", "add", "s", "@daily", queue, "x", "--prop", "novalue")
    assert r.returncode == 2 and b"'novalue' is not K=V" in r.stderr
    assert cli.run("cron").returncode == 2
