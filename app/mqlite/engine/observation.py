"""The canonical observation's shape (api-reference "Observe"): frozen values the engine
builds, ``mqlite.wire.observability`` mirrors field for field as JSON (a test pins the
two together) and ``server/metrics.py`` renders for Prometheus.

The field names, types and zero-fills are the original's Observe contract
(``spec/observe-wire.md``), so its clients decode ours; our extras (maintenance and storage
diagnostics, replication) are additive fields. Availability is explicit where a value can
be unknown: ``queues`` is None when the collection failed, and the probe and footprint
carry ``read_available`` / ``db_size_available`` beside their zero.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HistogramValue:
    """Cumulative finite buckets (``bucket_counts[i]`` observations took at most
    ``bounds_seconds[i]``); ``count`` is the +Inf bucket. The original's encoding."""

    bounds_seconds: tuple[float, ...]
    bucket_counts: tuple[int, ...]
    count: int
    sum_seconds: float


@dataclass(frozen=True, slots=True)
class Collection:
    state: str  # available | unavailable
    last_success_at_ms: int  # 0 before the first success
    duration_seconds: float
    error_code: str  # "" when available; else a storage category


@dataclass(frozen=True, slots=True)
class QueueGauges:
    queue: str
    kind: str  # queue | subscription
    active: int
    locked: int
    deferred: int
    scheduled: int
    dead_lettered: int
    unexpected: int  # rows outside the five normal states
    total: int  # every row: the five states plus the unexpected ones
    oldest_message_age_ms: int  # oldest active/locked row's enqueue age; 0 if none


@dataclass(frozen=True, slots=True)
class Runtime:
    schema_version: str
    ping_seconds: float  # the read probe's round trip; 0 when it failed (read_available)
    read_available: bool
    db_size_bytes: int  # 0 for memory/remote or when unmeasurable (db_size_available)
    db_size_available: bool


@dataclass(frozen=True, slots=True)
class MessageEffect:
    queue: str
    event: str
    count: int


@dataclass(frozen=True, slots=True)
class ErrorDetail:
    at_ms: int
    category: str
    explanation: str  # generated from the category: never the raw driver text
    fingerprint: str
    sqlite_code: int | None


@dataclass(frozen=True, slots=True)
class StorageOperation:
    operation: str  # read | write | transaction
    outcome: str  # ok | error | rejected | outcome_unknown
    error_code: str
    count: int
    retries: int
    duration: HistogramValue
    last_error: ErrorDetail | None


@dataclass(frozen=True, slots=True)
class Pool:
    max_open: int
    open: int
    in_use: int
    idle: int
    wait_count: int
    wait_duration_seconds: float


@dataclass(frozen=True, slots=True)
class Storage:
    operations: tuple[StorageOperation, ...]
    pool: Pool


@dataclass(frozen=True, slots=True)
class StepDiagnostic:
    at_ms: int
    step: str
    category: str
    explanation: str
    fingerprint: str
    sqlite_code: int | None


@dataclass(frozen=True, slots=True)
class MaintenanceTask:
    task: str
    enabled: bool
    runs: int  # every pass: successes, failures and interruptions
    interrupted: int
    failures: int  # failed passes (a pass failing at several steps counts once)
    duration: HistogramValue  # one observation per pass: count == runs
    last_run_at_ms: int
    last_outcome: str  # never | ok | failed | interrupted
    last_success_at_ms: int
    consecutive_failures: int
    recovered_at_ms: int
    diagnostics: tuple[StepDiagnostic, ...]  # the latest eight failed steps, oldest first


@dataclass(frozen=True, slots=True)
class FilterFailure:
    stage: str  # compile | evaluate
    count: int


@dataclass(frozen=True, slots=True)
class RpcRequests:
    rpc: str
    code: str  # "ok" or the error envelope's code
    count: int
    duration_seconds: float  # cumulative whole-request time, authentication included


@dataclass(frozen=True, slots=True)
class AuthOutcome:
    outcome: str
    count: int


@dataclass(frozen=True, slots=True)
class LatencyBucket:
    upper_bound_seconds: float
    count: int  # cumulative


@dataclass(frozen=True, slots=True)
class HandlerLatency:
    """Post-authentication handler time of one RPC (the original's own bucket encoding)."""

    rpc: str
    buckets: tuple[LatencyBucket, ...]
    count: int
    sum_seconds: float


@dataclass(frozen=True, slots=True)
class Http:
    state: str  # available | not_applicable (embedded)
    requests: tuple[RpcRequests, ...]
    authentication: tuple[AuthOutcome, ...]
    handler_latency: tuple[HandlerLatency, ...]


NOT_APPLICABLE = Http("not_applicable", (), (), ())


@dataclass(frozen=True, slots=True)
class Replication:
    """Off-site replication by Litestream (docs/replication.md), measured by the server
    from Litestream's control socket: ``disabled`` without MQLITE_REPLICA_URL,
    ``unavailable`` when Litestream does not answer (then nothing is known)."""

    state: str  # disabled | available | unavailable
    last_sync_at_ms: int | None  # Litestream's last successful sync to the replica
    lag_seconds: float | None  # sampled_at - last_sync_at: how much could be lost now


REPLICATION_DISABLED = Replication("disabled", None, None)


@dataclass(frozen=True, slots=True)
class ScheduleMeasure:
    """One cron schedule (engine/schedule_measures.py): slots sent since the engine
    started, and how far behind its timetable it is."""

    schedule: str
    fired: int
    lag_seconds: float  # a due, unsent slot: now - slot; else its latest firing's lag (10 min)


@dataclass(frozen=True, slots=True)
class Schedules:
    """The cron schedules block: whether the read of due slots worked, how many schedules
    have a due slot not yet sent, and each schedule that fired since start or is due."""

    state: str  # available | unavailable
    overdue: int
    schedules: tuple[ScheduleMeasure, ...]


NO_SCHEDULES = Schedules("available", 0, ())


@dataclass(frozen=True, slots=True)
class PushDelivery:
    """Push attempts of one target (docs/push.md) ended with one outcome since start:
    ``delivered`` (2xx), ``retry`` (abandoned for the retry policy), ``rejected``
    (dead-lettered as PushRejected)."""

    queue: str
    outcome: str
    count: int


@dataclass(frozen=True, slots=True)
class PushDuration:
    """How long one target's POSTs took (connect to the last byte read)."""

    queue: str
    duration: HistogramValue


@dataclass(frozen=True, slots=True)
class Pushes:
    deliveries: tuple[PushDelivery, ...]
    durations: tuple[PushDuration, ...]


NO_PUSHES = Pushes((), ())


@dataclass(frozen=True, slots=True)
class Observation:
    sampled_at_ms: int
    started_at_ms: int
    backend: str
    version: str
    access: str  # manage | monitor | anonymous | embedded
    collection: Collection
    queue_count: int  # rows of ``queues`` of kind queue (0 while they are unknown)
    subscription_count: int
    queues: tuple[QueueGauges, ...] | None  # None exactly when the collection failed
    runtime: Runtime
    messages: tuple[MessageEffect, ...]
    storage: Storage
    maintenance: tuple[MaintenanceTask, ...]
    filters: tuple[FilterFailure, ...]
    http: Http
    replication: Replication = REPLICATION_DISABLED
    schedules: Schedules = NO_SCHEDULES
    pushes: Pushes = NO_PUSHES
