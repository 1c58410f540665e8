"""The first hour, second pass (issue 31): the traps a new user still fell into, read from
a real ``mqlite`` subprocess's stdout, stderr and exit code (embedded and client modes)."""

from __future__ import annotations

from cli_support import Cli


# -- create-queue --if-absent (item 1) ---------------------------------------------------


def test_create_queue_if_absent_never_resets_a_configured_queue(cli: Cli, queue: str) -> None:
    cli.ok("create-queue", queue, "--ordering", "strict_fifo", "--dedup", "10m")
    out = cli.ok("create-queue", queue, "--if-absent")
    assert out == (
        f"queue {queue} exists; left as it is (it differs in dedup_window_ms, ordering_mode; "
        "create-queue without --if-absent reconfigures it)\n"
    )
    with cli.sdk() as c:
        cfg = c.get_queue(queue).config
    assert (cfg.ordering_mode, cfg.dedup_window_ms) == ("strict_fifo", 600_000)
    same = cli.ok(
        "create-queue", queue, "--if-absent", "--ordering", "strict_fifo", "--dedup", "10m"
    )
    assert same == f"queue {queue} exists with this config; left as it is\n"


def test_create_queue_if_absent_creates_a_new_queue(cli: Cli, queue: str) -> None:
    out = cli.ok("create-queue", queue, "--if-absent", "--max-delivery", "3")
    assert out.startswith(f"queue {queue} created: lock=30s max-delivery=3 ")
    answer = cli.json("create-queue", queue, "--if-absent")
    assert answer["created"] is False and answer["differs"] == ["max_delivery_count"]
    assert answer["queue"]["max_delivery_count"] == 3


def test_create_queue_if_absent_strict_fails_on_a_difference(cli: Cli, queue: str) -> None:
    cli.ok("create-queue", queue, "--dedup", "1m")
    r = cli.run("create-queue", queue, "--if-absent", "--strict")
    assert r.returncode == 1, r
    assert b"dedup_window_ms" in r.stderr and b"left as it is" in r.stderr
    r = cli.run("create-queue", queue, "--strict")
    assert r.returncode == 2 and b"--strict goes with --if-absent" in r.stderr
