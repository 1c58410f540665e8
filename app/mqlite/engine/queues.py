"""Queue configuration: validation, upsert, listing, generation-fenced deletion.

Queue rows are few and read on every send/claim, so the engine keeps them in an in-memory
catalog (safe: this process is the only writer, guaranteed by the file lock). The catalog is
changed only after the transaction that changed the rows commits.
"""

from __future__ import annotations

import secrets
import sqlite3

from mqlite import defaults, errors
from mqlite.engine import retry
from mqlite.types import OrderingMode, QueueConfig, QueueInfo, QueueKind

MAX_NAME_BYTES = 256
MAX_INT = (1 << 62) - 1
LEGACY_GENERATION = "legacy"

QUEUE_COLUMNS = (
    "name, kind, lock_duration_ms, max_delivery_count, default_ttl_ms, dead_letter_on_expire, "
    "dedup_window_ms, ordering_mode, dlq_max_age_ms, dlq_max_count, dlq_max_bytes, "
    "created_at, updated_at, retry_initial_delay_ms, retry_multiplier, retry_max_delay_ms, "
    "retry_jitter"
)

SELECT_QUEUES_SQL = f"SELECT {QUEUE_COLUMNS} FROM queues ORDER BY name"

SELECT_GENERATIONS_SQL = (
    "SELECT key, value FROM meta WHERE key >= 'generation:' AND key < 'generation;'"
)

# Upsert keeps created_at and (via the meta row) the generation: reconfiguration preserves
# the queue's identity; only DeleteQueue retires it.
UPSERT_QUEUE_SQL = """
INSERT INTO queues (name, kind, lock_duration_ms, max_delivery_count, default_ttl_ms,
                    dead_letter_on_expire, dedup_window_ms, ordering_mode, dlq_max_age_ms,
                    dlq_max_count, dlq_max_bytes, created_at, updated_at,
                    retry_initial_delay_ms, retry_multiplier, retry_max_delay_ms, retry_jitter)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(name) DO UPDATE SET
    lock_duration_ms = excluded.lock_duration_ms,
    max_delivery_count = excluded.max_delivery_count,
    default_ttl_ms = excluded.default_ttl_ms,
    dead_letter_on_expire = excluded.dead_letter_on_expire,
    dedup_window_ms = excluded.dedup_window_ms,
    ordering_mode = excluded.ordering_mode,
    dlq_max_age_ms = excluded.dlq_max_age_ms,
    dlq_max_count = excluded.dlq_max_count,
    dlq_max_bytes = excluded.dlq_max_bytes,
    updated_at = excluded.updated_at,
    retry_initial_delay_ms = excluded.retry_initial_delay_ms,
    retry_multiplier = excluded.retry_multiplier,
    retry_max_delay_ms = excluded.retry_max_delay_ms,
    retry_jitter = excluded.retry_jitter
"""

# EnsureQueue's one conditional write: a new name is inserted, an existing one untouched.
INSERT_QUEUE_IF_ABSENT_SQL = (
    UPSERT_QUEUE_SQL.split("ON CONFLICT")[0] + "ON CONFLICT(name) DO NOTHING"
)

INSERT_GENERATION_SQL = "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)"
SELECT_GENERATION_SQL = "SELECT value FROM meta WHERE key = ?"
DELETE_GENERATION_SQL = "DELETE FROM meta WHERE key = ?"
SELECT_KIND_SQL = "SELECT kind FROM queues WHERE name = ?"

# One probe per state so each is a seek on its partial index (there is deliberately no
# plain index on messages(queue)).
HAS_MESSAGES_SQL = """
SELECT EXISTS (SELECT 1 FROM messages WHERE queue = ?1 AND state = 'active')
    OR EXISTS (SELECT 1 FROM messages WHERE queue = ?1 AND state = 'locked')
    OR EXISTS (SELECT 1 FROM messages WHERE queue = ?1 AND state = 'deferred')
    OR EXISTS (SELECT 1 FROM messages WHERE queue = ?1 AND state = 'scheduled')
    OR EXISTS (SELECT 1 FROM messages WHERE queue = ?1 AND state = 'dead_lettered')
"""

DELETE_QUEUE_SQL = "DELETE FROM queues WHERE name = ?"
DELETE_QUEUE_DEDUP_SQL = "DELETE FROM dedup WHERE queue = ?"
DELETE_QUEUE_RECEIPTS_SQL = "DELETE FROM settlement_receipts WHERE queue = ?"
DELETE_QUEUE_ATTEMPTS_SQL = "DELETE FROM receive_attempts WHERE queue = ?"


def generation_key(name: str) -> str:
    return "generation:" + name


def validate_name(name: object, what: str = "queue name") -> str:
    if not isinstance(name, str) or not name:
        raise errors.InvalidArgument(f"{what} is required")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise errors.InvalidArgument(f"{what} is longer than {MAX_NAME_BYTES} bytes")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name):
        raise errors.InvalidArgument(f"{what} must not contain control characters")
    return name


def _int_field(config: QueueConfig, field: str, *, allow_negative: bool = False) -> int:
    value = getattr(config, field)
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.InvalidArgument(f"{field} must be an integer")
    if value < 0 and not allow_negative:
        raise errors.InvalidArgument(f"{field} must not be negative")
    if abs(value) > MAX_INT:
        raise errors.InvalidArgument(f"{field} is out of range")
    return value


def _dedup_window(config: QueueConfig) -> int:
    window = _int_field(config, "dedup_window_ms")
    if window > defaults.MAX_DEDUP_WINDOW_MS:
        raise errors.InvalidArgument(
            f"dedup_window_ms {window} is above the maximum {defaults.MAX_DEDUP_WINDOW_MS} "
            "(7 days): a queue's dedup rows are kept for its whole window"
        )
    return window


def normalize_config(config: QueueConfig) -> QueueConfig:
    """Validate a config and resolve its zero values to the defaults (CreateQueue table)."""
    if not isinstance(config, QueueConfig):
        raise errors.InvalidArgument("config must be a QueueConfig")
    kind = config.kind or QueueKind.QUEUE
    if kind not in (QueueKind.QUEUE, QueueKind.SUBSCRIPTION):
        raise errors.InvalidArgument(f"unknown kind {config.kind!r} (want queue or subscription)")
    mode = config.ordering_mode or OrderingMode.STANDARD
    if mode not in tuple(OrderingMode):
        raise errors.InvalidArgument(
            f"unknown ordering_mode {config.ordering_mode!r} "
            "(want standard, group_fifo or strict_fifo)"
        )
    if not isinstance(config.dead_letter_on_expire, bool):
        raise errors.InvalidArgument("dead_letter_on_expire must be a boolean")
    lock = _int_field(config, "lock_duration_ms")
    max_dc = _int_field(config, "max_delivery_count")
    dlq = {
        f: _int_field(config, f, allow_negative=True)
        for f in ("dlq_max_age_ms", "dlq_max_count", "dlq_max_bytes")
    }
    initial, multiplier, max_delay, jitter = retry.validate(config, MAX_INT)
    return QueueConfig(
        lock_duration_ms=lock or defaults.LOCK_DURATION_MS,
        max_delivery_count=max_dc or defaults.MAX_DELIVERY_COUNT,
        default_ttl_ms=_int_field(config, "default_ttl_ms"),
        dead_letter_on_expire=config.dead_letter_on_expire,
        dedup_window_ms=_dedup_window(config),
        ordering_mode=str(OrderingMode(mode)),
        # Any negative bound means "unbounded"; store the canonical -1.
        dlq_max_age_ms=max(dlq["dlq_max_age_ms"], -1),
        dlq_max_count=max(dlq["dlq_max_count"], -1),
        dlq_max_bytes=max(dlq["dlq_max_bytes"], -1),
        kind=str(QueueKind(kind)),
        retry_initial_delay_ms=initial,
        retry_multiplier=multiplier,
        retry_max_delay_ms=max_delay,
        retry_jitter=jitter,
    )


def row_to_info(row: tuple[object, ...], generation: str) -> QueueInfo:
    (name, kind, lock, max_dc, ttl, dloe, dedup, mode, age, count, nbytes, created, updated) = row[
        :13
    ]
    initial, multiplier, max_delay, jitter = row[13:17]
    config = QueueConfig(
        lock_duration_ms=int(lock),  # type: ignore[call-overload]
        max_delivery_count=int(max_dc),  # type: ignore[call-overload]
        default_ttl_ms=int(ttl),  # type: ignore[call-overload]
        dead_letter_on_expire=bool(dloe),
        dedup_window_ms=int(dedup),  # type: ignore[call-overload]
        ordering_mode=str(mode),
        dlq_max_age_ms=int(age),  # type: ignore[call-overload]
        dlq_max_count=int(count),  # type: ignore[call-overload]
        dlq_max_bytes=int(nbytes),  # type: ignore[call-overload]
        kind=str(kind),
        retry_initial_delay_ms=int(initial),  # type: ignore[call-overload]
        retry_multiplier=float(multiplier),  # type: ignore[arg-type]
        retry_max_delay_ms=int(max_delay),  # type: ignore[call-overload]
        retry_jitter=float(jitter),  # type: ignore[arg-type]
    )
    return QueueInfo(
        name=str(name),
        config=config,
        generation=generation,
        created_at_ms=int(created),  # type: ignore[call-overload]
        updated_at_ms=int(updated),  # type: ignore[call-overload]
    )


def load_queues(conn: sqlite3.Connection) -> dict[str, QueueInfo]:
    generations = {
        key[len("generation:") :]: value
        for key, value in conn.execute(SELECT_GENERATIONS_SQL).fetchall()
    }
    return {
        row[0]: row_to_info(row, generations.get(row[0], LEGACY_GENERATION))
        for row in conn.execute(SELECT_QUEUES_SQL).fetchall()
    }


def upsert_queue(
    conn: sqlite3.Connection, now_ms: int, name: str, config: QueueConfig
) -> QueueInfo:
    """Write a normalized config; a new name gets a fresh opaque generation."""
    return _write_queue(conn, UPSERT_QUEUE_SQL, now_ms, name, config)[0]


def insert_queue_if_absent(
    conn: sqlite3.Connection, now_ms: int, name: str, config: QueueConfig
) -> tuple[QueueInfo, bool]:
    """EnsureQueue: insert a new queue, leave an existing one exactly as it is; returns
    the queue as stored and whether this call created it."""
    return _write_queue(conn, INSERT_QUEUE_IF_ABSENT_SQL, now_ms, name, config)


def _write_queue(
    conn: sqlite3.Connection, sql: str, now_ms: int, name: str, config: QueueConfig
) -> tuple[QueueInfo, bool]:
    c = config
    cur = conn.execute(
        sql,
        (
            name,
            c.kind,
            c.lock_duration_ms,
            c.max_delivery_count,
            c.default_ttl_ms,
            int(c.dead_letter_on_expire),
            c.dedup_window_ms,
            c.ordering_mode,
            c.dlq_max_age_ms,
            c.dlq_max_count,
            c.dlq_max_bytes,
            now_ms,
            now_ms,
            c.retry_initial_delay_ms,
            c.retry_multiplier,
            c.retry_max_delay_ms,
            c.retry_jitter,
        ),
    )
    written = cur.rowcount == 1
    conn.execute(INSERT_GENERATION_SQL, (generation_key(name), secrets.token_hex(16)))
    row = conn.execute(f"SELECT {QUEUE_COLUMNS} FROM queues WHERE name = ?", (name,)).fetchone()
    gen = conn.execute(SELECT_GENERATION_SQL, (generation_key(name),)).fetchone()
    return row_to_info(row, gen[0]), written


def config_differences(asked: QueueConfig, existing: QueueConfig) -> tuple[str, ...]:
    """The config fields (normalized) in which an existing queue differs from ``asked``."""
    return tuple(f for f in CONFIG_FIELDS if getattr(asked, f) != getattr(existing, f))


CONFIG_FIELDS = (
    "lock_duration_ms",
    "max_delivery_count",
    "default_ttl_ms",
    "dead_letter_on_expire",
    "dedup_window_ms",
    "ordering_mode",
    "dlq_max_age_ms",
    "dlq_max_count",
    "dlq_max_bytes",
    "retry_initial_delay_ms",
    "retry_multiplier",
    "retry_max_delay_ms",
    "retry_jitter",
)


def delete_queue(conn: sqlite3.Connection, name: str, generation: str | None) -> None:
    """Delete an empty plain queue and its auxiliary records, fenced on its generation."""
    row = conn.execute(SELECT_KIND_SQL, (name,)).fetchone()
    if row is None:
        raise errors.QueueNotFound(f"queue {name!r} not found")
    if row[0] != QueueKind.QUEUE:
        raise errors.InvalidArgument(
            f"{name!r} is a subscription's backing queue; remove it with unsubscribe"
        )
    gen_row = conn.execute(SELECT_GENERATION_SQL, (generation_key(name),)).fetchone()
    current = gen_row[0] if gen_row else LEGACY_GENERATION
    if generation is not None and generation != current:
        raise errors.QueueChanged(
            f"queue {name!r} is now a different generation; nothing was deleted"
        )
    if conn.execute(HAS_MESSAGES_SQL, (name,)).fetchone()[0]:
        raise errors.QueueNotEmpty(
            f"queue {name!r} still holds messages (any state blocks deletion); drain it first"
        )
    for sql in (
        DELETE_QUEUE_DEDUP_SQL,
        DELETE_QUEUE_RECEIPTS_SQL,
        DELETE_QUEUE_ATTEMPTS_SQL,
        DELETE_QUEUE_SQL,
    ):
        conn.execute(sql, (name,))
    conn.execute(DELETE_GENERATION_SQL, (generation_key(name),))
