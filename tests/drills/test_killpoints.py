"""The crash drill's kill points (engine/killpoints.py): inert unless armed, armed only
by test code or by ``mqlite serve`` with MQLITE_TEST_HOOKS=on, and -- once armed -- a real
SIGKILL at exactly the named place (real processes, real files)."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mqlite import errors
from mqlite.config import ConfigError, Settings
from mqlite.engine import killpoints

REPO = Path(__file__).resolve().parents[2]

# A child process: open a broker on argv[1], arm argv[2] (if any), send argv[3] messages one
# at a time, printing each acknowledged seq; a kill point ends it by SIGKILL.
CHILD = """
import sys
import uuid
import mqlite
from mqlite.engine import killpoints
mq = mqlite.open_embedded("file:" + sys.argv[1], background=False)
mq.create_queue("q") if not any(q.name == "q" for q in mq.list_queues()) else None
if sys.argv[2]:
    killpoints.arm(killpoints.parse(sys.argv[2]))
for i in range(int(sys.argv[3])):
    with mq.tx() as tx:
        tx.execute("CREATE TABLE IF NOT EXISTS biz (k TEXT PRIMARY KEY) STRICT")
        tx.execute("INSERT INTO biz VALUES (?)", (uuid.uuid4().hex,))
        seq = tx.send_one("q", mqlite.OutMessage(body=f"k{i}".encode()))
    print(seq, flush=True)
mq.close()
"""


def run_child(db: Path, spec: str, n: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(db), spec, str(n)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def rows(db: Path) -> tuple[int, int]:
    conn = sqlite3.connect(db)
    try:
        biz = conn.execute("SELECT count(*) FROM biz").fetchone()[0]
        msgs = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    finally:
        conn.close()
    return int(biz), int(msgs)


def test_unarmed_kill_points_are_inert(tmp_path: Path) -> None:
    killpoints.disarm()
    for point in killpoints.POINTS:
        killpoints.reached(point)  # would SIGKILL this very test process if armed
    done = run_child(tmp_path / "mq.db", "", 5)
    assert done.returncode == 0, done.stderr
    assert rows(tmp_path / "mq.db") == (5, 5)


@pytest.mark.parametrize(
    ("spec", "survivors"),
    [("commit.before@3", 2), ("commit.after@3", 3)],
)
def test_a_kill_point_is_a_real_sigkill_at_that_commit(
    tmp_path: Path, spec: str, survivors: int
) -> None:
    """commit.before: the 3rd outbox transaction is lost whole (business row AND message);
    commit.after: it committed but was never acknowledged (no 3rd seq printed)."""
    db = tmp_path / "mq.db"
    done = run_child(db, spec, 10)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert len(done.stdout.split()) == 2  # two acknowledged seqs before the kill
    assert rows(db) == (survivors, survivors)


def test_once_records_the_kill_and_never_fires_again(tmp_path: Path) -> None:
    db, evidence = tmp_path / "mq.db", tmp_path / "fired.json"
    first = run_child(db, f"commit.after@2,once={evidence}", 5)
    assert first.returncode == -signal.SIGKILL
    facts = json.loads(evidence.read_text())
    assert facts["point"] == "commit.after" and facts["arrival"] == 2
    second = run_child(db, f"commit.after@1,once={evidence}", 5)
    assert second.returncode == 0, second.stderr  # the evidence exists: it lives
    assert rows(db) == (2 + 5, 2 + 5)


@pytest.mark.parametrize(
    "spec",
    ["", "nowhere", "commit.after@0", "commit.after@x", "checkpoint,once=", "batch.call,x=1"],
)
def test_a_malformed_spec_is_refused(spec: str) -> None:
    with pytest.raises(errors.InvalidArgument):
        killpoints.parse(spec)


def test_specs_parse_into_point_arrival_delay_and_evidence() -> None:
    assert killpoints.parse("checkpoint@2+3ms,once=/tmp/x") == killpoints.KillPoint(
        "checkpoint", 2, 3, "/tmp/x"
    )
    assert killpoints.parse("batch.call") == killpoints.KillPoint("batch.call", 1, 0, "")


def test_serve_refuses_a_kill_point_without_the_test_hooks_flag() -> None:
    settings = Settings.from_env({"MQLITE_TEST_KILL_POINT": "commit.after@1"})
    with pytest.raises(ConfigError, match="MQLITE_TEST_HOOKS"):
        settings.check_serve()
    Settings.from_env(
        {"MQLITE_TEST_KILL_POINT": "commit.after@1", "MQLITE_TEST_HOOKS": "on"}
    ).check_serve()


def test_a_real_serve_with_only_the_kill_point_exits_1_without_starting(tmp_path: Path) -> None:
    env = {"MQLITE_DB": f"file:{tmp_path / 'mq.db'}", "MQLITE_TEST_KILL_POINT": "commit.after@1"}
    env["PATH"] = "/usr/bin:/bin"
    done = subprocess.run(
        [sys.executable, "-m", "mqlite.cli.main", "serve", "--addr", "127.0.0.1:1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "MQLITE_TEST_HOOKS" in done.stderr
    assert not (tmp_path / "mq.db").exists()  # nothing was opened


def test_only_serve_and_drill_code_ever_arm_a_kill_point() -> None:
    """No request path can arm one: in the package, ``killpoints.arm`` is called from
    serve's startup alone (from MQLITE_* settings checked by ``check_serve``)."""
    callers = [
        str(path.relative_to(REPO))
        for path in (REPO / "app" / "mqlite").rglob("*.py")
        if re.search(r"killpoints\.arm\(", path.read_text(encoding="utf-8"))
    ]
    assert callers == ["app/mqlite/server/serve.py"]
