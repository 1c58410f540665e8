"""Schema migrations: an older database is brought to ``SCHEMA_VERSION`` at open, in the
same transaction that checks it, or refused if no path leads there.

Token 5 is the original's v0.3.x schema (and ours before bodies moved out): going to 6
only adds a column (``ALTER TABLE ... ADD COLUMN``, O(1): no row is rewritten) and the
``bodies`` table (created by the ordinary ``CREATE TABLE IF NOT EXISTS`` pass). Rows keep
their inline bodies; new large ones go to ``bodies``. Going from 6 to 7 only adds the
``schedules`` table (cron schedules), again by the ordinary ``CREATE ... IF NOT EXISTS``
pass; 7 -> 8 adds the queue retry policy and the message's last error, columns only;
8 -> 9 adds the access keys' queue scopes and rate limits, columns only (existing keys stay
unscoped and use the broker default rate); 9 -> 10 adds the ``audit_log`` table (the audit
trail), again by the schema pass; 10 -> 11 only adds the ``push_targets`` table (push
delivery), by the schema pass. Every step is additive, so a failure rolls back
to the untouched old database.
"""

from __future__ import annotations

import sqlite3

from mqlite import errors

# from-token -> (to-token, statements run before the schema's own CREATE ... IF NOT EXISTS)
STEPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "5": (
        "6",
        ("ALTER TABLE messages ADD COLUMN external_body_bytes INTEGER NOT NULL DEFAULT 0",),
    ),
    "6": ("7", ()),  # the schedules table and its index: created by the schema pass
    # The queue retry policy and the last error of a message: columns only, O(1).
    "7": (
        "8",
        (
            "ALTER TABLE queues ADD COLUMN retry_initial_delay_ms INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE queues ADD COLUMN retry_multiplier REAL NOT NULL DEFAULT 2.0",
            "ALTER TABLE queues ADD COLUMN retry_max_delay_ms INTEGER NOT NULL DEFAULT 900000",
            "ALTER TABLE queues ADD COLUMN retry_jitter REAL NOT NULL DEFAULT 0.0",
            "ALTER TABLE messages ADD COLUMN last_error TEXT",
            "ALTER TABLE messages ADD COLUMN last_error_at INTEGER NOT NULL DEFAULT 0",
        ),
    ),
    # Key scopes and per-key rate limits (issue 35): columns only, O(1).
    "8": (
        "9",
        (
            "ALTER TABLE access_keys ADD COLUMN queues TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE access_keys ADD COLUMN rate_limit_per_s INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE access_keys ADD COLUMN burst INTEGER NOT NULL DEFAULT 0",
        ),
    ),
    "9": ("10", ()),  # the audit_log table and its indexes: created by the schema pass
    "10": ("11", ()),  # push targets (issue 34): the push_targets table, by the schema pass
}

SET_VERSION_SQL = "UPDATE meta SET value = ? WHERE key = 'schema_version'"


def plan(found: str, target: str) -> list[str]:
    """The tokens from ``found`` to ``target``; ``SchemaVersionMismatch`` when there is no
    path (a newer database, or a foreign token). Reads nothing, writes nothing."""
    path, token = [], found
    while token != target:
        step = STEPS.get(token)
        if step is None:
            known = ", ".join(sorted(STEPS, key=int)) or "nothing"
            raise errors.SchemaVersionMismatch(
                f"database schema version {found!r} cannot be opened by this mqlite (it reads "
                f"{target!r} and migrates from {known}); keep the database with the binary "
                "that wrote it"
            )
        token = step[0]
        path.append(token)
    return path


def migrate(conn: sqlite3.Connection, found: str, target: str) -> list[str]:
    """Run every step from ``found`` to ``target`` on ``conn``, inside the caller's
    transaction; returns the tokens passed through."""
    path = plan(found, target)
    token = found
    for nxt in path:
        for stmt in STEPS[token][1]:
            conn.execute(stmt)
        token = nxt
    conn.execute(SET_VERSION_SQL, (target,))
    return path
