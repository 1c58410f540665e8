"""``mqlite push set|list|rm|pause|resume`` (docs/push.md), embedded and against a real
broker. The target is a public address that is never reached: the queue stays empty."""

from __future__ import annotations

from cli_support import Cli

URL = "https://203.0.114.1/hooks/orders"


def test_push_set_list_pause_resume_rm(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue)
    text = cli.ok("push", "set", queue, URL, "--max-in-flight", "3", "--timeout", "2s", "--paused")
    assert f"push {queue} -> {URL} (max_in_flight 3, timeout 2 s, paused)" in text
    secret = text.split("secret (shown this once, keep it): ")[1].strip()
    assert secret.startswith("whsec_")
    listed = {p["queue"]: p for p in cli.json("push", "list")["pushes"]}
    assert listed[queue]["secret"] == "" and listed[queue]["max_in_flight"] == 3
    assert listed[queue]["timeout_ms"] == 2_000 and listed[queue]["status"] == "paused"
    table = cli.ok("push", "list")
    assert "DELIVERED" in table and queue in table and secret not in table
    r = cli.run("receive", queue)
    assert r.returncode == 1 and b"push target" in r.stderr
    assert cli.ok("push", "resume", queue).strip() == f"push {queue}: active"
    again = cli.ok("push", "pause", queue)
    assert again.strip() == f"push {queue}: paused" and "secret" not in again
    assert cli.ok("push", "rm", queue).strip() == f"deleted the push target of {queue}"
    r = cli.run("push", "rm", queue)
    assert r.returncode == 1 and b"no push target" in r.stderr


def test_push_set_refusals_name_the_field(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue)
    r = cli.run("push", "set", queue, URL, "--max-in-flight", "0")
    assert r.returncode == 1 and b"max_in_flight" in r.stderr
    r = cli.run("push", "set", queue, "http://127.0.0.1:9/h")
    assert r.returncode == 1 and b"egress guard" in r.stderr
    r = cli.run("push", "set", queue, "https://u:p@example.com/h")
    assert r.returncode == 1 and b"credentials" in r.stderr
    r = cli.run("push", "set", queue, URL, "--timeout", "5")
    assert r.returncode == 2 and b"duration" in r.stderr
    assert cli.run("push").returncode == 2
