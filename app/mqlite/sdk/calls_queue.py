"""The call table, QueueService: sending, receiving, settling and browsing one queue's
messages (see ``mqlite.sdk.calls`` for the table's rules and retry classes)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from mqlite import defaults, errors, wire
from mqlite.sdk.call import SAFE, UNSAFE, Steps, rpc, verb
from mqlite.types import (
    BatchResult,
    Message,
    OutMessage,
    ReceiveMode,
    Stats,
)

# Renew answers only {"ok": true}; the embedded renew returns the committed deadline. A
# one-item RenewBatch is the same fenced statement and reports it, so it stands in.
STAND_INS = {wire.RENEW.name: wire.RENEW_BATCH.name}


def message_json(m: object, where: str = "message") -> wire.MessageJSON:
    if not isinstance(m, OutMessage):
        raise errors.InvalidArgument(f"{where} must be an OutMessage")
    if not isinstance(m.body, bytes | bytearray | memoryview):
        raise errors.InvalidArgument(f"{where}.body must be bytes")
    return wire.MessageJSON.of(m)


def _messages(messages: Sequence[OutMessage]) -> tuple[wire.MessageJSON, ...]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise errors.InvalidArgument("messages must be a list of OutMessage")
    return tuple([message_json(m, f"messages[{i}]") for i, m in enumerate(messages)])


def new_attempt_id() -> str:
    return uuid.uuid4().hex


def _check_token(lock_token: object) -> None:
    if not isinstance(lock_token, str):
        raise errors.InvalidArgument("lock_token must be a string")


def _pairs(items: Sequence[tuple[int, str]]) -> tuple[wire.SettleItem, ...]:
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise errors.InvalidArgument("messages must be a list of (seq_number, lock_token) pairs")
    out = []
    for item in items:
        if not isinstance(item, tuple | list) or len(item) != 2:
            raise errors.InvalidArgument("each item must be a (seq_number, lock_token) pair")
        out.append(wire.SettleItem(item[0], item[1]))
    return tuple(out)


@verb(wire.SEND, UNSAFE)
def send(queue: str, messages: Sequence[OutMessage], ttl_ms: int | None = None) -> Steps[list[int]]:
    """Enqueue a batch atomically; positional seqs (0 = dedup conflict in a batch)."""
    req = wire.SendRequest(queue, _messages(messages), 0, ttl_ms or 0)
    r = yield from rpc(wire.SEND, req)
    return list(r.seq_numbers)


@verb(wire.SEND, UNSAFE)
def send_one(queue: str, message: OutMessage, ttl_ms: int | None = None) -> Steps[int]:
    """Enqueue one message; a dedup conflict raises ``DedupConflict``."""
    req = wire.SendRequest(queue, (message_json(message),), 0, ttl_ms or 0)
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
