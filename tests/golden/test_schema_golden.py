"""The schema is pinned three ways: the DDL file's hash is tied to the version token, what
SQLite actually built equals the golden dump, and a foreign token is refused (store tests).
A database of an earlier token (5: the original's v0.3.x, kept in schema_v5.sql; 6: before
the schedules table, kept in schema_v6.sql; 7: before the retry policy, kept in
schema_v7.sql) is migrated at open to exactly the schema a fresh database gets, with
its data intact."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from mqlite.engine import store

GOLDEN = Path(__file__).with_name("schema.txt")
SCHEMA_V5 = Path(__file__).with_name("schema_v5.sql")
SCHEMA_V6 = Path(__file__).with_name("schema_v6.sql")
SCHEMA_V7 = Path(__file__).with_name("schema_v7.sql")
SCHEMA_V8 = Path(__file__).with_name("schema_v8.sql")
SCHEMA_V9 = Path(__file__).with_name("schema_v9.sql")
SCHEMA_V10 = Path(__file__).with_name("schema_v10.sql")

# Changing schema.sql means changing this hash; an incompatible change also needs a new
# SCHEMA_VERSION token and a step in engine/migrations.py from the previous one.
PINNED = {
    "5": "6277cd1e9a956fe3fc10f9b87ea24c1295859bbf0a40f0d352ed0829c599ac68",
    "6": "fb7ec30c81f2a0c024990f64525c512317ea7010dc02911746ea6e0030da7f91",
    "7": "d7e48b8028e5b54eea8163834115999d318ab280870b6bc1cf7e2c5461124737",
    "8": "a1e2d016faa4de4574dc4f831b8016b022c25927fe40df4c905354a4d713679a",
    "9": "ef6252cf1f8715a3cd3a6ff302544266232294abe2a3b38f9fdfb2b0e6a68612",
    "10": "c873550441948746f7fa5cea11bd37bf75645cb4522d6d2d93929e00bdbd902b",
    "11": "f5e5c090d74286b2803a80c4125a80b1328cc292ef3d2b82589ea0340cbef4fe",
}


def built_schema(conn: sqlite3.Connection) -> str:
    rows = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master "
        "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
    ).fetchall()
    return (
        "\n".join(f"{t} {n} ON {tb}\n  {' '.join((s or '').split())}" for t, n, tb, s in rows)
        + "\n"
    )


def test_schema_sql_hash_is_pinned_to_the_version_token() -> None:
    digest = hashlib.sha256(store.schema_sql().encode("utf-8")).hexdigest()
    assert store.SCHEMA_VERSION == "11"
    assert digest == PINNED[store.SCHEMA_VERSION]
    v5 = hashlib.sha256(SCHEMA_V5.read_bytes()).hexdigest()
    assert v5 == PINNED["5"]  # the fixture IS that schema, byte for byte
    assert hashlib.sha256(SCHEMA_V6.read_bytes()).hexdigest() == PINNED["6"]
    assert hashlib.sha256(SCHEMA_V7.read_bytes()).hexdigest() == PINNED["7"]
    assert hashlib.sha256(SCHEMA_V8.read_bytes()).hexdigest() == PINNED["8"]
    assert hashlib.sha256(SCHEMA_V9.read_bytes()).hexdigest() == PINNED["9"]
    assert hashlib.sha256(SCHEMA_V10.read_bytes()).hexdigest() == PINNED["10"]


def test_sqlite_master_after_open_equals_the_golden_dump(tmp_path: Path) -> None:
    s = store.Store(f"file:{tmp_path / 'g.db'}")
    try:
        assert built_schema(s.conn) == GOLDEN.read_text(encoding="utf-8")
    finally:
        s.close()


def test_schema_has_the_eleven_strict_tables(tmp_path: Path) -> None:
    s = store.Store(":memory:")
    try:
        tables = {
            name: sql
            for name, sql in s.conn.execute(
                "SELECT name, sql FROM sqlite_master "
                "WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        assert set(tables) == {
            "meta",
            "queues",
            "subscriptions",
            "messages",
            "dedup",
            "settlement_receipts",
            "receive_attempts",
            "access_keys",
            "bodies",
            "schedules",
            "audit_log",
            "push_targets",
        }
        assert all(sql.rstrip().endswith("STRICT") for sql in tables.values())
    finally:
        s.close()


def make_v5_database(path: Path) -> None:
    """A token-5 database as the original (or this project before the bodies table) left
    it, with a message in flight, a large inline body, a key and a queue."""
    conn = sqlite3.connect(path)
    sql = "\n".join(
        ln for ln in SCHEMA_V5.read_text().splitlines() if not ln.lstrip().startswith("--")
    )
    for stmt in (s.strip() for s in sql.split(";")):
        if stmt:
            conn.execute(stmt)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '5')")
    conn.execute("INSERT INTO queues (name, created_at, updated_at) VALUES ('q', 1, 1)")
    conn.execute(
        "INSERT INTO messages (queue, state, enqueued_at, body) VALUES ('q', 'active', 1, ?)",
        (b"L" * 100_000,),
    )
    conn.execute(
        "INSERT INTO messages (queue, state, lock_token, locked_until, delivery_count,"
        " enqueued_at, body) VALUES ('q', 'locked', 't', 99, 1, 2, x'736d616c6c')"
    )
    conn.commit()
    conn.close()


def columns(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {t: list(conn.execute(f"PRAGMA table_info({t})")) for t in sorted(tables)}


def test_a_v5_database_migrates_to_the_fresh_schema_with_its_data(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    make_v5_database(old)
    migrated = store.Store(f"file:{old}")
    fresh = store.Store(f"file:{tmp_path / 'fresh.db'}")
    try:
        assert migrated.migrated_from == "5"
        assert columns(migrated.conn) == columns(fresh.conn)
        indexes = "SELECT name, sql FROM sqlite_master WHERE type='index' ORDER BY name"
        assert list(migrated.conn.execute(indexes)) == list(fresh.conn.execute(indexes))
        version = "SELECT value FROM meta WHERE key='schema_version'"
        assert migrated.conn.execute(version).fetchone()[0] == store.SCHEMA_VERSION
    finally:
        migrated.close()
        fresh.close()


def make_v7_database(path: Path) -> None:
    """A token-7 database (before the retry policy): a queue, a message in flight."""
    conn = sqlite3.connect(path)
    sql = "\n".join(
        ln for ln in SCHEMA_V7.read_text().splitlines() if not ln.lstrip().startswith("--")
    )
    for stmt in (s.strip() for s in sql.split(";")):
        if stmt:
            conn.execute(stmt)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '7')")
    conn.execute(
        "INSERT INTO queues (name, max_delivery_count, created_at, updated_at) "
        "VALUES ('q', 4, 1, 1)"
    )
    conn.execute(
        "INSERT INTO messages (queue, state, lock_token, locked_until, delivery_count,"
        " enqueued_at, body) VALUES ('q', 'locked', 't', 99, 1, 2, x'6f6c64')"
    )
    conn.commit()
    conn.close()


def test_a_v7_database_migrates_to_8_with_no_retry_policy_and_no_last_error(
    tmp_path: Path,
) -> None:
    """7 -> 8 adds columns only; an old queue comes out without a retry policy (the old
    behaviour) and an old message without a last error."""
    import mqlite

    old = tmp_path / "v7.db"
    make_v7_database(old)
    migrated = store.Store(f"file:{old}")
    fresh = store.Store(f"file:{tmp_path / 'fresh.db'}")
    try:
        assert migrated.migrated_from == "7"
        assert columns(migrated.conn) == columns(fresh.conn)
    finally:
        migrated.close()
        fresh.close()
    mq = mqlite.open_embedded(f"file:{old}", background=False)
    try:
        cfg = mq.get_queue("q").config
        assert (cfg.max_delivery_count, cfg.retry_initial_delay_ms) == (4, 0)
        assert (cfg.retry_multiplier, cfg.retry_max_delay_ms, cfg.retry_jitter) == (
            2.0,
            900_000,
            0.0,
        )
        (m,) = mq.receive("q")  # recovery released the old lease at open
        assert (m.body, m.last_error, m.last_error_at_ms) == (b"old", "", 0)
    finally:
        mq.close()


def test_a_migrated_database_keeps_serving_its_old_rows(tmp_path: Path) -> None:
    """Old rows keep their inline bodies (no rewrite); recovery resets the in-flight one."""
    import mqlite
    from mqlite import OutMessage

    old = tmp_path / "old.db"
    make_v5_database(old)
    mq = mqlite.open_embedded(f"file:{old}", background=False)
    try:
        bodies = sorted(m.body for m in mq.receive("q", max_messages=10))
        assert bodies == [b"L" * 100_000, b"small"]
        new = mq.send_one("q", OutMessage(b"N" * 5000))  # a large new one goes external
        (got,) = mq.receive("q")
        assert (got.seq_number, got.body) == (new, b"N" * 5000)
    finally:
        mq.close()


def test_a_newer_or_foreign_token_is_refused_and_left_untouched(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '99')")
    conn.commit()
    conn.close()
    from mqlite import errors

    try:
        store.Store(f"file:{db}").close()
        raise AssertionError("a newer schema must be refused")
    except errors.SchemaVersionMismatch as exc:
        assert "'99'" in exc.message and "migrates from 5, 6, 7, 8" in exc.message
    conn = sqlite3.connect(db)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == [
        "meta",
        "sqlite_autoindex_meta_1",
    ]
    conn.close()


def make_v6_database(path: Path) -> None:
    """A token-6 database (before the schedules table) with a queue and a message."""
    conn = sqlite3.connect(path)
    sql = "\n".join(
        ln for ln in SCHEMA_V6.read_text().splitlines() if not ln.lstrip().startswith("--")
    )
    for stmt in (s.strip() for s in sql.split(";")):
        if stmt:
            conn.execute(stmt)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '6')")
    conn.execute("INSERT INTO queues (name, created_at, updated_at) VALUES ('q', 1, 1)")
    conn.execute("INSERT INTO messages (queue, enqueued_at, body) VALUES ('q', 1, x'6869')")
    conn.commit()
    conn.close()


def test_a_v6_database_migrates_to_the_fresh_schema_and_takes_schedules(tmp_path: Path) -> None:
    import mqlite
    from mqlite import OutMessage

    old = tmp_path / "old6.db"
    make_v6_database(old)
    migrated = store.Store(f"file:{old}")
    fresh = store.Store(f"file:{tmp_path / 'fresh.db'}")
    try:
        assert migrated.migrated_from == "6"
        assert columns(migrated.conn) == columns(fresh.conn)
        assert built_schema(migrated.conn) == GOLDEN.read_text(encoding="utf-8")
    finally:
        migrated.close()
        fresh.close()
    mq = mqlite.open_embedded(f"file:{old}", background=False)
    try:
        assert [m.body for m in mq.receive("q")] == [b"hi"]
        mq.create_schedule("s", "@daily", "q", OutMessage(b"x"))
        assert [s.name for s in mq.list_schedules()] == ["s"]
    finally:
        mq.close()


def test_a_v8_database_migrates_and_its_keys_stay_unscoped_and_unlimited(tmp_path: Path) -> None:
    """8 -> 9 adds the key scope and rate-limit columns (issue 35): an existing key keeps
    working, scoped to every queue, with the broker's default rate."""
    from mqlite.engine import Engine

    old = tmp_path / "v8.db"
    conn = sqlite3.connect(old)
    sql = "\n".join(
        ln for ln in SCHEMA_V8.read_text().splitlines() if not ln.lstrip().startswith("--")
    )
    for stmt in (s.strip() for s in sql.split(";")):
        if stmt:
            conn.execute(stmt)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '8')")
    digest = hashlib.sha256(b"mqk_old").hexdigest()
    conn.execute(
        "INSERT INTO access_keys (id, name, token_sha256, permissions, created_at) "
        "VALUES (?, 'old', ?, 'send', 1)",
        ("a" * 32, digest),
    )
    conn.commit()
    conn.close()
    migrated = store.Store(f"file:{old}")
    try:
        assert migrated.migrated_from == "8"
        assert built_schema(migrated.conn) == GOLDEN.read_text(encoding="utf-8")
    finally:
        migrated.close()
    engine = Engine(f"file:{old}")
    try:
        key = engine.authenticate_key("mqk_old")
        assert key is not None
        assert (key.queues, key.rate_limit_per_s, key.burst) == ((), 0, 0)
    finally:
        engine.close()


def test_a_v9_database_migrates_to_10_with_an_empty_audit_trail(tmp_path: Path) -> None:
    """9 -> 10 adds the audit_log table (issue 35's audit trail) and nothing else: the old
    rows are untouched, the trail starts empty, and the first change after the migration
    is its first row."""
    from mqlite.engine import Engine

    old = tmp_path / "v9.db"
    conn = sqlite3.connect(old)
    sql = "\n".join(
        ln for ln in SCHEMA_V9.read_text().splitlines() if not ln.lstrip().startswith("--")
    )
    for stmt in (s.strip() for s in sql.split(";")):
        if stmt:
            conn.execute(stmt)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '9')")
    conn.execute("INSERT INTO queues (name, created_at, updated_at) VALUES ('kept', 1, 1)")
    conn.commit()
    conn.close()
    migrated = store.Store(f"file:{old}")
    try:
        assert migrated.migrated_from == "9"
        assert built_schema(migrated.conn) == GOLDEN.read_text(encoding="utf-8")
    finally:
        migrated.close()
    engine = Engine(f"file:{old}")
    try:
        assert engine.list_audit() == [] and engine.get_queue("kept").name == "kept"
        engine.delete_queue("kept")
        assert [(e.action, e.queue, e.actor) for e in engine.list_audit()] == [
            ("DeleteQueue", "kept", "embedded")
        ]
    finally:
        engine.close()


def test_a_v10_database_migrates_to_11_with_no_push_targets(tmp_path: Path) -> None:
    """10 -> 11 only creates the push_targets table (issue 34): an old queue keeps its
    messages and stays an ordinary pull queue (Receive works, no push is listed)."""
    from mqlite.engine import Engine

    old = tmp_path / "v10.db"
    conn = sqlite3.connect(old)
    sql = "\n".join(
        ln for ln in SCHEMA_V10.read_text().splitlines() if not ln.lstrip().startswith("--")
    )
    for stmt in (s.strip() for s in sql.split(";")):
        if stmt:
            conn.execute(stmt)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '10')")
    conn.execute("INSERT INTO queues (name, created_at, updated_at) VALUES ('q', 1, 1)")
    conn.execute(
        "INSERT INTO messages (queue, state, enqueued_at, body) "
        "VALUES ('q', 'active', 1, x'6f6c64')"
    )
    conn.commit()
    conn.close()
    migrated = store.Store(f"file:{old}")
    try:
        assert migrated.migrated_from == "10"
        assert built_schema(migrated.conn) == GOLDEN.read_text(encoding="utf-8")
    finally:
        migrated.close()
    engine = Engine(f"file:{old}")
    try:
        assert engine.list_pushes() == []
        (m,) = engine.receive("q")
        assert m.body == b"old"
    finally:
        engine.close()
