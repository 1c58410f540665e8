"""The queue configuration on the wire: ``QueueConfigJSON`` (CreateQueue's ``config``,
nested) and ``QueueInfoJSON`` (a ListQueues entry, flat), with their conversions to
``types.QueueConfig`` / ``types.QueueInfo``.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

import msgspec

from mqlite import defaults
from mqlite import types as t

from .base import I64, Doc, Request, Response, canonical

_QC = t.QueueConfig()
_CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(t.QueueConfig))


def config_of(shape: Any) -> t.QueueConfig:
    """A ``QueueConfig`` from a wire shape that carries every config field by its name
    (both shapes here do: the nested config and the flat ListQueues entry)."""
    return t.QueueConfig(**{name: getattr(shape, name) for name in _CONFIG_FIELDS})


_STANDARD = t.OrderingMode.STANDARD.value


# Bounded on the way in (400 naming the field and the limit): rows are kept a whole window.
DedupWindow = Annotated[
    int,
    msgspec.Meta(
        ge=0,
        le=defaults.MAX_DEDUP_WINDOW_MS,
        description=f"0 = off; at most {defaults.MAX_DEDUP_WINDOW_MS} (7 days)",
        extra_json_schema={"format": "int64"},
    ),
]


class QueueConfigJSON(Request):
    """Queue configuration; every field optional (omitted = default)."""

    kind: Annotated[
        Literal["", "queue", "subscription"], Doc("subscription = a topic's backing queue")
    ] = t.QueueKind.QUEUE.value
    lock_duration_ms: Annotated[I64, Doc("0 = 30000")] = _QC.lock_duration_ms
    max_delivery_count: Annotated[I64, Doc("0 = 10")] = _QC.max_delivery_count
    default_ttl_ms: Annotated[I64, Doc("0 = unlimited")] = 0
    dead_letter_on_expire: Annotated[bool, Doc("default true")] = True
    dedup_window_ms: DedupWindow = 0
    ordering_mode: Annotated[
        Literal["", "standard", "group_fifo", "strict_fifo"],
        Doc("standard: per-group FIFO; group_fifo: group_id required; strict_fifo: one line"),
    ] = t.OrderingMode.STANDARD.value
    dlq_max_age_ms: Annotated[I64, Doc("0 = inherit, -1 = unbounded")] = 0
    dlq_max_count: Annotated[I64, Doc("0 = inherit, -1 = unbounded")] = 0
    dlq_max_bytes: Annotated[I64, Doc("0 = inherit, -1 = unbounded")] = 0
    retry_initial_delay_ms: Annotated[
        I64,
        Doc(
            "retry policy: delay after the first failed delivery (abandon without delay_ms, "
            "or an expired lock); 0 = off, redelivered at once"
        ),
    ] = 0
    retry_multiplier: Annotated[
        float, Doc("1..1000: each further failure multiplies the delay (1 = constant)")
    ] = _QC.retry_multiplier
    retry_max_delay_ms: Annotated[
        I64, Doc("the delay's cap, >= retry_initial_delay_ms; default 900000 (15 min)")
    ] = _QC.retry_max_delay_ms
    retry_jitter: Annotated[
        float, Doc("0..1: the delay is drawn from [d*(1-jitter), d]; 0 = exact")
    ] = _QC.retry_jitter

    @classmethod
    def of(cls, c: t.QueueConfig) -> QueueConfigJSON:
        d = _DEFAULT_CONFIG
        return cls(
            canonical(c.kind, d.kind),  # type: ignore[arg-type]  # the broker validates it
            canonical(c.lock_duration_ms, d.lock_duration_ms),
            canonical(c.max_delivery_count, d.max_delivery_count),
            c.default_ttl_ms,
            c.dead_letter_on_expire,
            c.dedup_window_ms,
            canonical(c.ordering_mode, d.ordering_mode),  # type: ignore[arg-type]
            c.dlq_max_age_ms,
            c.dlq_max_count,
            c.dlq_max_bytes,
            c.retry_initial_delay_ms,
            canonical(c.retry_multiplier, d.retry_multiplier),
            canonical(c.retry_max_delay_ms, d.retry_max_delay_ms),
            canonical(c.retry_jitter, d.retry_jitter),
        )

    def value(self) -> t.QueueConfig:
        return config_of(self)


_DEFAULT_CONFIG = QueueConfigJSON()


class QueueInfoJSON(Response):
    """A queue as ListQueues reports it: its whole config and generation."""

    name: str
    kind: str
    lock_duration_ms: I64
    max_delivery_count: I64
    default_ttl_ms: I64
    dedup_window_ms: I64
    generation: Annotated[str, Doc("opaque identity; pass it to DeleteQueue")] = ""
    # Additive to the original's six fields, so a remote list_queues() reports the whole
    # config; omitted at the default, so an old broker's answer decodes correctly.
    ordering_mode: Annotated[str, Doc("omitted while standard")] = _STANDARD
    dead_letter_on_expire: Annotated[bool, Doc("omitted while true")] = True
    dlq_max_age_ms: I64 = 0
    dlq_max_count: I64 = 0
    dlq_max_bytes: I64 = 0
    # The retry policy: omitted while at its defaults (a queue without one lists as before).
    retry_initial_delay_ms: Annotated[I64, Doc("omitted while 0 (no retry policy)")] = 0
    retry_multiplier: float = _QC.retry_multiplier
    retry_max_delay_ms: I64 = _QC.retry_max_delay_ms
    retry_jitter: float = _QC.retry_jitter

    @classmethod
    def of(cls, q: t.QueueInfo) -> QueueInfoJSON:
        c = q.config
        return cls(
            q.name,
            c.kind,
            c.lock_duration_ms,
            c.max_delivery_count,
            c.default_ttl_ms,
            c.dedup_window_ms,
            q.generation,
            canonical(c.ordering_mode, _STANDARD),
            c.dead_letter_on_expire,
            c.dlq_max_age_ms,
            c.dlq_max_count,
            c.dlq_max_bytes,
            c.retry_initial_delay_ms,
            canonical(c.retry_multiplier, _QC.retry_multiplier),
            canonical(c.retry_max_delay_ms, _QC.retry_max_delay_ms),
            canonical(c.retry_jitter, _QC.retry_jitter),
        )

    def value(self) -> t.QueueInfo:
        return t.QueueInfo(self.name, config_of(self), self.generation)
