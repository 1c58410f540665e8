"""AdminService/Observe: the canonical observation as JSON (api-reference "Observe").

The Structs mirror ``mqlite.engine.observation`` field for field (the engine may not
import the wire, nor the wire the engine; ``tests/wire/test_wire_observe.py`` pins the two
shapes together). Durations are seconds, timestamps epoch milliseconds. ``null`` means
unknown, never zero: ``queues`` while the collection is unavailable, a failed probe's
latency, an unmeasurable footprint. ``ObserveResponse.check`` refuses an observation
whose availability or histograms are inconsistent (the SDK applies it to every answer).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import field

from mqlite import errors
from mqlite import types as t

from .admin_service import EmptyRequest
from .base import I64, Doc, Route, Snapshot


class BucketJSON(Snapshot):
    """One cumulative histogram bucket."""

    le: Annotated[float, Doc("upper bound, seconds")] = 0.0
    count: I64 = 0


class HistogramJSON(Snapshot):
    """Cumulative finite buckets; ``count`` is the +Inf bucket."""

    buckets: tuple[BucketJSON, ...] = ()
    count: I64 = 0
    sum: float = 0.0


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
    retained: Annotated[I64, Doc("every row, unexpected states included")] = 0
    unexpected: Annotated[I64, Doc("rows outside the five normal states")] = 0
    oldest_age_seconds: Annotated[float, Doc("oldest active/locked row; 0 if none")] = 0.0


class RuntimeJSON(Snapshot):
    """Schema version, the read probe and the local footprint (no DSN, no path)."""

    schema_version: str = ""
    read_available: bool = False
    read_latency_seconds: Annotated[float | None, Doc("null when the probe failed")] = None
    db_size_available: bool = False
    db_size_bytes: Annotated[I64 | None, Doc("db + WAL + SHM; null if unavailable")] = None


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
    waits: I64 = 0
    wait_duration_seconds: float = 0.0


class StorageJSON(Snapshot):
    """Storage operation outcomes and the connection pool."""

    operations: tuple[StorageOperationJSON, ...] = ()
    pool: PoolJSON = field(default_factory=PoolJSON)


class RunsJSON(Snapshot):
    """Maintenance passes by outcome."""

    success: I64 = 0
    error: I64 = 0
    interrupted: I64 = 0


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
    runs: RunsJSON = field(default_factory=RunsJSON)
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


class RpcHandlerJSON(Snapshot):
    """Post-authentication handler latency of one RPC."""

    rpc: str = ""
    duration: HistogramJSON = field(default_factory=HistogramJSON)


class HttpJSON(Snapshot):
    """HTTP request measurements; ``not_applicable`` in embedded mode."""

    state: Annotated[str, Doc("available | not_applicable")] = "not_applicable"
    requests: tuple[RpcRequestsJSON, ...] = ()
    authentication: tuple[AuthOutcomeJSON, ...] = ()
    handlers: tuple[RpcHandlerJSON, ...] = ()


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


class ObserveResponse(Snapshot):
    """The canonical broker observation (the source of /metrics, CLI observe, ...)."""

    sampled_at_ms: I64 = 0
    started_at_ms: I64 = 0
    backend: str = ""
    version: str = ""
    access: Annotated[str, Doc("manage | monitor | anonymous | embedded")] = ""
    collection: CollectionJSON = field(default_factory=CollectionJSON)
    queue_count: Annotated[I64 | None, Doc("null unless the collection is available")] = None
    subscription_count: I64 | None = None
    queues: tuple[QueueGaugesJSON, ...] | None = None
    runtime: RuntimeJSON = field(default_factory=RuntimeJSON)
    messages: tuple[MessageEffectJSON, ...] = ()
    storage: StorageJSON = field(default_factory=StorageJSON)
    maintenance: tuple[MaintenanceTaskJSON, ...] = ()
    filters: tuple[FilterFailureJSON, ...] = ()
    http: HttpJSON = field(default_factory=HttpJSON)
    replication: ReplicationJSON = field(default_factory=ReplicationJSON)
    schedules: SchedulesJSON = field(default_factory=SchedulesJSON)

    @classmethod
    def of(cls, observation: Any, access: str | None = None) -> ObserveResponse:
        """From the engine's ``Observation`` (attribute for attribute)."""
        out: ObserveResponse = msgspec.convert(observation, cls, from_attributes=True)
        return out if access is None else msgspec.structs.replace(out, access=access)

    def check(self) -> ObserveResponse:
        """``self`` if consistent, else ``Internal`` naming what is wrong."""
        available = self.collection.state == "available"
        if available != (self.queues is not None) or (available != (self.queue_count is not None)):
            raise errors.Internal("malformed Observe response: queues contradict collection")
        if self.runtime.read_available != (self.runtime.read_latency_seconds is not None):
            raise errors.Internal("malformed Observe response: read probe availability")
        if self.runtime.db_size_available != (self.runtime.db_size_bytes is not None):
            raise errors.Internal("malformed Observe response: footprint availability")
        rep = self.replication
        if (rep.state == "available") != (rep.lag_seconds is not None):
            raise errors.Internal("malformed Observe response: replication availability")
        hists = [op.duration for op in self.storage.operations]
        hists += [task.duration for task in self.maintenance]
        hists += [h.duration for h in self.http.handlers]
        for h in hists:
            counts = [b.count for b in h.buckets]
            bounds = [b.le for b in h.buckets]
            if (
                counts != sorted(counts)
                or bounds != sorted(set(bounds))
                or (counts and counts[-1] > h.count)
            ):
                raise errors.Internal("malformed Observe response: histogram buckets")
        return self


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
