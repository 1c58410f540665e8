"""``mqlite observe`` (cli "observe"), embedded and against a broker: the JSON is the
Observe answer, the text form shows every section and never turns unknown into zero."""

from __future__ import annotations

from cli_support import Cli


def test_observe_json_and_text(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue, b"one", b"two")
    o = cli.json("observe")
    assert o["collection"]["state"] == "available"
    (mine,) = [q for q in o["queues"] if q["queue"] == queue]
    assert (mine["active"], mine["total"], mine["unexpected"]) == (2, 2, 0)
    assert mine["oldest_message_age_ms"] >= 0 and o["backend"] in ("local", "remote")
    effects = {(m["queue"], m["event"]): m["count"] for m in o["messages"]}
    # Counters belong to the engine's process: an embedded CLI run starts from zero, and
    # every event of a known queue is listed, zeros included (the original's contract).
    assert effects[queue, "enqueued"] == (2 if cli.mode == "client" else 0)
    assert effects[queue, "purged"] == 0
    assert [t["task"] for t in o["maintenance"]] == [
        "locks", "scheduled", "ttl", "dedup", "receipts", "retention", "reclaim",
    ]  # fmt: skip
    if cli.mode == "client":
        assert o["access"] == "manage" and o["http"]["state"] == "available"
    else:
        assert o["access"] == "embedded" and o["http"]["state"] == "not_applicable"
    text = cli.ok("observe")
    assert "collection:    available" in text
    assert any(line.split()[:3] == [queue, "queue", "2"] for line in text.splitlines())
    assert "TOTAL" in text.split()  # the queue table's column, the wire's name
    for section in ("message effects:", "storage operations:", "TASK", "filter failures:"):
        assert section in text
    assert ("authentication:" in text) == (cli.mode == "client")


def test_observe_text_shows_no_age_for_a_queue_with_only_scheduled_messages(
    cli: Cli, queue: str
) -> None:
    """A queue whose only message is scheduled has no oldest active message: the OLDEST
    column says ``-``, never ``0.0s`` (issue 31: "Oldest 0 ms")."""
    cli.setup_queue(queue)
    cli.ok("schedule", queue, "later", "--at", "1h")
    rows = [line.split() for line in cli.ok("observe").splitlines()]
    (row,) = [r for r in rows if r[:2] == [queue, "queue"]]  # the queue table's row
    assert row[5] == "1"  # SCHEDULED
    assert row[-1] == "-", row
