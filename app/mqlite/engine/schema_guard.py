"""The schema guard: what an open checks on reads only, before anything is written, so a
database this binary must not touch is refused byte for byte as it was (store.py)."""

from __future__ import annotations

import sqlite3

from mqlite import errors
from mqlite.engine import migrations

SCHEMA_VERSION = "11"

# Columns an access_keys table must have for this binary to accept a database that has one.
_ACCESS_KEYS_COLUMNS = (
    "id",
    "name",
    "token_sha256",
    "permissions",
    "created_at",
    "expires_at",
    "revoked_at",
)
# Added by the 8 -> 9 migration (key scopes and rate limits): an older database lacks them.
_ACCESS_KEYS_COLUMNS_9 = (*_ACCESS_KEYS_COLUMNS, "queues", "rate_limit_per_s", "burst")


def check_guard(conn: sqlite3.Connection) -> str | None:
    """Refuse a foreign schema token (or an unrelated ``access_keys`` table) before any
    write; the token found (None: a new or non-mqlite-yet database)."""
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
    ).fetchone()
    found: str | None = None
    if has_meta:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        found = None if row is None else str(row[0])
        if found is not None and found != SCHEMA_VERSION:
            migrations.plan(found, SCHEMA_VERSION)  # refuse a foreign token before any DDL
    cols = [r[1] for r in conn.execute("PRAGMA table_info(access_keys)").fetchall()]
    if cols and tuple(cols) not in (_ACCESS_KEYS_COLUMNS, _ACCESS_KEYS_COLUMNS_9):
        raise errors.SchemaVersionMismatch(
            "database has an unrelated table named access_keys; refusing to modify it"
        )
    return found
