"""The call table: every remote verb declared ONCE (name, signature with defaults, route,
request building, retry class, result mapping). Everything else is generated from it by
``scripts/gen_sdk.py``: ``HttpClient``'s and ``AsyncClient``'s methods, the ``Client``
protocol and the embedded facade's forwarders (``make lint`` fails if one is stale).

Each verb returns the same value the embedded client returns. Argument checks here are
only the ones the wire cannot express (an empty ``attempt_id`` means "absent" on the wire
but is an error in-process; a ``str`` body would travel as base64 text); everything else
is the broker's.

Retry classes (``RetryPolicy`` applies them):

- ``SAFE``: replaying the exact request cannot change the outcome: reads, a Receive with
  an attempt id (the broker replays the same batch), settlement verbs (an exact-request
  receipt replays a committed settlement), renewals, idempotent upserts, key revocation.
- ``UNSAFE``: retried only when the connection could not be opened (nothing was sent):
  Send/Schedule (a resend would duplicate unless the queue dedups, which the client
  cannot know), Cancel, ReceiveDeferred, DeleteQueue, Unsubscribe, Redrive, Purge and
  CreateKey (never replayed: a lost answer is reconciled by its retained key id).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from msgspec import UNSET, UnsetType

from mqlite import defaults, errors, wire
from mqlite.sdk.call import SAFE, UNSAFE, Steps, rpc, verb
from mqlite.types import (
    AccessKey,
    AuditEntry,
    BatchResult,
    FilterTestResult,
    Message,
    OutMessage,
    QueueConfig,
    QueueEnsured,
    QueueInfo,
    ReceiveMode,
    Schedule,
    Stats,
    Subscription,
)

# Renew answers only {"ok": true}; the embedded renew returns the committed deadline. A
# one-item RenewBatch is the same fenced statement and reports it, so it stands in.
STAND_INS = {wire.RENEW.name: wire.RENEW_BATCH.name}


def find_queue(queues: Sequence[QueueInfo], name: str) -> QueueInfo:
    for q in queues:
        if q.name == name:
            return q
    raise errors.QueueNotFound(f"queue {name!r} not found")


def _message(m: object, where: str = "message") -> wire.MessageJSON:
    if not isinstance(m, OutMessage):
        raise errors.InvalidArgument(f"{where} must be an OutMessage")
    if not isinstance(m.body, bytes | bytearray | memoryview):
        raise errors.InvalidArgument(f"{where}.body must be bytes")
    return wire.MessageJSON.of(m)


def _messages(messages: Sequence[OutMessage]) -> tuple[wire.MessageJSON, ...]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise errors.InvalidArgument("messages must be a list of OutMessage")
    return tuple([_message(m, f"messages[{i}]") for i, m in enumerate(messages)])


# -- queues and topics ------------------------------------------------------------------


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
        _message(sample, "sample")
        wired = wire.SampleMessage.of(sample, enqueued_at_ms or 0, visible_at_ms or 0)
    r = yield from rpc(wire.TEST_FILTER, wire.TestFilterRequest(expr, wired))
    return r.value()


# -- send -------------------------------------------------------------------------------


@verb(wire.SEND, UNSAFE)
def send(queue: str, messages: Sequence[OutMessage], ttl_ms: int | None = None) -> Steps[list[int]]:
    """Enqueue a batch atomically; positional seqs (0 = dedup conflict in a batch)."""
    req = wire.SendRequest(queue, _messages(messages), 0, ttl_ms or 0)
    r = yield from rpc(wire.SEND, req)
    return list(r.seq_numbers)


@verb(wire.SEND, UNSAFE)
def send_one(queue: str, message: OutMessage, ttl_ms: int | None = None) -> Steps[int]:
    """Enqueue one message; a dedup conflict raises ``DedupConflict``."""
    req = wire.SendRequest(queue, (_message(message),), 0, ttl_ms or 0)
    r = yield from rpc(wire.SEND, req)
    return r.seq_numbers[0]


@verb(wire.SCHEDULE, UNSAFE)
def schedule(
    queue: str, messages: Sequence[OutMessage], at_ms: int, ttl_ms: int | None = None
) -> Steps[list[int]]:
    """Enqueue for delivery at ``at_ms`` (epoch ms, in the future), atomically."""
    if not isinstance(at_ms, int) or isinstance(at_ms, bool) or at_ms < 1:
        raise errors.InvalidArgument("at_ms must be a positive integer (epoch ms)")
    req = wire.SendRequest(queue, _messages(messages), at_ms, ttl_ms or 0)
    r = yield from rpc(wire.SCHEDULE, req)
    return list(r.seq_numbers)


@verb(wire.CANCEL, UNSAFE)
def cancel(queue: str, seq_number: int) -> Steps[None]:
    """Delete a scheduled, never-delivered message; otherwise ``NotFound``."""
    yield from rpc(wire.CANCEL, wire.CancelRequest(queue, seq_number))


# -- receive ----------------------------------------------------------------------------


def new_attempt_id() -> str:
    return uuid.uuid4().hex


@verb(wire.RECEIVE, SAFE, binds=True)
def receive(
    queue: str,
    max_messages: int = 1,
    wait_ms: int = 0,
    mode: str = "peek_lock",
    attempt_id: str | None = None,
) -> Steps[list[Message]]:
    """Claim up to ``max_messages``, long-polling up to ``wait_ms`` for the first one.

    Every remote Receive carries an attempt id (a fresh one unless the caller gave one),
    so a retry after a lost answer replays the same batch instead of claiming a second
    one (and, in receive-and-delete mode, instead of losing the first)."""
    if mode == ReceiveMode.PEEK_LOCK:
        receive_mode = 0
    elif mode == ReceiveMode.RECEIVE_AND_DELETE:
        receive_mode = 1
    else:
        raise errors.InvalidArgument(
            f"unknown receive mode {mode!r} (want peek_lock or receive_and_delete)"
        )
    if attempt_id is not None and (not isinstance(attempt_id, str) or not attempt_id):
        raise errors.InvalidArgument("attempt_id must be a non-empty string")
    wait = wait_ms if isinstance(wait_ms, int) and not isinstance(wait_ms, bool) else 0
    wait = min(max(wait, 0), defaults.MAX_WAIT_MS)
    req = wire.ReceiveRequest(
        queue,
        max_messages,
        wait_ms,
        receive_mode,  # type: ignore[arg-type]  # 0 or 1, checked above
        attempt_id or new_attempt_id(),
    )
    r = yield from rpc(wire.RECEIVE, req, wait)
    return r.values(queue)


@verb(wire.RECEIVE_DEFERRED, UNSAFE, binds=True)
def receive_deferred(queue: str, seq_numbers: Sequence[int]) -> Steps[list[Message]]:
    """Lock deferred messages by seq (request order); seqs not deferred are skipped."""
    if isinstance(seq_numbers, str | bytes) or not isinstance(seq_numbers, Sequence):
        raise errors.InvalidArgument("seq_numbers must be a list of integers")
    req = wire.ReceiveDeferredRequest(queue, tuple(seq_numbers))
    r = yield from rpc(wire.RECEIVE_DEFERRED, req)
    return r.values(queue)


# -- settlement -------------------------------------------------------------------------


def _check_token(lock_token: object) -> None:
    if not isinstance(lock_token, str):
        raise errors.InvalidArgument("lock_token must be a string")


@verb(wire.COMPLETE, SAFE)
def complete(queue: str, seq_number: int, lock_token: str) -> Steps[None]:
    """Delete a locked message (done)."""
    _check_token(lock_token)
    yield from rpc(wire.COMPLETE, wire.SettleRequest(queue, seq_number, lock_token))


@verb(wire.ABANDON, SAFE)
def abandon(
    queue: str, seq_number: int, lock_token: str, delay_ms: int = 0, error: str = ""
) -> Steps[None]:
    """Release a lock; redelivered after ``delay_ms`` (> 0 wins; 0 leaves the delay to the
    queue's retry policy, or at once without one), keeping ``error`` as its last error."""
    _check_token(lock_token)
    req = wire.SettleRequest(queue, seq_number, lock_token, delay_ms=delay_ms, error=error)
    yield from rpc(wire.ABANDON, req)


@verb(wire.REJECT, SAFE)
def reject(
    queue: str, seq_number: int, lock_token: str, reason: str = "", description: str = ""
) -> Steps[None]:
    """Dead-letter a locked message with a reason and description."""
    _check_token(lock_token)
    if not isinstance(reason, str) or not isinstance(description, str):
        raise errors.InvalidArgument("reason and description must be strings")
    yield from rpc(
        wire.REJECT, wire.SettleRequest(queue, seq_number, lock_token, reason, description)
    )


@verb(wire.DEFER, SAFE)
def defer(queue: str, seq_number: int, lock_token: str) -> Steps[None]:
    """Set a locked message aside; retrieve it with ``receive_deferred``."""
    _check_token(lock_token)
    yield from rpc(wire.DEFER, wire.SettleRequest(queue, seq_number, lock_token))


@verb(wire.RENEW_BATCH, SAFE)
def renew(queue: str, seq_number: int, lock_token: str) -> Steps[int]:
    """Extend the lease; returns the deadline the broker committed (epoch ms)."""
    _check_token(lock_token)
    if not lock_token:
        raise errors.LockLost("lock lost: empty lock token")
    req = wire.RenewBatchRequest(queue, (wire.SettleItem(seq_number, lock_token),))
    r = yield from rpc(wire.RENEW_BATCH, req)
    if len(r.results) != 1 or not r.results[0].ok:
        raise errors.LockLost(
            f"lock lost on message {seq_number} in {queue!r}: wrong or expired token"
        )
    return r.results[0].locked_until_ms


def _pairs(items: Sequence[tuple[int, str]]) -> tuple[wire.SettleItem, ...]:
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise errors.InvalidArgument("messages must be a list of (seq_number, lock_token) pairs")
    out = []
    for item in items:
        if not isinstance(item, tuple | list) or len(item) != 2:
            raise errors.InvalidArgument("each item must be a (seq_number, lock_token) pair")
        out.append(wire.SettleItem(item[0], item[1]))
    return tuple(out)


@verb(wire.COMPLETE_BATCH, SAFE)
def complete_batch(queue: str, items: Sequence[tuple[int, str]]) -> Steps[list[BatchResult]]:
    """Complete many (seq, token) pairs in one transaction; per-item ``ok``."""
    r = yield from rpc(wire.COMPLETE_BATCH, wire.CompleteBatchRequest(queue, _pairs(items)))
    return r.values()


@verb(wire.RENEW_BATCH, SAFE)
def renew_batch(queue: str, items: Sequence[tuple[int, str]]) -> Steps[list[BatchResult]]:
    """Renew up to 512 leases in ONE statement; ok only if still live after the write."""
    r = yield from rpc(wire.RENEW_BATCH, wire.RenewBatchRequest(queue, _pairs(items)))
    return r.values()


# -- browse, dead letters, status -------------------------------------------------------


@verb(wire.PEEK, SAFE)
def peek(
    queue: str, state: str | None = None, from_seq: int = 0, max: int = 0
) -> Steps[list[Message]]:
    """Browse without locking (never returns a lock token)."""
    if state is not None and not isinstance(state, str):
        raise errors.InvalidArgument("state must be a string")
    req = wire.PeekRequest(queue, from_seq, state or "", max)  # type: ignore[arg-type]
    r = yield from rpc(wire.PEEK, req)
    return r.values(queue)


@verb(wire.STATS, SAFE)
def stats(queue: str) -> Steps[Stats]:
    """Message counts by state and the age of the oldest active or locked message."""
    r = yield from rpc(wire.STATS, wire.MetricsRequest(queue))
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


# -- access keys ------------------------------------------------------------------------


@verb(wire.CREATE_KEY, UNSAFE)
def create_key(
    id: str,
    name: str,
    permissions: Sequence[str],
    expires_at_ms: int = 0,
    queues: Sequence[str] = (),
    rate_limit_per_s: int = 0,
    burst: int = 0,
) -> Steps[tuple[AccessKey, str]]:
    """Issue a key under your retained ``id`` (``mqlite.generate_key_id()``).

    ``queues``: queue-name patterns (exact, or a trailing ``*`` prefix) the key is confined
    to; empty = every queue. ``rate_limit_per_s``/``burst``: the key's token bucket (a Send
    costs its messages; 0 = the broker default). Never retried once sent: after an
    ambiguous failure, reconcile by ``id``."""
    for field, value in (("permissions", permissions), ("queues", queues)):
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise errors.InvalidArgument(f"{field} must be a list of strings")
    req = wire.CreateKeyRequest(
        id,
        name,
        tuple(permissions),  # type: ignore[arg-type]
        expires_at_ms,
        tuple(queues),
        rate_limit_per_s,
        burst,
    )
    r = yield from rpc(wire.CREATE_KEY, req)
    return r.key.value(), r.token


@verb(wire.LIST_KEYS, SAFE)
def list_keys(
    after_id: str = "", limit: int = 100, sort: str = "id_asc"
) -> Steps[tuple[list[AccessKey], str]]:
    """A page of key metadata and the cursor of the next one ("" on the last page)."""
    r = yield from rpc(wire.LIST_KEYS, wire.ListKeysRequest(after_id, limit, sort))  # type: ignore[arg-type]
    return r.values()


@verb(wire.REVOKE_KEY, SAFE)
def revoke_key(id: str) -> Steps[None]:
    """Revoke an access key (revoking again succeeds)."""
    yield from rpc(wire.REVOKE_KEY, wire.RevokeKeyRequest(id))


# -- cron schedules (docs/cron.md) ------------------------------------------------------


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
    _message(message)
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
