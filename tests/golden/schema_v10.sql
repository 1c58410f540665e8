-- mqlite canonical schema, guard token 9 (meta.schema_version). A token-5 database (the
-- original's v0.3.x) or a token-6, 7 or 8 one is migrated at open by engine/migrations.py;
-- any other token is refused.
-- Content pinned by tests/golden (hash + sqlite_master).
-- One statement per ";"-terminated block; all times are INTEGER epoch milliseconds (UTC).

CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

-- The retry policy (engine/retry.py; off while retry_initial_delay_ms is 0) is the last
-- line of columns, written exactly as migration 7 -> 8 appends them (ALTER TABLE ... ADD
-- COLUMN), so a migrated database's stored DDL equals a fresh one's (tests/golden).
CREATE TABLE IF NOT EXISTS queues (
    name                  TEXT PRIMARY KEY,
    kind                  TEXT NOT NULL DEFAULT 'queue' CHECK (kind IN ('queue','subscription')),
    lock_duration_ms      INTEGER NOT NULL DEFAULT 30000,
    max_delivery_count    INTEGER NOT NULL DEFAULT 10,
    default_ttl_ms        INTEGER NOT NULL DEFAULT 0,
    dead_letter_on_expire INTEGER NOT NULL DEFAULT 1,
    dedup_window_ms       INTEGER NOT NULL DEFAULT 0,
    ordering_mode         TEXT NOT NULL DEFAULT 'standard'
                              CHECK (ordering_mode IN ('standard','group_fifo','strict_fifo')),
    dlq_max_age_ms        INTEGER NOT NULL DEFAULT 0,
    dlq_max_count         INTEGER NOT NULL DEFAULT 0,
    dlq_max_bytes         INTEGER NOT NULL DEFAULT 0,
    created_at            INTEGER NOT NULL,
    updated_at            INTEGER NOT NULL
, retry_initial_delay_ms INTEGER NOT NULL DEFAULT 0, retry_multiplier REAL NOT NULL DEFAULT 2.0, retry_max_delay_ms INTEGER NOT NULL DEFAULT 900000, retry_jitter REAL NOT NULL DEFAULT 0.0) STRICT;

-- Topics are not stored anywhere else: a topic exists iff it has rows here.
CREATE TABLE IF NOT EXISTS subscriptions (
    topic        TEXT NOT NULL,
    subscription TEXT NOT NULL,
    filter_json  TEXT,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (topic, subscription),
    FOREIGN KEY (subscription) REFERENCES queues(name) ON DELETE CASCADE
) STRICT;

CREATE INDEX IF NOT EXISTS idx_subs_by_topic ON subscriptions(topic);

CREATE INDEX IF NOT EXISTS idx_subs_by_subscription ON subscriptions(subscription);

-- last_error / last_error_at: the error of the last failed delivery (Abandon's error, or
-- 'lock expired') and when; NULL / 0 while none failed. The last line of columns, written
-- exactly as migration 7 -> 8 appends them (see queues above).
-- id = seq_number: AUTOINCREMENT so a sequence number is never reused, even after delete
-- or VACUUM (the high-water mark lives in sqlite_sequence).
CREATE TABLE IF NOT EXISTS messages (
    id                      INTEGER PRIMARY KEY AUTOINCREMENT,
    queue                   TEXT NOT NULL REFERENCES queues(name) ON DELETE CASCADE,
    state                   TEXT NOT NULL DEFAULT 'active'
                                CHECK (state IN ('active','locked','deferred','scheduled',
                                                 'completed','dead_lettered')),
    visible_at              INTEGER NOT NULL DEFAULT 0,
    locked_until            INTEGER NOT NULL DEFAULT 0,
    lock_token              TEXT,
    delivery_count          INTEGER NOT NULL DEFAULT 0,
    enqueued_at             INTEGER NOT NULL,
    expires_at              INTEGER NOT NULL DEFAULT 0,
    message_id              TEXT,
    correlation_id          TEXT,
    reply_to                TEXT,
    group_id                TEXT,
    content_type            TEXT,
    subject                 TEXT,
    properties              TEXT,
    body                    BLOB NOT NULL,
    dead_letter_reason      TEXT,
    dead_letter_description TEXT,
    -- 0: the body is inline in `body`. N > 0: `body` is empty and the N-byte body lives in
    -- `bodies`, so a claim or settlement rewrites a small row, never a large body (write
    -- amplification; consumers can still drain a nearly full disk). Added by migration 5->6.
    external_body_bytes     INTEGER NOT NULL DEFAULT 0
, last_error TEXT, last_error_at INTEGER NOT NULL DEFAULT 0) STRICT;

-- Large bodies, keyed by their message's id and deleted with it.
CREATE TABLE IF NOT EXISTS bodies (
    id   INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    body BLOB NOT NULL
) STRICT;

-- One partial index per state, so every probe is a single state equality the planner
-- can match (a state IN (...) or OR of states plans as a rowid scan: O(n^2) drains).
CREATE INDEX IF NOT EXISTS idx_msg_active ON messages(queue, id) WHERE state = 'active';

CREATE INDEX IF NOT EXISTS idx_msg_locked ON messages(state, locked_until) WHERE state = 'locked';

CREATE INDEX IF NOT EXISTS idx_msg_scheduled ON messages(state, visible_at) WHERE state = 'scheduled';

CREATE INDEX IF NOT EXISTS idx_msg_deferred ON messages(queue, id) WHERE state = 'deferred';

CREATE INDEX IF NOT EXISTS idx_msg_expire ON messages(expires_at) WHERE expires_at > 0;

CREATE INDEX IF NOT EXISTS idx_msg_dlq ON messages(queue, id) WHERE state = 'dead_lettered';

CREATE INDEX IF NOT EXISTS idx_msg_group_inflight ON messages(queue, group_id, state, id)
    WHERE group_id IS NOT NULL;

CREATE INDEX IF NOT EXISTS idx_msg_sched_head ON messages(queue, id) WHERE state = 'scheduled';

CREATE INDEX IF NOT EXISTS idx_msg_locked_head ON messages(queue, id) WHERE state = 'locked';

CREATE TABLE IF NOT EXISTS dedup (
    queue        TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    request_hash TEXT,
    seq_number   INTEGER NOT NULL,
    seen_at      INTEGER NOT NULL,
    PRIMARY KEY (queue, message_id)
) STRICT;

-- Per queue by age: the janitor prunes each queue by its own window with one seek per
-- queue (it replaced idx_dedup_seen, a global seen_at index pruned by the widest window).
DROP INDEX IF EXISTS idx_dedup_seen;
CREATE INDEX IF NOT EXISTS idx_dedup_queue_seen ON dedup(queue, seen_at);

-- A receipt identifies the REQUEST it vouches for (queue, seq, token, verb, effect args),
-- not merely the token: anything looser vouches for a call that never happened.
CREATE TABLE IF NOT EXISTS settlement_receipts (
    lock_token TEXT NOT NULL,
    queue      TEXT NOT NULL,
    seq_number INTEGER NOT NULL,
    operation  TEXT NOT NULL,
    args       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (queue, seq_number, lock_token, operation, args)
) STRICT;

CREATE INDEX IF NOT EXISTS idx_settlement_expire ON settlement_receipts(expires_at);

CREATE TABLE IF NOT EXISTS receive_attempts (
    queue      TEXT NOT NULL,
    attempt_id TEXT NOT NULL,
    response   TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (queue, attempt_id)
) STRICT;

CREATE INDEX IF NOT EXISTS idx_recv_attempt_expire ON receive_attempts(expires_at);

-- Managed access keys: only the SHA-256 digest of a token is stored, never the token.
CREATE TABLE IF NOT EXISTS access_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE,
    permissions  TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL DEFAULT 0,
    revoked_at   INTEGER NOT NULL DEFAULT 0
    -- Queue-name patterns the key is confined to, one per line ('' = every queue), and its
    -- token-bucket rate limit (0 = the broker default): added by the 8 -> 9 migration, laid
    -- out as its ALTER TABLE statements leave the table's text (the golden dump compares).
    , queues           TEXT NOT NULL DEFAULT '',
    rate_limit_per_s INTEGER NOT NULL DEFAULT 0,
    burst            INTEGER NOT NULL DEFAULT 0) STRICT;

CREATE INDEX IF NOT EXISTS idx_access_keys_created ON access_keys(created_at, id);

-- Cron schedules (engine/schedules.py, docs/cron.md). A firing sends the stored message
-- and records its slot (last_slot, next_fire_at) in the SAME transaction, so a crash
-- between them cannot fire a slot twice or lose it. Added by migration 6->7.
CREATE TABLE IF NOT EXISTS schedules (
    name           TEXT PRIMARY KEY,
    cron           TEXT NOT NULL,
    timezone       TEXT NOT NULL DEFAULT 'UTC',
    queue          TEXT NOT NULL,
    body           BLOB NOT NULL,
    subject        TEXT NOT NULL DEFAULT '',
    content_type   TEXT NOT NULL DEFAULT '',
    correlation_id TEXT NOT NULL DEFAULT '',
    reply_to       TEXT NOT NULL DEFAULT '',
    group_id       TEXT NOT NULL DEFAULT '',
    properties     TEXT NOT NULL DEFAULT '{}',
    catch_up       TEXT NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest','skip')),
    paused         INTEGER NOT NULL DEFAULT 0,
    next_fire_at   INTEGER NOT NULL,
    last_slot      INTEGER NOT NULL DEFAULT 0,
    last_fired_at  INTEGER NOT NULL DEFAULT 0,
    fired          INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT;

-- The firing pass seeks due, unpaused schedules in (next_fire_at, name) order.
CREATE INDEX IF NOT EXISTS idx_schedules_due ON schedules(next_fire_at, name) WHERE paused = 0;

-- The audit trail (engine/audit.py, docs/operations.md "Audit trail"): one row per change
-- of state that is not a message operation (a queue created or deleted, a subscription, a
-- purge, a redrive, a key, a schedule), written in the SAME transaction as the change, so
-- a rolled-back or crashed change leaves no row and a committed one always has its row.
-- Never a token or a message body. AUTOINCREMENT: an id is never reused after retention
-- deleted the newest rows, so an ``after_id`` cursor cannot skip a later row. Added by
-- migration 9 -> 10.
CREATE TABLE IF NOT EXISTS audit_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         INTEGER NOT NULL,
    actor      TEXT NOT NULL,
    request_id TEXT NOT NULL DEFAULT '',
    action     TEXT NOT NULL,
    queue      TEXT NOT NULL DEFAULT '',
    detail     TEXT NOT NULL DEFAULT '{}'
) STRICT;

-- ListAudit by queue, and retention by age (the oldest rows first, whatever their ids).
CREATE INDEX IF NOT EXISTS idx_audit_queue ON audit_log(queue, id);
CREATE INDEX IF NOT EXISTS idx_audit_at ON audit_log(at);
