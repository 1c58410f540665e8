"""The schema is pinned three ways: the DDL file's hash is tied to the version token, what
SQLite actually built equals the golden dump, and a foreign token is refused (store tests)."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from mqlite.engine import store

GOLDEN = Path(__file__).with_name("schema.txt")

# Changing schema.sql means changing this hash; an incompatible change also needs a new
# SCHEMA_VERSION token (mqlite never migrates: old databases are refused, not rewritten).
PINNED = {"5": "6277cd1e9a956fe3fc10f9b87ea24c1295859bbf0a40f0d352ed0829c599ac68"}


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
    assert store.SCHEMA_VERSION == "5"
    assert digest == PINNED[store.SCHEMA_VERSION]


def test_sqlite_master_after_open_equals_the_golden_dump(tmp_path: Path) -> None:
    s = store.Store(f"file:{tmp_path / 'g.db'}")
    try:
        assert built_schema(s.conn) == GOLDEN.read_text(encoding="utf-8")
    finally:
        s.close()


def test_schema_has_the_eight_strict_tables(tmp_path: Path) -> None:
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
        }
        assert all(sql.rstrip().endswith("STRICT") for sql in tables.values())
    finally:
        s.close()
