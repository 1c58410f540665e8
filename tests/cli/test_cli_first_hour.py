"""What a new user meets in their first hour with ``mqlite``, read from a real subprocess's
stdout and stderr (issue 9, "CLI"): every mistake gets a message that says what to do."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
from pathlib import Path

import pytest
from cli_support import RUN_TIMEOUT_S, Cli, base_env, free_port, mqlite_cmd

import mqlite
from mqlite.cli.output import when_text
from mqlite.clock import SYSTEM_CLOCK


def run(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        mqlite_cmd(*args), env=env, cwd=cwd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )


def on_a_terminal(cli: Cli, *args: str) -> tuple[int, bytes]:
    """Run with stdout on a pseudo-terminal; returns (exit code, what the terminal got)."""
    master, slave = pty.openpty()
    try:
        r = cli.run(*args, stdout=slave)
        os.close(slave)
        seen = b""
        while select.select([master], [], [], 0.5)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    return r.returncode, seen


# -- which database, which broker --------------------------------------------------------


def test_the_default_database_file_is_announced_on_stderr(tmp_path: Path) -> None:
    # A writing command: a read-only one refuses a missing file (test_cli_first_hour_two).
    r = run("create-queue", "probe", env=base_env(), cwd=tmp_path)
    assert (r.returncode, r.stdout.split(":")[0]) == (0, "queue probe ready")
    (note,) = r.stderr.splitlines()
    assert note.startswith(f"note: using the local database file {tmp_path}/mq.db ")
    assert "MQLITE_ENDPOINT=http://127.0.0.1:6754" in note and "--endpoint" in note
    assert "MQLITE_DB=file:PATH" in note
    # Chosen on purpose: nothing to announce.
    quiet = run(
        "create-queue", "probe", env=base_env(MQLITE_DB=f"file:{tmp_path}/other.db"), cwd=tmp_path
    )
    assert (quiet.returncode, quiet.stderr) == (0, "")


def test_a_connection_error_names_the_url_and_suggests_serve(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    r = run("list", "--endpoint", url, env=base_env(), cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == (
        f"error: cannot connect to the broker at {url} (Connection refused): is one running "
        "there? Start one with `mqlite serve`, or check MQLITE_ENDPOINT / --endpoint "
        "(unavailable)\n"
    )
    assert not (tmp_path / "mq.db").exists()


# -- usage mistakes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (("recieve", "q"), "invalid choice: 'recieve'; did you mean receive?"),
        (("purge", "q"), "did you mean purge-dlq?"),
        (("key", "craete"), "did you mean create?"),
        (("create-queue", "q", "--ordering", "strict"), "did you mean strict_fifo?"),
        (("peek", "q", "--state", "sheduled"), "did you mean scheduled?"),
        (("xyzzy",), "invalid choice: 'xyzzy' (`mqlite help` lists them)"),
    ],
)
def test_a_typo_suggests_the_nearest_name(
    embedded_cli: Cli, args: tuple[str, ...], hint: str
) -> None:
    r = embedded_cli.run(*args)
    assert r.returncode == 2 and r.stdout == b""
    assert hint in r.stderr.decode()


WHAT = "a duration is a number with a unit (ms s m h d w), parts summed: 500ms, 30s, 1h30m"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("-1s", "'-1s' is negative; "),
        ("5", "'5' has no unit (did you mean 5s?); "),
        ("soon", "'soon' is not a duration; "),
    ],
)
def test_a_bad_duration_says_what_a_duration_is(embedded_cli: Cli, value: str, why: str) -> None:
    r = embedded_cli.run("receive", "q", "--wait", value)
    assert r.returncode == 2
    assert f"mqlite receive: error: argument --wait: {why}{WHAT}" in r.stderr.decode()


@pytest.mark.parametrize(
    ("args", "usage", "message"),
    [
        (
            ("list", "extra"),
            "usage: mqlite list ",
            "mqlite list: error: unrecognized arguments: extra",
        ),
        (
            ("key", "list", "extra"),
            "usage: mqlite key list ",
            "mqlite key list: error: unrecognized arguments: extra",
        ),
        (
            ("receive", "q", "--no-ack", "--delete"),
            "usage: mqlite receive ",
            "error: --no-ack and --delete are mutually exclusive",
        ),
    ],
)
def test_a_stray_argument_shows_that_commands_usage(
    embedded_cli: Cli, args: tuple[str, ...], usage: str, message: str
) -> None:
    r = embedded_cli.run(*args)
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.startswith(usage), err
    assert err.splitlines()[-1] == message


def test_filter_errors_say_filter_once(embedded_cli: Cli) -> None:
    r = embedded_cli.run("test-filter", "subject ==")
    assert (r.returncode, r.stderr) == (1, b"error: invalid filter: unexpected token EOF (1:11)\n")
    r = embedded_cli.run("subscribe", "t", "s", "--expr", "subject ==")
    assert r.stderr == b"error: filter: unexpected token EOF (1:11) (invalid_argument)\n"


# -- what the commands show --------------------------------------------------------------


def test_an_empty_receive_on_a_terminal_says_no_messages(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue)
    assert on_a_terminal(cli, "receive", queue) == (0, b"no messages\r\n")
    assert on_a_terminal(cli, "receive", queue, "--wait", "300ms") == (
        0,
        b"no messages (waited 300ms)\r\n",
    )
    piped = cli.run("receive", queue)  # a script reading stdout gets nothing at all
    assert (piped.returncode, piped.stdout) == (0, b"")


def test_vacuum_figures_agree_with_each_other(embedded_cli: Cli, queue: str) -> None:
    embedded_cli.setup_queue(queue, *(b"x" * 4000 for _ in range(200)))
    with embedded_cli.sdk() as c:
        while batch := c.receive(queue, max_messages=256):
            c.complete_batch(queue, [(m.seq_number, m.lock_token) for m in batch])
    page_size = int.from_bytes(embedded_cli.db_path.read_bytes()[16:18], "big")
    first = embedded_cli.json("vacuum")
    assert first["reclaimed_pages"] > 0
    assert first["freed_bytes"] == first["reclaimed_pages"] * page_size
    assert first["before_bytes"] - first["after_bytes"] == first["freed_bytes"]
    assert embedded_cli.json("vacuum") == {
        "mode": "incremental",
        "before_bytes": first["after_bytes"],
        "after_bytes": first["after_bytes"],
        "freed_bytes": 0,
        "grown_bytes": 0,
        "reclaimed_pages": 0,
    }
    text = embedded_cli.ok("vacuum")
    assert re.fullmatch(
        r"incremental vacuum: 0 free page\(s\) reclaimed; on disk ([\d.]+ \w+) -> \1 "
        r"\(freed 0 B\)\n",
        text,
    ), text


def test_status_humanizes_size_and_uptime(cli: Cli) -> None:
    text = cli.ok("status")
    size = re.search(r"^db_size: +(\S+ \S+) \((\d+) bytes\)$", text, re.M)
    assert size and size.group(1).endswith(("B", "KiB", "MiB")), text
    if cli.mode == "client":
        assert re.search(r"^uptime: +(\d+[dhms])+$", text, re.M), text


def test_peek_shows_when_parked_messages_become_visible(cli: Cli, queue: str) -> None:
    at_ms = SYSTEM_CLOCK.now_ms() + 3_600_000
    with cli.sdk() as c:
        c.create_queue(queue)
        (scheduled,) = c.schedule(queue, [mqlite.OutMessage(body=b"later")], at_ms)
        c.send_one(queue, mqlite.OutMessage(body=b"aside"))
        (m,) = c.receive(queue)
        m.defer()
    rows = {line.split()[0]: line for line in cli.ok("peek", queue).splitlines()}
    assert rows["SEQ"].split()[:5] == ["SEQ", "STATE", "DELIVERIES", "ENQUEUED", "VISIBLE-AT"]
    assert when_text(at_ms) in rows[str(scheduled)] and "scheduled" in rows[str(scheduled)]
    assert "by seq only" in rows[str(m.seq_number)] and "deferred" in rows[str(m.seq_number)]


def test_list_shows_ordering_and_topic(cli: Cli, queue: str) -> None:
    topic, sub = queue + "-events", queue + "-eu"
    with cli.sdk() as c:
        c.create_queue(queue, mqlite.QueueConfig(ordering_mode="group_fifo"))
        c.subscribe(topic, sub)
    rows = {line.split()[0]: line.split() for line in cli.ok("list").splitlines()}
    assert rows["NAME"][:4] == ["NAME", "KIND", "TOPIC", "ORDERING"]
    assert rows[queue][:4] == [queue, "queue", "-", "group_fifo"]
    assert rows[sub][:4] == [sub, "subscription", topic, "standard"]
