"""Every command's happy path and exit codes, in embedded AND client mode.

Setup and cross-checks go through the SDK in-process where the CLI is not the subject,
so each test spends its subprocesses on the commands it is about.
"""

from __future__ import annotations

import base64
import os
import pty
import select
from pathlib import Path

from cli_support import Cli

import mqlite
from mqlite.engine import SCHEMA_VERSION


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_queue_lifecycle_and_listing(cli: Cli, queue: str) -> None:
    created = cli.json(
        "create-queue", queue, "--lock", "45s", "--max-delivery", "3", "--dedup", "10m"
    )
    assert (created["name"], created["lock_duration_ms"]) == (queue, 45_000)
    assert (created["max_delivery_count"], created["dedup_window_ms"]) == (3, 600_000)
    listed = [q for q in cli.json("list")["queues"] if q["name"] == queue]
    assert listed and listed[0]["generation"] == created["generation"]
    table = cli.ok("list").splitlines()
    assert table[0].split()[:2] == ["NAME", "KIND"] and any(queue in ln for ln in table)
    r = cli.run("delete-queue", queue, "--generation", "0" * 32)  # a stale generation
    assert r.returncode == 1 and r.stderr.startswith(b"error: ")
    deleted = cli.json("delete-queue", queue, "--generation", created["generation"])
    assert deleted == {"deleted": True}
    with cli.sdk() as c:
        assert queue not in [q.name for q in c.list_queues()]


def test_send_and_json_peek_receive_metrics(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue)
    sent = cli.json("send", queue, "hello", "--message-id", "m1", "--group", "g1")
    assert len(sent["seq_numbers"]) == 1
    cli.ok("send", queue, "-", input=b"from stdin")
    stats = cli.stats(queue)
    assert (stats["queue"], stats["active"], stats["total"]) == (queue, 2, 2)
    peeked = cli.json("peek", queue)
    assert [m["body"] for m in peeked] == [b64(b"hello"), b64(b"from stdin")]
    assert peeked[0]["message_id"] == "m1" and peeked[0]["state"] == "active"
    assert "lock_token" not in peeked[0]
    got = cli.json("receive", queue, "--max", "5")
    assert [m["body"] for m in got] == [b64(b"hello"), b64(b"from stdin")]
    assert all("lock_token" not in m for m in got)  # auto-acked: nothing left to settle
    assert got[0]["delivery_count"] == 1 and got[0]["group_id"] == "g1"
    with cli.sdk() as c:
        assert c.stats(queue).total == 0


def test_text_output_peek_table_metrics_line_receive(cli: Cli, queue: str) -> None:
    with cli.sdk() as c:
        c.create_queue(queue)
        c.send_one(queue, mqlite.OutMessage(body=b"plain body", subject="s1"))
    assert f"queue={queue} active=1 locked=0" in cli.ok("metrics", queue)
    table = cli.ok("peek", queue).splitlines()
    assert table[0].split()[:3] == ["SEQ", "STATE", "DELIVERIES"] and "plain body" in table[1]
    head, body = cli.ok("receive", queue, "--wait", "1s").split("\n", 1)
    assert head.startswith("seq=") and "subject=s1" in head and "lock-token" not in head
    assert body == "plain body\n"


def test_receive_and_delete(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue, b"x")
    assert [m["body"] for m in cli.json("receive", queue, "--delete")] == [b64(b"x")]
    assert cli.json("receive", queue, "--delete") == []
    r = cli.run("receive", queue, "--delete", "--no-ack")
    assert r.returncode == 2


def test_body_from_file_both_and_stdin_cap(cli: Cli, queue: str, tmp_path: Path) -> None:
    cli.setup_queue(queue)
    f = tmp_path / "body.bin"
    f.write_bytes(b"\x00\x01binary")
    cli.ok("send", queue, "--file", str(f))
    assert cli.run("send", queue, "arg", "--file", str(f)).returncode == 2
    assert cli.run("send", queue).returncode == 2
    r = cli.run("send", queue, "-", input=b"x" * ((16 << 20) + 1))
    assert r.returncode == 1 and b"16 MiB" in r.stderr
    with cli.sdk() as c:
        assert [m.body for m in c.peek(queue)] == [b"\x00\x01binary"]


def test_schedule_and_cancel(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue)
    seq = cli.json("schedule", queue, "later", "--at", "1h")["seq_numbers"][0]
    assert cli.run("schedule", queue, "x", "--at", "2001-01-01T00:00:00Z").returncode == 2
    cli.ok("schedule", queue, "x", "--at", "2999-01-02T15:04:05Z")
    with cli.sdk() as c:
        assert c.stats(queue).scheduled == 2
    assert cli.json("cancel", queue, str(seq)) == {"ok": True}
    assert cli.run("cancel", queue, str(seq)).returncode == 1  # gone: not found
    assert cli.run("cancel", queue, "0").returncode == 2  # seqs are positive
    with cli.sdk() as c:
        assert c.stats(queue).scheduled == 1


def test_no_ack_then_settle_commands(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue, b"one")
    got = cli.json("receive", queue, "--no-ack")
    seq, token = str(got[0]["seq_number"]), got[0]["lock_token"]
    assert token and got[0]["locked_until_ms"] > 0
    again = cli.ok("receive", queue, "--no-ack")
    if cli.mode == "embedded":
        # each invocation reopens the DB and reclaims the orphaned lock: redelivered
        assert again.startswith(f"seq={seq} delivery=2") and "lock-token=" in again
        return
    assert again == ""  # the broker still holds the lock
    cli.ok("defer", queue, seq, token)
    deferred = cli.json("receive-deferred", queue, "--seq", seq)
    token2 = deferred[0]["lock_token"]
    assert token2 and token2 != token
    out = cli.ok("renew", queue, seq, token2)
    assert out.startswith("renewed") and "locked-until=" in out
    cli.ok("abandon", queue, seq, token2, "--delay", "0s")
    token3 = cli.json("receive", queue, "--no-ack")[0]["lock_token"]
    r = cli.run("complete", queue, seq, "wrong-token")
    assert r.returncode == 1 and b"lock" in r.stderr
    cli.ok("reject", queue, seq, token3, "--reason", "bad", "--detail", "d")
    with cli.sdk() as c:
        (dead,) = c.peek(queue, state="dead_lettered")
    assert (dead.dead_letter_reason, dead.dead_letter_description) == ("bad", "d")


def _dead_letter(cli: Cli, queue: str, n: int) -> None:
    with cli.sdk() as c:
        c.create_queue(queue, mqlite.QueueConfig(max_delivery_count=1))
        for i in range(n):
            c.send_one(queue, mqlite.OutMessage(body=f"m{i}".encode()))
        for m in c.receive(queue, max_messages=n):
            m.reject("r")
        assert c.stats(queue).dead_lettered == n


def test_redrive(cli: Cli, queue: str) -> None:
    other = queue + "-replay"
    _dead_letter(cli, queue, 3)
    cli.setup_queue(other)
    assert cli.json("redrive", queue, "--max", "1") == {"moved": 1}
    assert (
        cli.ok("redrive", queue, "--to", other) == f"redrove 2 message(s) from {queue} to {other}\n"
    )
    assert cli.run("redrive", queue, "--older-than", "-1s").returncode == 2
    with cli.sdk() as c:
        assert (c.stats(queue).active, c.stats(queue).dead_lettered) == (1, 0)
        assert c.stats(other).active == 2


def test_purge_dlq_bounds(cli: Cli, queue: str) -> None:
    _dead_letter(cli, queue, 3)
    for bad in (
        (),  # unbounded needs --all
        ("--max", "0"),
        ("--max", "-1"),
        ("--older-than", "0.1ms"),  # below 1 ms would round to "no bound"
        ("--all", "--max", "0"),
        ("--all", "--older-than", "1h"),
        ("stray", "--all"),
    ):
        r = cli.run("purge-dlq", queue, *bad)
        assert r.returncode == 2, (bad, r.stderr)
    assert cli.json("purge-dlq", queue, "--older-than", "1h") == {"purged": 0}
    assert cli.json("purge-dlq", queue, "--max", "2") == {"purged": 2}
    assert cli.ok("purge-dlq", queue, "--all") == f"purged 1 dead letter(s) from {queue}\n"
    with cli.sdk() as c:
        assert c.stats(queue).total == 0


def test_topics_subscriptions_and_filters(cli: Cli, queue: str) -> None:
    topic, sub = queue + "-t", queue + "-eu"
    cli.ok("subscribe", topic, sub, "--expr", 'properties["region"] == "eu"')
    cli.ok("create-subscription", topic, sub + "-all")
    subs = cli.json("list-subscriptions")["subscriptions"]
    mine = {s["name"]: s.get("expr", "") for s in subs if s["topic"] == topic}
    assert mine == {sub: 'properties["region"] == "eu"', sub + "-all": ""}
    cli.ok("unsubscribe", topic, sub + "-all")
    text = cli.ok("list-subscriptions")
    assert sub in text and sub + "-all" not in text


def test_test_filter(cli: Cli) -> None:
    ok = cli.json("test-filter", 'subject == "a"', "--subject", "a")
    assert ok == {"valid": True, "ran": True, "matched": True}
    assert cli.ok("test-filter", "subject == 'x'") == "valid\n"
    miss = cli.ok("test-filter", 'properties["region"] == "eu"', "--prop", "region=us")
    assert "NOT match" in miss
    r = cli.run("test-filter", "subject ==")
    assert r.returncode == 1 and r.stderr.startswith(b"error: invalid filter")


def test_status(cli: Cli) -> None:
    snap = cli.json("status")
    assert snap["schema_version"] == SCHEMA_VERSION and snap["version"] and "queues" in snap
    text = cli.ok("status")
    assert ("client of" in text) == (
        cli.mode == "client"
    ) and f"schema_version: {SCHEMA_VERSION}" in text


def test_keys_create_list_revoke(cli: Cli) -> None:
    created = cli.json("key", "create", "--name", "producer", "--permissions", "send,listen")
    key = created["key"]
    assert created["token"].startswith("mqk_") and len(key["id"]) == 32
    assert sorted(key["permissions"]) == ["listen", "send"]
    cli.ok("key", "revoke", "--id", key["id"])
    cli.ok("key", "revoke", "--id", key["id"])  # idempotent
    listed = {k["id"]: k for k in cli.json("key", "list", "--limit", "1000")["keys"]}
    assert listed[key["id"]]["revoked_at_ms"] > 0 and "token" not in listed[key["id"]]
    assert created["token"] not in cli.ok("key", "list", "--sort", "created_desc")
    r = cli.run("key", "create", "--name", "x", "--permissions", "send", "--id", key["id"])
    assert r.returncode == 1 and key["id"].encode() in r.stderr  # the id to reconcile
    assert cli.run("key", "create", "--name", "x").returncode == 2
    assert cli.run("key").returncode == 2


def test_key_create_with_queue_scopes(cli: Cli) -> None:
    """``--queue PATTERN`` (repeatable) confines the key (issue 35); shown by text and JSON."""
    args = ("key", "create", "--name", "scoped", "--permissions", "send")
    created = cli.json(*args, "--queue", "orders", "--queue", "team-a/*")
    assert created["key"]["queues"] == ["orders", "team-a/*"]
    text = cli.ok(*args, "--queue", "billing.*")
    assert "queues:      billing.*" in text
    assert "(every queue)" in cli.ok("key", "create", "--name", "all", "--permissions", "send")
    r = cli.run(*args, "--queue", "a*b")
    assert r.returncode == 1 and b"trailing '*'" in r.stderr
    limited = cli.json(*args, "--rate-limit", "5", "--burst", "10")["key"]
    assert (limited["rate_limit_per_s"], limited["burst"]) == (5, 10)
    assert "rate limit:  5/s, burst 10" in cli.ok(*args, "--rate-limit", "5", "--burst", "10")


def test_runtime_errors_exit_1_with_one_line(cli: Cli) -> None:
    for args in (("send", "no-such-queue", "x"), ("metrics", "no-such-queue")):
        r = cli.run(*args)
        assert r.returncode == 1, (args, r.stderr)
        lines = r.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, lines)
        assert r.stdout == b""


def test_progress_bar_only_on_a_terminal(embedded_cli: Cli, queue: str) -> None:
    _dead_letter(embedded_cli, queue, 3)
    r = embedded_cli.run("redrive", queue, "--max", "1")
    assert r.returncode == 0 and r.stderr == b""  # stderr is a pipe: no bar
    master, slave = pty.openpty()
    try:
        r = embedded_cli.run("purge-dlq", queue, "--all", stderr=slave)
        os.close(slave)
        drawn = b""
        while select.select([master], [], [], 0.5)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(master)
    assert r.returncode == 0
    assert b"purge [" in drawn and b"2/2" in drawn


def test_create_queue_retry_flags_set_the_policy(cli: Cli, queue: str) -> None:
    created = cli.json(
        "create-queue", queue, "--retry-initial", "1s", "--retry-max", "5m",
        "--retry-multiplier", "3", "--retry-jitter", "0.2",
    )  # fmt: skip
    assert (created["retry_initial_delay_ms"], created["retry_max_delay_ms"]) == (1_000, 300_000)
    assert (created["retry_multiplier"], created["retry_jitter"]) == (3.0, 0.2)
    text = cli.ok("create-queue", queue, "--retry-initial", "2s")
    assert "retry=2sx2..15m jitter=0" in text
    r = cli.run("create-queue", queue, "--retry-initial", "1s", "--retry-jitter", "2")
    assert r.returncode == 1 and b"retry_jitter" in r.stderr
    assert "retry" not in cli.ok("create-queue", queue)  # no flag: no policy


def test_abandon_error_is_the_peeked_last_error(client_cli: Cli, queue: str) -> None:
    cli = client_cli
    cli.setup_queue(queue, b"one")
    got = cli.json("receive", queue, "--no-ack")
    seq, token = str(got[0]["seq_number"]), got[0]["lock_token"]
    cli.ok("abandon", queue, seq, token, "--error", "TimeoutError: upstream\nafter 30s")
    (peeked,) = cli.json("peek", queue)
    assert peeked["last_error"] == "TimeoutError: upstream\nafter 30s"
    assert peeked["last_error_at_ms"] > 0
    assert "last error: TimeoutError: upstream after 30s" in cli.ok("peek", queue)
    r = cli.run("abandon", queue, seq, token, "--error", "x" * 5000)
    assert r.returncode == 1 and b"4096 bytes" in r.stderr
