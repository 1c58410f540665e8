"""Storage seam: single writer (§10.1), schema guard (§10.2), pragmas, DSN forms."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import mqlite
from mqlite import errors, testing
from mqlite.engine import store
from mqlite.engine.location import parse_dsn

APP_DIR = str(Path(__file__).resolve().parents[2] / "app")


def test_second_open_of_the_same_file_fails_fast_with_db_locked(db_path: Path) -> None:
    first = mqlite.open_embedded(f"file:{db_path}", background=False)
    try:
        with pytest.raises(errors.DBLocked):
            mqlite.open_embedded(f"file:{db_path}", background=False)
    finally:
        first.close()
    # Released on close: a later open works.
    mqlite.open_embedded(str(db_path), background=False).close()


def test_lock_is_keyed_on_the_canonical_path(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    first = mqlite.open_embedded(f"file:{real / 'mq.db'}", background=False)
    try:
        for spelling in (
            f"file:{link / 'mq.db'}",
            str(real / "." / "mq.db"),
            f"file:{real / 'mq.db'}?mode=rwc",
        ):
            with pytest.raises(errors.DBLocked):
                mqlite.open_embedded(spelling, background=False)
    finally:
        first.close()
    assert (real / "mq.db.lock").exists()


def test_another_process_gets_db_locked(db_path: Path) -> None:
    mq = mqlite.open_embedded(f"file:{db_path}", background=False)
    try:
        code = (
            "import sys, mqlite\n"
            "from mqlite import errors\n"
            "try:\n"
            f"    mqlite.open_embedded({f'file:{db_path}'!r}, background=False)\n"
            "except errors.DBLocked:\n"
            "    sys.exit(42)\n"
        )
        env = {**os.environ, "PYTHONPATH": APP_DIR}
        proc = subprocess.run([sys.executable, "-c", code], env=env, timeout=60)
        assert proc.returncode == 42
    finally:
        mq.close()


def test_a_hard_link_in_this_process_is_refused_and_the_first_writer_keeps_working(
    tmp_path: Path,
) -> None:
    """One writer per FILE: a hard link is the same inode under another name."""
    db = tmp_path / "mq.db"
    first = mqlite.open_embedded(f"file:{db}", background=False)
    try:
        first.create_queue("q")
        alias = tmp_path / "elsewhere" / "alias.db"
        alias.parent.mkdir()
        alias.hardlink_to(db)
        with pytest.raises(errors.DBLocked):
            mqlite.open_embedded(f"file:{alias}", background=False)
        assert first.send_one("q", mqlite.OutMessage(b"still the one writer")) > 0
    finally:
        first.close()
    mqlite.open_embedded(f"file:{alias}", background=False).close()  # released on close


def test_a_hard_link_from_another_process_gets_db_locked(tmp_path: Path) -> None:
    db = tmp_path / "mq.db"
    mq = mqlite.open_embedded(f"file:{db}", background=False)
    try:
        alias = tmp_path / "alias.db"
        alias.hardlink_to(db)
        code = (
            "import sys, mqlite\n"
            "from mqlite import errors\n"
            "try:\n"
            f"    mqlite.open_embedded({f'file:{alias}'!r}, background=False)\n"
            "except errors.DBLocked:\n"
            "    sys.exit(42)\n"
        )
        env = {**os.environ, "PYTHONPATH": APP_DIR}
        proc = subprocess.run([sys.executable, "-c", code], env=env, timeout=60)
        assert proc.returncode == 42
    finally:
        mq.close()


def test_memory_databases_take_no_lock() -> None:
    a = mqlite.open_embedded(":memory:", background=False)
    b = mqlite.open_embedded(":memory:", background=False)
    a.create_queue("q")
    with pytest.raises(errors.QueueNotFound):
        b.stats("q")  # two independent databases
    a.close()
    b.close()


def test_file_pragmas_wal_incremental_vacuum_foreign_keys(db_path: Path) -> None:
    s = store.Store(f"file:{db_path}", sync="FULL")
    try:
        q = s.conn.execute
        assert q("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert q("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert q("PRAGMA auto_vacuum").fetchone()[0] == 2  # INCREMENTAL
        assert q("PRAGMA foreign_keys").fetchone()[0] == 1
        assert q("PRAGMA busy_timeout").fetchone()[0] == 5000
    finally:
        s.close()


@pytest.mark.parametrize(("mode", "level"), [("NORMAL", 1), ("off", 0), ("Extra", 3)])
def test_sync_modes(db_path: Path, mode: str, level: int) -> None:
    s = store.Store(f"file:{db_path}", sync=mode)
    try:
        assert s.conn.execute("PRAGMA synchronous").fetchone()[0] == level
    finally:
        s.close()


def test_unknown_sync_mode_is_a_startup_error(db_path: Path) -> None:
    with pytest.raises(errors.InvalidArgument, match="synchronous"):
        mqlite.open_embedded(f"file:{db_path}", sync="fast", background=False)
    # The failed open released its lock.
    mqlite.open_embedded(f"file:{db_path}", background=False).close()


def test_mqlite_sync_environment_variable_sets_the_default(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MQLITE_SYNC", "full")
    mq = mqlite.open_embedded(f"file:{db_path}", background=False)
    try:
        assert testing.engine(mq).store.conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    finally:
        mq.close()
    monkeypatch.setenv("MQLITE_SYNC", "bogus")
    with pytest.raises(errors.InvalidArgument, match="MQLITE_SYNC"):
        mqlite.open_embedded(f"file:{db_path}", background=False)


def test_10_2_schema_version_mismatch_is_refused_without_running_ddl(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    conn.commit()
    conn.close()
    with pytest.raises(errors.SchemaVersionMismatch, match="cannot be opened by this mqlite"):
        mqlite.open_embedded(f"file:{db_path}", background=False)
    conn = sqlite3.connect(db_path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert tables == {"meta"}  # nothing was created


def test_unrelated_access_keys_table_is_refused_untouched(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE access_keys (k TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(errors.SchemaVersionMismatch, match="access_keys"):
        mqlite.open_embedded(f"file:{db_path}", background=False)
    conn = sqlite3.connect(db_path)
    assert [r[1] for r in conn.execute("PRAGMA table_info(access_keys)")] == ["k"]
    conn.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "foreign",
    [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;"
        "INSERT INTO meta VALUES ('schema_version', '999');",
        "CREATE TABLE access_keys (k TEXT);",
    ],
    ids=["foreign-token", "unrelated-access-keys"],
)
def test_a_refused_database_file_is_left_byte_for_byte_unchanged(
    db_path: Path, foreign: str
) -> None:
    """A refusal writes nothing: not even the journal-mode switch to WAL in the header,
    and no -wal/-shm beside the file (a restore drill with the wrong binary must leave
    the snapshot as it was; found by ops/drills/restore)."""
    conn = sqlite3.connect(db_path)  # rollback-journal mode, as a VACUUM INTO snapshot is
    conn.executescript(foreign)
    conn.close()
    before = _digest(db_path)
    with pytest.raises(errors.SchemaVersionMismatch):
        mqlite.open_embedded(f"file:{db_path}", background=False)
    assert _digest(db_path) == before
    assert not [p.name for p in db_path.parent.iterdir() if p.name.endswith(("-wal", "-shm"))]


def test_reopen_keeps_data_and_the_version_row(db_path: Path) -> None:
    mq = mqlite.open_embedded(f"file:{db_path}", background=False)
    mq.create_queue("q")
    seq = mq.send_one("q", mqlite.OutMessage(body=b"x"))
    mq.close()
    mq = mqlite.open_embedded(f"file:{db_path}", background=False)
    try:
        assert [m.seq_number for m in mq.peek("q")] == [seq]
        row = testing.engine(mq).store.conn.execute(
            "SELECT value FROM meta WHERE key='schema_version'"
        )
        assert row.fetchone()[0] == store.SCHEMA_VERSION == "11"
    finally:
        mq.close()


def test_old_sqlite_is_refused_with_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store.sqlite3, "sqlite_version_info", (3, 36, 0))
    with pytest.raises(errors.UnsupportedSQLite, match=r"3\.37"):
        store.Store(":memory:")


def test_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidArgument, match="does not exist"):
        mqlite.open_embedded(f"file:{tmp_path / 'nope' / 'mq.db'}", background=False)


@pytest.mark.parametrize(
    ("dsn", "memory"),
    [
        (":memory:", True),
        ("", True),
        ("file::memory:", True),
        ("file:x.db", False),
        ("x.db", False),
    ],
)
def test_dsn_forms(dsn: str, memory: bool) -> None:
    assert parse_dsn(dsn).is_memory is memory


def test_sequence_numbers_are_never_reused_across_reopen(db_path: Path) -> None:
    mq = mqlite.open_embedded(f"file:{db_path}", background=False)
    mq.create_queue("q")
    first = mq.send_one("q", mqlite.OutMessage(body=b"x"))
    (m,) = mq.receive("q")
    m.complete()
    mq.close()
    mq = mqlite.open_embedded(f"file:{db_path}", background=False)
    try:
        assert mq.send_one("q", mqlite.OutMessage(body=b"y")) > first
    finally:
        mq.close()


def test_close_checkpoints_the_wal(db_path: Path) -> None:
    mq = mqlite.open_embedded(f"file:{db_path}", background=False)
    mq.create_queue("q")
    mq.send("q", [mqlite.OutMessage(body=b"x" * 1000)] * 50)
    mq.close()
    wal = Path(str(db_path) + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_a_passive_checkpoint_does_not_wait_for_litestreams_reader(tmp_path: Path) -> None:
    """Litestream holds a read transaction on the WAL; under replication the engine's
    checkpoint (vacuum, reclaim, close) is PASSIVE and returns at once. TRUNCATE would
    wait the whole busy timeout (5 s) and fail (store.CHECKPOINT_MODES)."""
    import sqlite3
    import time

    from mqlite.engine import Engine

    dsn = f"file:{tmp_path / 'r.db'}"
    engine = Engine(dsn, checkpoint="PASSIVE")
    try:
        engine.create_queue("q")
        reader = sqlite3.connect(tmp_path / "r.db", isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM sqlite_master").fetchone()  # a WAL snapshot
        engine.create_queue("q2")  # a frame past the reader's snapshot
        started = time.monotonic()
        engine.checkpoint()
        assert time.monotonic() - started < 1.0
        reader.execute("COMMIT")
        reader.close()
    finally:
        engine.close()
