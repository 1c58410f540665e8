"""The single source of every default, limit and cadence (spec: api-reference limits,
original-behaviour §2-§8). Packaging files cannot import these; drift tests compare them."""

from __future__ import annotations

PORT = 6754

# Queue configuration defaults (CreateQueue; 0 on the wire means "take the default").
LOCK_DURATION_MS = 30_000
MAX_DELIVERY_COUNT = 10

# Limits.
MAX_MESSAGE_BYTES = 1 << 20  # body cap per message (MQLITE_MAX_MESSAGE_BYTES)
MAX_REQUEST_BYTES = 32 << 20  # whole HTTP request body
MAX_RECEIVE_MESSAGES = 256
MAX_WAIT_MS = 20_000
PEEK_DEFAULT_MAX = 32
PEEK_MAX = 1000
RESPONSE_BYTE_BUDGET = 32 << 20  # Receive/Peek stop after crossing this many encoded bytes
RENEW_BATCH_MAX = 512

# Work one request may ask for (hardening: every batch and every stored string is bounded,
# so no single call can hold the writer for long or grow a row without limit).
MAX_SEND_MESSAGES = 10_000  # messages per Send/Schedule call
MAX_FANOUT_ROWS = 10_000  # messages x subscriptions of one publish
MAX_SETTLE_BATCH = 10_000  # items per CompleteBatch
MAX_PROPERTIES = 256  # application properties per message
MAX_FIELD_BYTES = 4096  # each of message_id, group_id, subject, correlation_id, ...
MAX_METADATA_BYTES = 64 << 10  # all string fields + property keys and values of one message

# Idempotency records.
SETTLEMENT_RECEIPT_TTL_MS = 30 * 60 * 1000
RECEIVE_ATTEMPT_MIN_TTL_MS = 5 * 60 * 1000

# Background cadences (first run one interval after start).
REAPER_INTERVAL_MS = 1_000
SCHEDULER_INTERVAL_MS = 1_000
TTL_INTERVAL_MS = 10_000
JANITOR_INTERVAL_MS = 60_000

# DLQ retention: per pass, per dimension, per queue.
DLQ_DELETE_BATCH = 1000
DLQ_MAX_BATCHES = 100

# Free-page reclaim threshold (pages on the freelist).
RECLAIM_FREELIST_PAGES = 256

# Disk space (engine/disk.py): sends stop while less than the floor is free, so consumers
# can always drain; the reserve file is released when the disk fills anyway.
DISK_FLOOR_BYTES = 32 << 20  # MQLITE_DISK_FLOOR_BYTES
DISK_RESERVE_BYTES = 8 << 20  # MQLITE_DISK_RESERVE_BYTES
DISK_TEND_INTERVAL_MS = 10_000  # how often the reserve is checked and recreated

BUSY_TIMEOUT_MS = 5_000
SYNC_MODES = ("NORMAL", "FULL", "OFF", "EXTRA")
DEFAULT_SYNC = "NORMAL"

# Filters (concepts §10).
FILTER_MAX_SOURCE_BYTES = 4096
FILTER_MAX_AST_NODES = 1000
FILTER_PUBLISH_BUDGET_MS = 2000  # all filter evaluations of one Send (else 400, nothing sent)
