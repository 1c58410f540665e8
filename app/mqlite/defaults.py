"""The single source of every default, limit and cadence (spec: api-reference limits,
original-behaviour §2-§8). Packaging files cannot import these; drift tests compare them."""

from __future__ import annotations

PORT = 6754

# Queue configuration defaults (CreateQueue; 0 on the wire means "take the default").
LOCK_DURATION_MS = 30_000
MAX_DELIVERY_COUNT = 10
# The queue retry policy (engine/retry.py): off unless retry_initial_delay_ms > 0.
RETRY_MULTIPLIER = 2.0
RETRY_MAX_DELAY_MS = 15 * 60 * 1000
RETRY_MULTIPLIER_MAX = 1000.0  # a larger factor only reaches the cap sooner

# Limits.
MAX_MESSAGE_BYTES = 1 << 20  # body cap per message (MQLITE_MAX_MESSAGE_BYTES)
MAX_REQUEST_BYTES = 32 << 20  # whole HTTP request body
# The largest body a broker can honour: a one-message Send carries it in base64 (4 bytes
# per 3) inside a request of MAX_REQUEST_BYTES, beside the JSON envelope and up to
# MAX_METADATA_BYTES of metadata (+4 KiB of keys and punctuation). serve refuses a larger
# MQLITE_MAX_MESSAGE_BYTES at start-up: the cap would promise what no request can carry.
MAX_HONOURED_MESSAGE_BYTES = (MAX_REQUEST_BYTES - (64 << 10) - 4096) // 4 * 3
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
MAX_DLQ_SELECTION = 1000  # seq_numbers one Redrive/Purge may name (the console's selection)
MAX_PROPERTIES = 256  # application properties per message
MAX_FIELD_BYTES = 4096  # each of message_id, group_id, subject, correlation_id, ...
MAX_METADATA_BYTES = 64 << 10  # all string fields + property keys and values of one message
MAX_ERROR_BYTES = 4096  # Abandon's error (UTF-8): kept with the message as last_error
# A queue's dedup window (CreateQueue dedup_window_ms): its rows are kept this long, so
# the bound is also what one queue's dedup table can cost (7 days, Service Bus's maximum).
MAX_DEDUP_WINDOW_MS = 7 * 24 * 60 * 60 * 1000

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
# The audit trail's retention (engine/audit.py): MQLITE_AUDIT_RETENTION / _MAX_ROWS.
AUDIT_MAX_AGE_MS = 90 * 24 * 3600 * 1000
AUDIT_MAX_ROWS = 1_000_000
DLQ_MAX_BATCHES = 100

# Free-page reclaim threshold (pages on the freelist).
RECLAIM_FREELIST_PAGES = 256

# Disk space (engine/disk.py): sends stop while less than the floor is free, so consumers
# can always drain; the reserve file is released when the disk fills anyway.
DISK_FLOOR_BYTES = 32 << 20  # MQLITE_DISK_FLOOR_BYTES
DISK_RESERVE_BYTES = 8 << 20  # MQLITE_DISK_RESERVE_BYTES
DISK_TEND_INTERVAL_MS = 10_000  # how often the reserve is checked and recreated

BUSY_TIMEOUT_MS = 5_000
# A remote libSQL server must answer each exchange (connect, send, each read) within this:
# a stalled server fails the call (a storage "io" error; a COMMIT's is outcome_unknown).
REMOTE_TIMEOUT_S = 10.0
# DSN schemes of a remote libSQL server (engine/remote.py; config.py checks
# MQLITE_DB_REPLICA against them): Turso's libsql:// (TLS), https://, and http:// for a
# self-hosted sqld on a trusted network.
REMOTE_DB_SCHEMES = ("libsql", "https", "http")
# Transient remote failures are retried after these pauses, only where that is safe
# (engine/remote.py) and only while the first attempt's REMOTE_TIMEOUT_S lasts: a
# refused connection fails the call after ~1 s, a stalled server within 2 timeouts.
REMOTE_RETRY_BACKOFF_S = (0.05, 0.2, 0.8)
# After a call spent those retries on a server that refused every connection, later calls
# in this window fail at once instead of each paying ~1 s of pauses (on the one writer,
# callers in line would wait that long each): an outage is answered in ~1 s, not N.
REMOTE_FAIL_FAST_S = 1.0
# Read scale-out (MQLITE_DB_REPLICA): connections to the replica beside the one writer's,
# so the remote store's pool is 4 connections, as docs/architecture.md ("One writer") has it.
REPLICA_CONNECTIONS = 3
# One broker per remote database (engine/lease.py): the lease row lives 30 s and is renewed
# every 10 s, so two renewals in a row can fail (a server restart) before it lapses.
LEASE_TTL_MS = 30_000
LEASE_RENEW_INTERVAL_MS = 10_000
SYNC_MODES = ("NORMAL", "FULL", "OFF", "EXTRA")
DEFAULT_SYNC = "NORMAL"

# Filters (concepts §10).
FILTER_MAX_SOURCE_BYTES = 4096
FILTER_MAX_AST_NODES = 1000
FILTER_PUBLISH_BUDGET_MS = 2000  # all filter evaluations of one Send (else 400, nothing sent)

# The HTTP servers (httpguard/protocol.py, the broker's and mqlite-mcp --http's;
# server/intake.py): what one client may hold or send before anything is authenticated,
# and what all clients together may make the worker buffer. Every bound answers a JSON
# envelope (docs/http.md "Limits").
MAX_HEAD_BYTES = 16 << 10  # request line + headers of one request (431 over it)
HEAD_TIMEOUT_S = 5.0  # a request head must be complete this long after connecting or
# after the previous response (idle keep-alive and half-sent heads are closed)
BODY_TIMEOUT_S = 60.0  # the whole body of one request, from its head (the original's ReadTimeout)
MAX_CONNECTIONS = 4096  # open connections (503 over it); MQLITE_MAX_CONNECTIONS
FD_RESERVE = 64  # descriptors kept free of connections (database, WAL, logs, listener)
# Shares of the connection cap (server/shares.py, docs/http.md "Connection shares"): no
# credential can take every slot. Percentages of the effective cap, each at least 1.
CONNECTION_RESERVE_PERCENT = 5  # kept for configured admin tokens and /healthz (min 2)
CREDENTIAL_SHARE_PERCENT = 25  # requests in flight of one credential (not an admin token)
PARKED_SHARE_PERCENT = 10  # of which long polls (Receive with wait_time_ms) at once
ANSWERED_BODY_LINGER_S = 1.0  # a request answered before its body arrived (a refusal,
# /healthz): the rest of its body must follow within this, uncounted, or it is closed
LARGE_BODY_BYTES = 1 << 20  # bodies over this are decoded on a worker thread and
# reserve their size from the in-flight budget below before they are read
MAX_INFLIGHT_BODY_BYTES = 64 << 20  # large request bodies buffered at once, all clients
INFLIGHT_WAIT_S = 30.0  # a large request waits this long for the budget, then 503
MAX_REQUEST_ITEMS = 1 << 18  # ',' and ':' in one request body (bounds its decode work)
LOG_FIELD_MAX_CHARS = 256  # an access-log field (queue name, path, ...) is clipped here

# Cron schedules (engine/schedules.py, engine/schedule_firing.py, docs/cron.md).
MAX_SCHEDULES = 10_000  # schedules per database (CreateSchedule of one more: 400)
MAX_SCHEDULE_NAME_CHARS = 128  # [A-Za-z0-9._-]
CRON_INTERVAL_MS = 1_000  # how often the maintenance loop fires due slots
CRON_FIRE_BATCH = 64  # due schedules per writer transaction (a producer waits <= one)
CRON_BATCH_PAUSE_MS = 5  # between two batches of one pass (see schedule_firing.py)
CRON_SKIP_GRACE_MS = 60_000  # catch_up=skip: a slot found later than this was missed

# Push delivery (engine/push.py, docs/push.md): per target bounds and defaults.
PUSH_MAX_IN_FLIGHT = 8  # concurrent POSTs of one standard queue's target
PUSH_MAX_IN_FLIGHT_LIMIT = 256
PUSH_TIMEOUT_MS = 10_000  # one POST, connect to the last byte read
PUSH_TIMEOUT_MIN_MS = 100
PUSH_TIMEOUT_MAX_MS = 60_000
PUSH_MAX_SECRET_CHARS = 256
PUSH_MAX_RESPONSE_BYTES = 64 * 1024  # read of a receiver's answer; the rest is dropped
