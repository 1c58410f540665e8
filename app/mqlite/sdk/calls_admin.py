"""The call table, AdminService: queues, topics and subscriptions, dead letters, status and
observation, cron schedules (see ``mqlite.sdk.calls`` for the table's rules and retry
classes)."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import UNSET, UnsetType

from mqlite import errors, wire
from mqlite.sdk.call import SAFE, UNSAFE, Steps, rpc, verb
from mqlite.sdk.calls_queue import message_json
from mqlite.types import (
    AuditEntry,
    FilterTestResult,
    OutMessage,
    PushTarget,
    QueueConfig,
    QueueEnsured,
    QueueInfo,
    Schedule,
    Subscription,
)


def find_queue(queues: Sequence[QueueInfo], name: str) -> QueueInfo:
    for q in queues:
        if q.name == name:
            return q
    raise errors.QueueNotFound(f"queue {name!r} not found")


@verb(wire.CREATE_QUEUE, SAFE)
def create_queue(name: str, config: QueueConfig | None = None) -> Steps[QueueInfo]:
    """Create or reconfigure a queue; returns it with its generation.

    Remotely, CreateQueue answers ``{}``, so one ListQueues follows for the generation."""
    if config is not None and not isinstance(config, QueueConfig):
        raise errors.InvalidArgument("config must be a QueueConfig")
    wired = UNSET if config is None else wire.QueueConfigJSON.of(config)
    yield from rpc(wire.CREATE_QUEUE, wire.CreateQueueRequest(name, wired))
    return find_queue((yield from list_queues()), name)


@verb(wire.ENSURE_QUEUE, SAFE)
def ensure_queue(
    name: str, config: QueueConfig | None = None, strict: bool = False
) -> Steps[QueueEnsured]:
    """Create a queue unless it exists; an existing queue is left exactly as it is.

    The start-up verb ("make sure it exists"): unlike ``create_queue`` it never resets a
    queue another process configured. The result says whether this call created it and,
    if not, which config fields differ from ``config``; ``strict=True`` raises
    ``QueueConfigDiffers`` instead. One conditional write on the broker: no race."""
    if config is not None and not isinstance(config, QueueConfig):
        raise errors.InvalidArgument("config must be a QueueConfig")
    if not isinstance(strict, bool):
        raise errors.InvalidArgument("strict must be a boolean")
    wired = UNSET if config is None else wire.QueueConfigJSON.of(config)
    r = yield from rpc(wire.ENSURE_QUEUE, wire.EnsureQueueRequest(name, wired, strict))
    return r.value()


@verb(wire.LIST_QUEUES, SAFE)
def list_queues() -> Steps[list[QueueInfo]]:
    """Every queue with its config and generation, by name."""
    r = yield from rpc(wire.LIST_QUEUES, wire.EmptyRequest())
    return sorted(r.values(), key=lambda q: q.name)


@verb(wire.LIST_QUEUES, SAFE)
def get_queue(name: str) -> Steps[QueueInfo]:
    """One queue; ``QueueNotFound`` if there is none of that name."""
    return find_queue((yield from list_queues()), name)


@verb(wire.DELETE_QUEUE, UNSAFE)
def delete_queue(name: str, generation: str | None = None) -> Steps[None]:
    """Delete an empty plain queue, fenced on ``generation``.

    Without ``generation`` the current one is looked up once, per invocation; keep and
    pass the original one when retrying or reconciling a deletion."""
    if generation is None:
        generation = (yield from get_queue(name)).generation
    yield from rpc(wire.DELETE_QUEUE, wire.DeleteQueueRequest(name, generation))


@verb(wire.SUBSCRIBE, SAFE)
def subscribe(topic: str, name: str, expr: str | None = "") -> Steps[QueueInfo]:
    """Create or update subscription ``name`` on ``topic``; returns its backing queue."""
    if expr is not None and not isinstance(expr, str):
        raise errors.InvalidArgument("filter expr must be a string")
    wired = wire.SubscriptionFilter(expr) if expr else UNSET
    yield from rpc(wire.SUBSCRIBE, wire.SubscribeRequest(topic, name, wired))
    return find_queue((yield from list_queues()), name)


@verb(wire.UNSUBSCRIBE, UNSAFE)
def unsubscribe(topic: str, name: str) -> Steps[None]:
    """Remove a subscription and its (empty) backing queue."""
    yield from rpc(wire.UNSUBSCRIBE, wire.UnsubscribeRequest(topic, name))


@verb(wire.LIST_SUBSCRIPTIONS, SAFE)
def list_subscriptions() -> Steps[list[Subscription]]:
    """Every subscription with its topic and filter, by topic then name."""
    r = yield from rpc(wire.LIST_SUBSCRIPTIONS, wire.EmptyRequest())
    return r.values()


@verb(wire.TEST_FILTER, SAFE)
def test_filter(
    expr: str,
    sample: OutMessage | None = None,
    enqueued_at_ms: int | None = None,
    visible_at_ms: int | None = None,
) -> Steps[FilterTestResult]:
    """Compile ``expr`` and, given a sample, decide exactly as a publish would."""
    if not isinstance(expr, str):
        raise errors.InvalidArgument("expr must be a string")
    wired: wire.SampleMessage | UnsetType = UNSET
    if sample is not None:
        message_json(sample, "sample")
        wired = wire.SampleMessage.of(sample, enqueued_at_ms or 0, visible_at_ms or 0)
    r = yield from rpc(wire.TEST_FILTER, wire.TestFilterRequest(expr, wired))
    return r.value()


@verb(wire.REDRIVE, UNSAFE)
def redrive(
    queue: str,
    target: str | None = None,
    max: int = 0,
    older_than_ms: int = 0,
    rate_per_sec: int = 0,
    seq_numbers: Sequence[int] = (),
) -> Steps[int]:
    """Move dead letters back to active here, or into ``target``; returns moved count.
    ``seq_numbers`` narrows it to those dead letters (at most 1000)."""
    req = wire.RedriveRequest(
        queue, target or "", max, older_than_ms, rate_per_sec, tuple(seq_numbers)
    )
    r = yield from rpc(wire.REDRIVE, req)
    return r.moved


@verb(wire.PURGE, UNSAFE)
def purge(
    queue: str, max: int = 0, older_than_ms: int = 0, seq_numbers: Sequence[int] = ()
) -> Steps[int]:
    """Delete dead letters (oldest first); all bounds empty purges the whole DLQ.
    ``seq_numbers`` narrows it to those dead letters (at most 1000)."""
    req = wire.PurgeRequest(queue, max, older_than_ms, tuple(seq_numbers))
    r = yield from rpc(wire.PURGE, req)
    return r.purged


@verb(wire.STATUS, SAFE, embedded=False)
def status() -> Steps[wire.StatusResponse]:
    """A desensitized runtime snapshot (never a DSN or a token)."""
    return (yield from rpc(wire.STATUS, wire.EmptyRequest()))


@verb(wire.OBSERVE, SAFE, embedded=False)
def observe() -> Steps[wire.ObserveResponse]:
    """The canonical observation: collection state, queue gauges, committed message effects,
    storage, maintenance, filters and HTTP measurements (manage or monitor credential).

    Check ``collection.state`` before reading ``queues`` (None while unavailable)."""
    r = yield from rpc(wire.OBSERVE, wire.EmptyRequest())
    return r.check()


@verb(wire.CREATE_SCHEDULE, SAFE)
def create_schedule(
    name: str,
    cron: str,
    queue: str,
    message: OutMessage,
    timezone: str = "UTC",
    catch_up: str = "latest",
    paused: bool = False,
) -> Steps[Schedule]:
    """Create or replace schedule ``name``: ``message`` goes to ``queue`` (a queue, or a
    topic that fans out) at every slot of ``cron`` in ``timezone``; returns it as listed."""
    message_json(message)
    if message.message_id:  # the wire has no field for it: refuse rather than drop it
        raise errors.InvalidArgument(
            "message.message_id must be empty: each firing's is cron:<name>:<slot ms>"
        )
    req = wire.CreateScheduleRequest(
        name,
        cron,
        queue,
        wire.ScheduleMessageJSON.of(message),
        timezone,
        catch_up,  # type: ignore[arg-type]
        paused,
    )
    r = yield from rpc(wire.CREATE_SCHEDULE, req)
    return r.schedule.value()


@verb(wire.DELETE_SCHEDULE, SAFE)
def delete_schedule(name: str) -> Steps[bool]:
    """Delete schedule ``name``; False when there was none (deleting is idempotent)."""
    r = yield from rpc(wire.DELETE_SCHEDULE, wire.DeleteScheduleRequest(name))
    return r.deleted


@verb(wire.LIST_SCHEDULES, SAFE)
def list_schedules() -> Steps[list[Schedule]]:
    """Every schedule by name, with its next and last firing and its status."""
    r = yield from rpc(wire.LIST_SCHEDULES, wire.EmptyRequest())
    return r.values()


# -- the audit trail (docs/operations.md "Audit trail") ---------------------------------


@verb(wire.LIST_AUDIT, SAFE)
def list_audit(
    after_id: int = 0, limit: int = 100, queue: str = "", since_ms: int = 0
) -> Steps[list[AuditEntry]]:
    """One page of the audit trail in id order: entries after ``after_id``, at or after
    ``since_ms`` (epoch ms), of ``queue`` only when given; ``limit`` 1..1000 (0 = 100).
    Page on with the last entry's id; an empty page is the end (for now)."""
    req = wire.ListAuditRequest(after_id, limit, queue, since_ms)
    r = yield from rpc(wire.LIST_AUDIT, req)
    return r.values()


# -- push targets (docs/push.md) --------------------------------------------------------


@verb(wire.CREATE_PUSH, UNSAFE)
def create_push(
    queue: str,
    url: str,
    secret: str = "",
    max_in_flight: int = 8,
    timeout_ms: int = 10_000,
    paused: bool = False,
) -> Steps[PushTarget]:
    """Bind (upsert) ``queue``'s push target: the broker POSTs each message to ``url``,
    signed (Standard Webhooks). ``secret`` empty: a new target gets a generated one,
    returned in the answer's ``secret`` this once; an existing target keeps its own.
    ``paused`` keeps the target and delivers nothing.

    Never retried once sent: a replay of a create that committed would answer without
    the generated secret (it exists once). Pass your own ``secret`` to make repeating
    the call harmless (docs/push.md "Retrying CreatePush")."""
    req = wire.CreatePushRequest(queue, url, secret, max_in_flight, timeout_ms, paused)
    r = yield from rpc(wire.CREATE_PUSH, req)
    return r.push.value()


@verb(wire.DELETE_PUSH, SAFE)
def delete_push(queue: str) -> Steps[bool]:
    """Unbind ``queue``'s push target; False when there was none (idempotent)."""
    r = yield from rpc(wire.DELETE_PUSH, wire.DeletePushRequest(queue))
    return r.deleted


@verb(wire.LIST_PUSHES, SAFE)
def list_pushes() -> Steps[list[PushTarget]]:
    """Every push target by queue, with its status, last error and counters (no secret)."""
    r = yield from rpc(wire.LIST_PUSHES, wire.EmptyRequest())
    return r.values()
