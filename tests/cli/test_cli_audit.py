"""``mqlite audit`` (docs/operations.md "Audit trail"), in embedded AND client mode: the
changes made by other commands, with the actor each mode records, narrowed by --queue and
--since, paged with --limit / --after-id."""

from __future__ import annotations

from cli_support import Cli


def test_audit_shows_who_changed_a_queue(cli: Cli, queue: str) -> None:
    cli.ok("create-queue", queue, "--max-delivery", "3")
    cli.ok("create-queue", queue, "--max-delivery", "4")
    rows = cli.json("audit", "--queue", queue)["entries"]
    actor = "admin:1" if cli.mode == "client" else "embedded"
    assert [(e["action"], e["queue"], e["actor"]) for e in rows] == [
        ("CreateQueue", queue, actor),
        ("CreateQueue", queue, actor),
    ]
    assert '"max_delivery_count":[3,4]' in rows[1]["detail"]
    if cli.mode == "client":  # a request id ties the row to the HTTP request
        assert all(len(e["request_id"]) == 16 for e in rows)
    else:
        assert all(e["request_id"] == "" for e in rows)
    assert [e["id"] for e in cli.json("audit", "--queue", queue, "--since", "1h")["entries"]] == [
        e["id"] for e in rows
    ]

    text = cli.ok("audit", "--queue", queue, "--limit", "1")
    header, first, hint = text.splitlines()
    assert header.split()[:4] == ["ID", "AT", "ACTOR", "ACTION"]
    assert first.split()[2:5] == [actor, "CreateQueue", queue]
    assert hint == f"next page: mqlite audit --after-id {rows[0]['id']} --limit 1 --queue {queue}"
    rest = cli.json("audit", "--queue", queue, "--after-id", str(rows[0]["id"]))["entries"]
    assert [e["id"] for e in rest] == [rows[1]["id"]]
    assert cli.ok("audit", "--queue", queue + "-none").strip() == "no audit entries"
    r = cli.run("audit", "--since", "5")  # a duration needs a unit
    assert r.returncode == 2 and b"unit" in r.stderr
