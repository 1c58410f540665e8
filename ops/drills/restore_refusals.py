"""The restore drill's refusals: what must NOT restore, and must not be modified.

- a snapshot put beside a stale WAL (a directory holding another lifetime's ``-wal``):
  ``mqlite restore`` refuses and leaves the stale files as they were;
- a foreign schema token: ``mqlite restore`` refuses, and a broker started on the file
  refuses too, leaving it byte-identical (no WAL switch, no ``-wal``/``-shm``);
- an older schema (token 5, this binary migrates from it): restored and migrated on open,
  with every message intact.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import drillkit

Cli = Callable[..., subprocess.CompletedProcess[str]]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def resign(path: Path) -> None:
    path.with_name(path.name + ".sha256").write_text(f"{sha(path)}  {path.name}\n")


def first_line(done: subprocess.CompletedProcess[str]) -> str:
    text = (done.stderr or done.stdout).strip()
    return text.splitlines()[-1][:200] if text else f"exit {done.returncode}"


def run(report: drillkit.Report, snap: Path, work: Path, cli: Cli) -> None:
    stale = work / "beside-stale-wal"
    stale.mkdir()
    (stale / "mq.db-wal").write_bytes(b"\x37\x7f\x06\x82" + b"\0" * 28)  # another lifetime's
    before = sha(stale / "mq.db-wal")
    done = cli("restore", str(snap), "--data-dir", str(stale))
    untouched = (
        sorted(p.name for p in stale.iterdir()) == ["mq.db-wal"]
        and sha(stale / "mq.db-wal") == before
    )
    report.check(
        "a snapshot beside a stale WAL is refused",
        done.returncode != 0 and untouched,
        first_line(done),
    )

    foreign = work / "foreign" / "mq.db"
    foreign.parent.mkdir()
    shutil.copyfile(snap, foreign)
    conn = sqlite3.connect(foreign)
    conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    conn.commit()
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    resign(foreign)
    pristine = sha(foreign)
    done = cli("restore", str(foreign), "--data-dir", str(work / "foreign-restored"))
    served = subprocess.run(
        [
            sys.executable,
            "-m",
            "mqlite.cli.main",
            "serve",
            "--addr",
            f"127.0.0.1:{drillkit.free_port()}",
        ],
        env=drillkit.clean_env({"MQLITE_DB": f"file:{foreign}", "MQLITE_TOKENS": "off"}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # the OS lock's sidecar (mq.db.lock) holds no data; a -wal/-shm/-journal would
    left = sorted(p.name for p in foreign.parent.iterdir() if p.name != "mq.db.lock")
    ok = (
        done.returncode != 0
        and served.returncode != 0
        and sha(foreign) == pristine
        and left == ["mq.db", "mq.db.sha256"]
    )
    report.check(
        "a schema-token mismatch is refused without modifying the file",
        ok,
        f"restore: {first_line(done)}; serve: exit {served.returncode}; files {left}",
    )

    old = work / "v5" / "mq.db"
    old.parent.mkdir()
    shutil.copyfile(snap, old)
    conn = sqlite3.connect(old)
    try:
        big = conn.execute("SELECT count(*) FROM bodies").fetchone()[0]
        if big:
            report.check(
                "an older schema (5) restores and migrates",
                False,
                f"the snapshot has {big} external bodies, which schema 5 cannot hold",
            )
            return
        for stmt in downgrade_to_5():
            conn.execute(stmt)
        conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
        conn.commit()
        rows = conn.execute("SELECT id, message_id, body FROM messages ORDER BY id").fetchall()
        conn.execute("PRAGMA journal_mode = DELETE")
    finally:
        conn.close()
    resign(old)
    target = work / "v5-restored"
    done = cli("restore", str(old), "--data-dir", str(target))
    if done.returncode != 0:
        report.check("an older schema (5) restores and migrates", False, first_line(done))
        return
    import mqlite

    mqlite.open_embedded(f"file:{target / 'mq.db'}", background=False).close()
    conn = sqlite3.connect(target / "mq.db")
    try:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        after = conn.execute("SELECT id, message_id, body FROM messages ORDER BY id").fetchall()
    finally:
        conn.close()
    report.check(
        "an older schema (5) restores and migrates",
        after == rows,
        f"schema 5 -> {version}, {len(after)} of {len(rows)} messages intact",
    )


# The tables schema 5 did not have, created since by the schema pass (no migration step
# names them): bodies (token 6), schedules (token 7), audit_log (token 10), push_targets
# (token 11).
TABLES_SINCE_5 = ("bodies", "schedules", "audit_log", "push_targets")


def downgrade_to_5() -> list[str]:
    """Statements that turn a current snapshot into a schema-5 file: the inverse of every
    migration step from 5 on (each column a step added, dropped in reverse order), then
    the tables created since. Derived from ``migrations.STEPS``, so a new step is undone
    here without editing the drill."""
    import re

    from mqlite.engine.migrations import STEPS

    added: list[str] = []
    token = "5"
    while token in STEPS:
        token, stmts = STEPS[token]
        for stmt in stmts:
            m = re.match(r"ALTER TABLE (\w+) ADD COLUMN (\w+)", stmt)
            if m:
                added.append(f"ALTER TABLE {m.group(1)} DROP COLUMN {m.group(2)}")
    return [*reversed(added), *(f"DROP TABLE IF EXISTS {t}" for t in TABLES_SINCE_5)]
