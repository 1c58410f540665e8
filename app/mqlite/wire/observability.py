"""AdminService/Observe: the canonical observation as JSON (api-reference "Observe").

The shape is the original's (``spec/observe-wire.md``): its v0.3.2+ SDK, CLI and MCP
decoders refuse an answer missing any of its fields, so every one is here, zeros included;
ours (maintenance diagnostics, storage ``count``/``last_error``, ``replication``) are
additive fields, which those decoders accept. The Structs mirror
``mqlite.engine.observation`` field for field (the engine may not import the wire, nor the
wire the engine; ``tests/wire/test_wire_observe.py`` pins the two shapes together).
Durations are seconds, timestamps epoch milliseconds. ``queues`` is ``null`` exactly while
the collection is unavailable; a failed probe or an unmeasurable footprint is a 0 beside
``read_available`` / ``db_size_available`` false. ``ObserveResponse.check`` refuses an
observation that breaks the contract's consistency rules (the SDK applies it to every
answer); ``tests/wire/original_observe_decoder.py`` ports the original's decoder.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import field

from mqlite import errors
from mqlite import types as t

from .admin_service import EmptyRequest
from .base import I64, Doc, Route, Snapshot


class HistogramJSON(Snapshot):
    """Cumulative finite buckets (bounds 0.001 … 20 s); ``count`` is the +Inf bucket."""

    bounds_seconds: Annotated[tuple[float, ...], Doc("upper bounds, increasing")] = ()
    bucket_counts: Annotated[tuple[I64, ...], Doc("cumulative, one per bound")] = ()
    count: I64 = 0
    sum_seconds: float = 0.0


class CollectionJSON(Snapshot):
    """The queue collection's availability and freshness."""

    state: Annotated[str, Doc("available | unavailable")] = "unavailable"
    last_success_at_ms: Annotated[I64, Doc("0 before the first success")] = 0
    duration_seconds: float = 0.0
    error_code: Annotated[str, Doc("bounded storage category; empty when available")] = ""


class QueueGaugesJSON(Snapshot):
    """Retained rows of one queue, by state (stored states, not claim eligibility)."""

    queue: str = ""
    kind: Annotated[str, Doc("queue | subscription")] = ""
    active: I64 = 0
    locked: I64 = 0
    deferred: I64 = 0
    scheduled: I64 = 0
    dead_lettered: I64 = 0
    unexpected: Annotated[I64, Doc("rows outside the five normal states")] = 0
    total: Annotated[I64, Doc("every row: the sum of the six counts")] = 0
    oldest_message_age_ms: Annotated[I64, Doc("oldest active/locked row; 0 if none")] = 0


class RuntimeJSON(Snapshot):
    """Schema version, the read probe and the local footprint (no DSN, no path)."""

    schema_version: str = ""
    ping_seconds: Annotated[float, Doc("read probe round trip; 0 when it failed")] = 0.0
    read_available: bool = False
    db_size_bytes: Annotated[I64, Doc("db + WAL + SHM; 0 unless db_size_available")] = 0
    db_size_available: bool = False


class MessageEffectJSON(Snapshot):
    """Committed effects of one event on one queue since the engine started."""

    queue: str = ""
    event: str = ""
    count: I64 = 0


class ErrorDetailJSON(Snapshot):
    """The latest failure of a storage bucket (generated text, never the raw error)."""

    at_ms: I64 = 0
    category: str = ""
    explanation: str = ""
    fingerprint: str = ""
    sqlite_code: I64 | None = None


class StorageOperationJSON(Snapshot):
    """Storage operations of one (operation, outcome, error_code) bucket."""

    operation: Annotated[str, Doc("read | write | transaction")] = ""
    outcome: Annotated[str, Doc("ok | error | rejected | outcome_unknown")] = ""
    error_code: str = ""
    count: I64 = 0
    retries: I64 = 0
    duration: HistogramJSON = field(default_factory=HistogramJSON)
    last_error: ErrorDetailJSON | None = None


class PoolJSON(Snapshot):
    """The one SQLite connection, as a pool."""

    max_open: I64 = 0
    open: I64 = 0
    in_use: I64 = 0
    idle: I64 = 0
    wait_count: I64 = 0
    wait_duration_seconds: float = 0.0


class StorageJSON(Snapshot):
    """Storage operation outcomes and the connection pool."""

    operations: tuple[StorageOperationJSON, ...] = ()
    pool: PoolJSON = field(default_factory=PoolJSON)


class StepDiagnosticJSON(Snapshot):
    """One failed maintenance step."""

    at_ms: I64 = 0
    step: str = ""
    category: str = ""
    explanation: str = ""
    fingerprint: str = ""
    sqlite_code: I64 | None = None


class MaintenanceTaskJSON(Snapshot):
    """One maintenance task: enablement, results, durations, latest failed steps."""

    task: str = ""
    enabled: bool = False
    runs: Annotated[I64, Doc("every pass")] = 0
    interrupted: I64 = 0
    failures: Annotated[I64, Doc("failed passes")] = 0
    duration: HistogramJSON = field(default_factory=HistogramJSON)
    last_run_at_ms: I64 = 0
    last_outcome: Annotated[str, Doc("never | ok | failed | interrupted")] = "never"
    last_success_at_ms: I64 = 0
    consecutive_failures: I64 = 0
    recovered_at_ms: I64 = 0
    diagnostics: tuple[StepDiagnosticJSON, ...] = ()


class FilterFailureJSON(Snapshot):
    """Routing failures of subscription filters at one stage."""

    stage: Annotated[str, Doc("compile | evaluate")] = ""
    count: I64 = 0


class RpcRequestsJSON(Snapshot):
    """Requests of one RPC with one result code."""

    rpc: str = ""
    code: Annotated[str, Doc("ok or the error envelope's code")] = ""
    count: I64 = 0
    duration_seconds: Annotated[float, Doc("cumulative whole-request time")] = 0.0


class AuthOutcomeJSON(Snapshot):
    """Final authentication outcomes."""

    outcome: str = ""
    count: I64 = 0


class LatencyBucketJSON(Snapshot):
    """One cumulative handler-latency bucket."""

    upper_bound_seconds: float = 0.0
    count: I64 = 0


class HandlerLatencyJSON(Snapshot):
    """Post-authentication handler latency of one RPC (buckets cumulative)."""

    rpc: str = ""
    buckets: tuple[LatencyBucketJSON, ...] = ()
    count: I64 = 0
    sum_seconds: float = 0.0


class HttpJSON(Snapshot):
    """HTTP request measurements; ``not_applicable`` in embedded mode."""

    state: Annotated[str, Doc("available | not_applicable")] = "not_applicable"
    requests: tuple[RpcRequestsJSON, ...] = ()
    authentication: tuple[AuthOutcomeJSON, ...] = ()
    handler_latency: tuple[HandlerLatencyJSON, ...] = ()


class ReplicationJSON(Snapshot):
    """Off-site replication by Litestream; ``disabled`` without MQLITE_REPLICA_URL."""

    state: Annotated[str, Doc("disabled | available | unavailable")] = "disabled"
    last_sync_at_ms: Annotated[I64 | None, Doc("last successful sync; null if unknown")] = None
    lag_seconds: Annotated[float | None, Doc("age of the last sync; null if unknown")] = None


class ScheduleMeasureJSON(Snapshot):
    """One cron schedule: slots sent since start, and how far behind its timetable it is."""

    schedule: str = ""
    fired: Annotated[I64, Doc("slots sent since the broker started")] = 0
    lag_seconds: Annotated[
        float, Doc("a due unsent slot: now - slot; else the latest firing's lag (for 10 min)")
    ] = 0.0


class SchedulesJSON(Snapshot):
    """Cron schedules (docs/cron.md): those that fired since start or have a due slot."""

    state: Annotated[str, Doc("available | unavailable (the read of due slots failed)")] = (
        "available"
    )
    overdue: Annotated[I64, Doc("schedules with a due slot not yet sent")] = 0
    schedules: tuple[ScheduleMeasureJSON, ...] = ()


class PushDeliveryJSON(Snapshot):
    """Push attempts of one target that ended with one outcome, since start."""

    queue: str = ""
    outcome: Annotated[str, Doc("delivered | retry | rejected")] = ""
    count: I64 = 0


class PushDurationJSON(Snapshot):
    """How long one target's POSTs took (connect to the last byte read)."""

    queue: str = ""
    duration: HistogramJSON = field(default_factory=HistogramJSON)


class PushesJSON(Snapshot):
    """Push delivery (docs/push.md): each target that made an attempt since start."""

    deliveries: tuple[PushDeliveryJSON, ...] = ()
    durations: tuple[PushDurationJSON, ...] = ()


class ObserveResponse(Snapshot):
    """The canonical broker observation (the source of /metrics, CLI observe, ...)."""

    sampled_at_ms: I64 = 0
    started_at_ms: I64 = 0
    backend: Annotated[str, Doc("local | memory | remote")] = ""
    version: str = ""
    access: Annotated[str, Doc("manage | monitor | anonymous | embedded")] = ""
    collection: CollectionJSON = field(default_factory=CollectionJSON)
    queue_count: Annotated[I64, Doc("rows of queues of kind queue")] = 0
    subscription_count: Annotated[I64, Doc("rows of kind subscription")] = 0
    queues: Annotated[
        tuple[QueueGaugesJSON, ...] | None, Doc("null exactly while collection is unavailable")
    ] = None
    runtime: RuntimeJSON = field(default_factory=RuntimeJSON)
    messages: tuple[MessageEffectJSON, ...] = ()
    storage: StorageJSON = field(default_factory=StorageJSON)
    maintenance: tuple[MaintenanceTaskJSON, ...] = ()
    filters: tuple[FilterFailureJSON, ...] = ()
    http: HttpJSON = field(default_factory=HttpJSON)
    replication: ReplicationJSON = field(default_factory=ReplicationJSON)
    schedules: SchedulesJSON = field(default_factory=SchedulesJSON)
    pushes: PushesJSON = field(default_factory=PushesJSON)

    @classmethod
    def of(cls, observation: Any, access: str | None = None) -> ObserveResponse:
        """From the engine's ``Observation`` (attribute for attribute)."""
        out: ObserveResponse = msgspec.convert(observation, cls, from_attributes=True)
        return out if access is None else msgspec.structs.replace(out, access=access)

    def check(self) -> ObserveResponse:
        """``self`` if consistent, else ``Internal`` naming what is wrong."""
        available = self.collection.state == "available"
        if available != (self.queues is not None):
            raise errors.Internal("malformed Observe response: queues contradict collection")
        kinds = [q.kind for q in self.queues or ()]
        if (self.queue_count, self.subscription_count) != (
            kinds.count("queue"),
            kinds.count("subscription"),
        ):
            raise errors.Internal("malformed Observe response: counts contradict queues")
        for q in self.queues or ():
            parts = (q.active, q.locked, q.deferred, q.scheduled, q.dead_lettered, q.unexpected)
            if q.total != sum(parts):
                raise errors.Internal(f"malformed Observe response: total of {q.queue!r}")
        rep = self.replication
        if (rep.state == "available") != (rep.lag_seconds is not None):
            raise errors.Internal("malformed Observe response: replication availability")
        hists = [op.duration for op in self.storage.operations]
        hists += [task.duration for task in self.maintenance]
        for h in hists:
            _check_buckets(h.bounds_seconds, h.bucket_counts, h.count)
        hists += [p.duration for p in self.pushes.durations]
        for hl in self.http.handler_latency:
            bounds = tuple(b.upper_bound_seconds for b in hl.buckets)
            _check_buckets(bounds, tuple(b.count for b in hl.buckets), hl.count)
        return self


def _check_buckets(bounds: tuple[float, ...], counts: tuple[int, ...], count: int) -> None:
    if (
        len(bounds) != len(counts)
        or list(bounds) != sorted(set(bounds))
        or list(counts) != sorted(counts)
        or (counts and counts[-1] > count)
    ):
        raise errors.Internal("malformed Observe response: histogram buckets")


OBSERVE = Route(
    "AdminService",
    "Observe",
    t.Permission.MONITOR,
    EmptyRequest,
    ObserveResponse,
    "The canonical broker observation",
)

ROUTES: tuple[Route[Any, Any], ...] = (OBSERVE,)

__all__ = ["OBSERVE", "ObserveResponse"]
