"""``backup`` of a live database under concurrent writes, and ``restore``'s refusals."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest
from cli_support import Cli, mqlite_cmd

import mqlite
from mqlite.engine import SCHEMA_VERSION
from waiting import poll_real_process, wait_for_condition


def _rows(db: Path) -> dict[int, tuple[str, bytes]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, state, body FROM messages")}
    finally:
        conn.close()


def test_backup_under_concurrent_writes_restores_the_committed_state(
    embedded_cli: Cli, queue: str, tmp_path: Path
) -> None:
    cli = embedded_cli
    committed: dict[int, bytes] = {}  # seq -> body, recorded after send_one returned
    stop = threading.Event()
    live = mqlite.open_embedded(f"file:{cli.db_path}", background=False)  # holds the flock
    try:
        live.create_queue(queue)
        for i in range(200):
            committed[live.send_one(queue, mqlite.OutMessage(body=b"pre-%d" % i))] = b"pre-%d" % i
        # some completed work too: deleted rows must stay deleted in the snapshot
        for m in live.receive(queue, max_messages=50):
            m.complete()
            del committed[m.seq_number]

        sent = threading.Condition()

        def writer() -> None:
            i = 0
            while not stop.is_set():
                body = b"live-%d" % i + b"x" * 512
                seq = live.send_one(queue, mqlite.OutMessage(body=body))
                with sent:
                    committed[seq] = body
                    sent.notify_all()
                i += 1

        t = threading.Thread(target=writer)
        t.start()
        try:
            # The writer is demonstrably running (it notifies each acknowledged send).
            wait_for_condition(sent, lambda: len(committed) >= 400, "400 sends", 30)
            with sent:
                acked_before = dict(committed)
            snap = tmp_path / "snap.db"
            out = cli.ok("backup", str(snap))
        finally:
            stop.set()
            t.join(timeout=10)
        assert len(committed) > len(acked_before)  # writes continued during the backup
    finally:
        live.close()
    assert out.startswith(f"backup {snap}:") and "integrity ok" in out
    digest = hashlib.sha256(snap.read_bytes()).hexdigest()
    assert (tmp_path / "snap.db.sha256").read_text() == f"{digest}  snap.db\n"

    restored = tmp_path / "restored"
    report = cli.ok("restore", str(snap), "--data-dir", str(restored))
    assert "1 queue(s)" in report
    rows = _rows(restored / "mq.db")
    # every send acknowledged before the backup began is there, byte for byte
    for seq, body in acked_before.items():
        assert rows[seq] == ("active", body)
    # and the snapshot is one consistent instant: exactly a prefix of the committed sends
    top = max(rows)
    expected = {seq: body for seq, body in committed.items() if seq <= top}
    assert {seq: body for seq, (_, body) in rows.items()} == expected
    # the restored directory opens as a working broker database
    with mqlite.open_embedded(f"file:{restored / 'mq.db'}", background=False) as c:
        assert c.stats(queue).active == len(rows)


@pytest.fixture
def snapshot(embedded_cli: Cli, queue: str, tmp_path: Path) -> Path:
    embedded_cli.setup_queue(queue, b"a", b"b")
    path = tmp_path / "snap.db"
    embedded_cli.ok("backup", str(path))
    return path


def test_backup_refuses_existing_path_client_mode_and_memory(
    embedded_cli: Cli, snapshot: Path
) -> None:
    r = embedded_cli.run("backup", str(snapshot))
    assert r.returncode == 1 and b"exists" in r.stderr
    embedded_cli.ok("backup", str(snapshot), "--force")
    r = embedded_cli.run("backup", str(snapshot) + "2", env={"MQLITE_ENDPOINT": "http://h:1"})
    assert r.returncode == 1 and b"local-only" in r.stderr
    r = embedded_cli.run("backup", str(snapshot) + "3", env={"MQLITE_DB": ":memory:"})
    assert r.returncode == 1


def test_restore_json_reports_counts(embedded_cli: Cli, snapshot: Path, tmp_path: Path) -> None:
    got = embedded_cli.json("restore", str(snapshot), "--data-dir", str(tmp_path / "new"))
    assert (got["schema_version"], got["queues"], got["messages"]) == (SCHEMA_VERSION, 1, 2)
    assert got["by_state"] == {"active": 2}


def test_restore_refuses_a_non_empty_directory(
    embedded_cli: Cli, snapshot: Path, tmp_path: Path
) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    r = embedded_cli.run("restore", str(snapshot), "--data-dir", str(target))
    assert r.returncode == 1 and b"not an empty directory" in r.stderr
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]


def test_restore_refuses_a_corrupted_snapshot(
    embedded_cli: Cli, snapshot: Path, tmp_path: Path
) -> None:
    data = bytearray(snapshot.read_bytes())
    data[len(data) // 2] ^= 0xFF
    snapshot.write_bytes(bytes(data))
    target = tmp_path / "fresh"
    r = embedded_cli.run("restore", str(snapshot), "--data-dir", str(target))
    assert r.returncode == 1 and b"sha256" in r.stderr
    assert not target.exists()
    (tmp_path / "snap.db.sha256").unlink()
    r = embedded_cli.run("restore", str(snapshot), "--data-dir", str(target))
    assert r.returncode == 1 and b"checksum" in r.stderr


def test_restore_refuses_another_schema_version(
    embedded_cli: Cli, snapshot: Path, tmp_path: Path
) -> None:
    conn = sqlite3.connect(snapshot)
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    digest = hashlib.sha256(snapshot.read_bytes()).hexdigest()
    (tmp_path / "snap.db.sha256").write_text(f"{digest}  snap.db\n")
    r = embedded_cli.run("restore", str(snapshot), "--data-dir", str(tmp_path / "fresh"))
    assert r.returncode == 1 and b"schema version" in r.stderr


def test_backup_of_a_running_brokers_database(client_cli: Cli, queue: str, tmp_path: Path) -> None:
    """The broker process owns the file (flock + its one writer); backup still works."""
    client_cli.setup_queue(queue, b"one", b"two")
    local = Cli("embedded", {**client_cli.env, "MQLITE_ENDPOINT": ""}, client_cli.db_path)
    local.env["MQLITE_DB"] = f"file:{client_cli.db_path}"
    snap = tmp_path / "live.db"
    local.ok("backup", str(snap))
    got = local.json("restore", str(snap), "--data-dir", str(tmp_path / "r"))
    assert got["schema_version"] == SCHEMA_VERSION and got["queues"] >= 1
    bodies = {body for _, body in _rows(tmp_path / "r" / "mq.db").values()}
    assert {b"one", b"two"} <= bodies
    r = local.run("metrics", queue)  # an embedded open of the broker's file is refused
    assert r.returncode == 1 and b"locked" in r.stderr


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
def test_backup_force_refuses_the_live_database_and_its_sidecars(
    embedded_cli: Cli, suffix: str
) -> None:
    """`backup --force` onto the database (or its WAL/SHM) would destroy acknowledged
    data: refused, and the database is unchanged."""
    db = Path(embedded_cli.db_path)
    q = "keep"
    embedded_cli.ok("create-queue", q)
    embedded_cli.ok("send", q, "acknowledged")
    before = _rows(db)
    r = embedded_cli.run("backup", str(db) + suffix, "--force")
    assert r.returncode == 1
    assert b"refusing to write the backup onto" in r.stderr
    assert _rows(db) == before


def test_backup_force_refuses_a_hard_link_to_the_database(
    embedded_cli: Cli, tmp_path: Path
) -> None:
    """The same file under another name is the same inode: refused too."""
    db = Path(embedded_cli.db_path)
    embedded_cli.ok("create-queue", "keep")
    embedded_cli.ok("send", "keep", "acknowledged")
    before = _rows(db)
    alias = tmp_path / "alias.db"
    alias.hardlink_to(db)
    r = embedded_cli.run("backup", str(alias), "--force")
    assert r.returncode == 1 and b"the database itself" in r.stderr
    assert _rows(db) == before


KILL_DB_BYTES = 96 << 20  # big enough that the copy is still being written when we look
KILL_POLL_DEADLINE_S = 20.0


def _size(path: Path) -> int:
    """A file's size, 0 once it is gone: the backup renames its claim file to the temp
    name between the listing and the stat (a race of the poll, not of the backup)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def test_a_sigkilled_backup_leaves_a_temp_file_the_next_backup_removes(
    embedded_cli: Cli, queue: str, tmp_path: Path
) -> None:
    body = os.urandom(16 << 10)
    with embedded_cli.sdk() as c:
        c.create_queue(queue)
        for _ in range(KILL_DB_BYTES // len(body) // 200):
            c.send(queue, [mqlite.OutMessage(body=body)] * 200)
    backups = tmp_path / "backups"
    backups.mkdir()
    proc = subprocess.Popen(
        mqlite_cmd("backup", str(backups / "first.db")), env=embedded_cli.env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:

        def copying() -> bool:
            assert proc.poll() is None, "the backup finished before it could be killed"
            return bool([p for p in backups.iterdir() if _size(p) > 1 << 20])

        poll_real_process(
            "a temp file of the backup", copying, deadline_s=KILL_POLL_DEADLINE_S, interval_s=0.001
        )
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=10)
    leftovers = list(backups.iterdir())  # no finally ran: the partial copy is there
    assert leftovers and "first.db" not in [p.name for p in leftovers]
    embedded_cli.ok("backup", str(backups / "second.db"))
    assert sorted(p.name for p in backups.iterdir()) == ["second.db", "second.db.sha256"]


def test_a_live_backup_s_temp_file_is_not_swept(tmp_path: Path) -> None:
    from mqlite.engine import backup as snapshots

    held = snapshots.claim_temp(str(tmp_path), str(tmp_path / "a.db"))
    try:
        abandoned = tmp_path / f"{snapshots.TEMP_PREFIX}b.db.0123456789ab{snapshots.TEMP_SUFFIX}"
        abandoned.write_bytes(b"x" * 100)
        assert snapshots.sweep_abandoned(str(tmp_path)) == [str(abandoned)]
        assert Path(held.path).exists() and not abandoned.exists()
    finally:
        held.release()
    assert snapshots.sweep_abandoned(str(tmp_path)) == [held.path]  # once its owner is gone
