"""The first hour, second pass (issue 31): the traps a new user still fell into, read from
a real ``mqlite`` subprocess's stdout, stderr and exit code (embedded and client modes)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import RUN_TIMEOUT_S, Cli, base_env, free_port, mqlite_cmd

import mqlite
from mqlite.clock import SYSTEM_CLOCK

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


# -- a database nobody may write (item 2) ------------------------------------------------


def unprivileged(cmd: list[str]) -> list[str]:
    """``cmd`` without the power to ignore file permissions: as root (CI containers) the
    DAC-override capabilities are dropped from the bounding set, so a 0555 directory
    refuses writes exactly as it does for a normal user."""
    if os.geteuid() != 0:
        return cmd
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", *cmd]


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    yield d
    d.chmod(0o755)


def test_a_read_only_directory_is_one_line_naming_path_operation_and_fix(
    read_only_dir: Path,
) -> None:
    db = read_only_dir / "mq.db"
    r = subprocess.run(
        unprivileged(mqlite_cmd("create-queue", "q")),
        env=base_env(MQLITE_DB=f"file:{db}"),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (
        f"error: cannot create files beside the database {db}: permission denied; make "
        f"{read_only_dir} writable by this process (uid {os.getuid()}) or set "
        "MQLITE_DB=file:PATH to a writable directory\n"
    )


def test_serve_refuses_a_read_only_directory_in_one_json_line(read_only_dir: Path) -> None:
    db = read_only_dir / "mq.db"
    r = subprocess.run(
        unprivileged(mqlite_cmd("serve", "--addr", f"127.0.0.1:{free_port()}")),
        env=base_env(MQLITE_DB=f"file:{db}"),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.splitlines()
    record = json.loads(line)
    assert record["level"] == "ERROR"
    assert record["msg"].startswith(f"cannot create files beside the database {db}: ")
    assert "MQLITE_DB=file:PATH" in record["msg"] and str(read_only_dir) in record["msg"]


def test_embedded_raises_a_typed_error_for_a_read_only_directory(read_only_dir: Path) -> None:
    code = (
        "import mqlite\n"
        "try:\n"
        f"    mqlite.open_embedded('file:{read_only_dir}/mq.db')\n"
        "except mqlite.errors.DatabaseNotWritable as e:\n"
        "    print('typed:', e)\n"
    )
    r = subprocess.run(
        unprivileged([sys.executable, "-c", code]),
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert r.stdout.startswith(
        f"typed: cannot create files beside the database {read_only_dir}/mq.db"
    ), r


def test_an_existing_database_in_a_directory_turned_read_only_names_it(tmp_path: Path) -> None:
    """SQLite creates its WAL beside the file: this failed as a bare storage error."""
    d = tmp_path / "data"
    d.mkdir()
    db = d / "mq.db"
    mqlite.open_embedded(f"file:{db}", background=False).close()
    d.chmod(0o555)
    try:
        r = subprocess.run(
            unprivileged(mqlite_cmd("create-queue", "q")),
            env=base_env(MQLITE_DB=f"file:{db}"),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
    finally:
        d.chmod(0o755)
    assert r.returncode == 1
    assert r.stderr.startswith(f"error: cannot create files beside the database {db}: "), r


def test_a_read_only_database_file_names_the_file_and_its_directory(tmp_path: Path) -> None:
    db = tmp_path / "mq.db"
    mqlite.open_embedded(f"file:{db}", background=False).close()
    db.chmod(0o444)
    r = subprocess.run(
        unprivileged(mqlite_cmd("create-queue", "q")),
        env=base_env(MQLITE_DB=f"file:{db}"),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert r.returncode == 1
    assert r.stderr.startswith(
        f"error: cannot open the database {db}: permission denied; make {db} and {tmp_path} "
        "writable"
    ), r.stderr


# -- a read-only command never creates a database (item 3) -------------------------------


@pytest.mark.parametrize(
    "args",
    [("observe",), ("peek", "q"), ("list",), ("metrics", "q"), ("status",), ("key", "list")],
    ids=" ".join,
)
def test_a_read_only_command_never_creates_a_database(
    args: tuple[str, ...], tmp_path: Path
) -> None:
    db = tmp_path / "mq.db"
    r = subprocess.run(
        mqlite_cmd(*args),
        env=base_env(MQLITE_DB=f"file:{db}"),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (
        f"error: no database at {db} ({args[0]} reads an existing database and never creates "
        "one); to reach a running broker pass --endpoint http://127.0.0.1:6754 or set "
        "MQLITE_ENDPOINT, with MQLITE_TOKEN set to its token; to read another file set "
        "MQLITE_DB=file:PATH\n"
    )
    assert list(tmp_path.iterdir()) == []  # no mq.db, no lock file


def test_observe_after_make_run_names_the_broker_not_a_new_file(tmp_path: Path) -> None:
    """The first-hour trap: ``mqlite observe`` in the clone with no MQLITE_* set."""
    r = subprocess.run(
        mqlite_cmd("observe"),
        env=base_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert r.returncode == 1
    assert f"error: no database at {tmp_path}/mq.db " in r.stderr
    assert "--endpoint" in r.stderr and "MQLITE_TOKEN" in r.stderr
    assert not (tmp_path / "mq.db").exists()


def test_an_endpoint_without_a_token_names_mqlite_token(client_cli: Cli) -> None:
    env = {k: v for k, v in client_cli.env.items() if k != "MQLITE_TOKEN"}
    r = subprocess.run(
        mqlite_cmd("list", "--endpoint", client_cli.endpoint),
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert r.returncode == 1
    assert r.stderr.startswith("error: missing or invalid Bearer token")
    assert f"no token was sent to {client_cli.endpoint}: set MQLITE_TOKEN" in r.stderr
    wrong = subprocess.run(
        mqlite_cmd("list", "--endpoint", client_cli.endpoint, "--token", "mqk_wrong"),
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert wrong.returncode == 1 and "no token was sent" not in wrong.stderr  # one was sent


# -- a failed start leaves nothing behind (item 10) --------------------------------------


def test_a_serve_that_cannot_bind_leaves_no_database_or_lock_file(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run(
            mqlite_cmd("serve", "--addr", f"127.0.0.1:{port}"),
            env=base_env(MQLITE_DB=f"file:{tmp_path}/mq.db"),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert str(port) in json.loads(r.stderr.splitlines()[-1])["msg"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# -- send sets what filters read; peek shows it (items 7, 10) ---------------------------


def test_send_sets_properties_content_type_correlation_subject_and_ttl(
    cli: Cli, queue: str
) -> None:
    cli.setup_queue(queue)
    cli.ok(
        "send", queue, "hi", "--prop", "region=eu", "--prop", "tier=gold", "--prop", "x=a=b",
        "--content-type", "application/json", "--correlation-id", "req-1",
        "--subject", "orders.created", "--ttl", "1h",
    )  # fmt: skip
    with cli.sdk() as c:
        (m,) = c.peek(queue)
    assert m.properties == {"region": "eu", "tier": "gold", "x": "a=b"}
    assert (m.content_type, m.correlation_id, m.subject) == (
        "application/json",
        "req-1",
        "orders.created",
    )
    assert m.expires_at_ms - m.enqueued_at_ms == 3_600_000
    r = cli.run("send", queue, "x", "--prop", "novalue")
    assert r.returncode == 2 and b"'novalue' is not K=V" in r.stderr


def test_a_publish_that_matched_no_subscription_says_so(cli: Cli, queue: str) -> None:
    topic = queue + "-events"
    cli.ok("subscribe", topic, queue + "-eu", "--expr", 'properties["region"] == "eu"')
    hit = cli.ok("send", topic, "a", "--prop", "region=eu")
    assert hit.startswith(f"sent {topic} seq=")
    miss = cli.run("send", topic, "b", "--prop", "region=us")
    assert (miss.returncode, miss.stdout.decode()) == (
        0,
        f"published to topic {topic}: it matched no subscription (not stored)\n",
    )
    as_json = cli.run("send", topic, "b", "-o", "json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == {"seq_numbers": [0]}
    assert b"matched no subscription" in as_json.stderr


def test_peek_shows_subject_and_properties(cli: Cli, queue: str) -> None:
    cli.setup_queue(queue)
    cli.ok("send", queue, "hi", "--subject", "orders.created", "--prop", "region=eu")
    header, row = cli.ok("peek", queue).splitlines()
    assert header.split()[7:9] == ["SUBJECT", "PROPERTIES"]
    assert "orders.created" in row.split() and "region=eu" in row.split()


def test_metrics_of_a_queue_with_only_scheduled_messages_has_no_oldest_age(
    cli: Cli, queue: str
) -> None:
    with cli.sdk() as c:
        c.create_queue(queue)
        c.schedule(queue, [mqlite.OutMessage(body=b"later")], SYSTEM_CLOCK.now_ms() + 3_600_000)
    line = cli.ok("metrics", queue)
    assert "scheduled=1" in line and line.endswith(" oldest=-\n"), line
