"""What each remote method sends and how its answer maps back: shared by ``HttpClient``
and the asyncio client, so the two cannot drift.

A ``Call`` is an encoded request plus its retry class and a function from the decoded
response to the method's return value (the same value the embedded client returns).
Argument checks here are only the ones the wire cannot express (an empty ``attempt_id``
means "absent" on the wire but is an error in-process); everything else is the broker's.

Retry classes (see ``RetryPolicy``):

- ``SAFE``: replaying the exact request cannot change the outcome — reads, a Receive with
  an attempt id (the broker replays the same batch), settlement verbs (an exact-request
  receipt replays a committed settlement), renewals, idempotent upserts, key revocation.
- ``UNSAFE``: retried only when the connection could not be opened (nothing was sent):
  Send/Schedule (a resend would duplicate unless the queue dedups, which the client
  cannot know), Cancel, ReceiveDeferred, DeleteQueue, Unsubscribe, Redrive, Purge and
  CreateKey (never replayed: a lost answer is reconciled by its retained key id).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mqlite import defaults, errors, wire
from mqlite.types import (
    AccessKey,
    BatchResult,
    FilterTestResult,
    Message,
    OutMessage,
    QueueConfig,
    QueueInfo,
    ReceiveMode,
    Stats,
    Subscription,
)

Resp = TypeVar("Resp")
R = TypeVar("R")

SAFE = True
UNSAFE = False


@dataclass(frozen=True, slots=True)
class Call(Generic[Resp, R]):
    route: wire.Route[Any, Resp]
    body: bytes
    safe: bool
    result: Callable[[Resp], R]
    wait_ms: int = 0  # a long poll: the HTTP timeout must exceed it


def _call(
    route: wire.Route[Any, Resp],
    request: object,
    safe: bool,
    result: Callable[[Resp], R],
    wait_ms: int = 0,
) -> Call[Resp, R]:
    return Call(route, wire.encode_request(route, request), safe, result, wait_ms)


def _none(_: object) -> None:
    return None


def _with_queue(queue: str, msgs: Sequence[Message]) -> list[Message]:
    """Wire messages carry no queue name; the embedded client's do."""
    return [dataclasses.replace(m, queue=queue) for m in msgs]


# -- queues and topics ------------------------------------------------------------------


def create_queue(name: str, config: QueueConfig | None) -> Call[wire.EmptyResponse, None]:
    if config is not None and not isinstance(config, QueueConfig):
        raise errors.InvalidArgument("config must be a QueueConfig")
    return _call(wire.CREATE_QUEUE, wire.CreateQueueRequest(name, config), SAFE, _none)


def list_queues() -> Call[wire.ListQueuesResponse, list[QueueInfo]]:
    return _call(
        wire.LIST_QUEUES,
        wire.EmptyRequest(),
        SAFE,
        lambda r: sorted(r.queues, key=lambda q: q.name),
    )


def find_queue(queues: Sequence[QueueInfo], name: str) -> QueueInfo:
    for q in queues:
        if q.name == name:
            return q
    raise errors.QueueNotFound(f"queue {name!r} not found")


def delete_queue(name: str, generation: str) -> Call[wire.DeleteQueueResponse, None]:
    return _call(wire.DELETE_QUEUE, wire.DeleteQueueRequest(name, generation), UNSAFE, _none)


def subscribe(topic: str, name: str, expr: str | None) -> Call[wire.EmptyResponse, None]:
    if expr is not None and not isinstance(expr, str):
        raise errors.InvalidArgument("filter expr must be a string")
    return _call(wire.SUBSCRIBE, wire.SubscribeRequest(topic, name, expr or ""), SAFE, _none)


def unsubscribe(topic: str, name: str) -> Call[wire.EmptyResponse, None]:
    return _call(wire.UNSUBSCRIBE, wire.UnsubscribeRequest(topic, name), UNSAFE, _none)


def list_subscriptions() -> Call[wire.ListSubscriptionsResponse, list[Subscription]]:
    return _call(
        wire.LIST_SUBSCRIPTIONS, wire.EmptyRequest(), SAFE, lambda r: list(r.subscriptions)
    )


def test_filter(
    expr: str,
    sample: OutMessage | None,
    enqueued_at_ms: int | None,
    visible_at_ms: int | None,
) -> Call[FilterTestResult, FilterTestResult]:
    if not isinstance(expr, str):
        raise errors.InvalidArgument("expr must be a string")
    if sample is not None and not isinstance(sample, OutMessage):
        raise errors.InvalidArgument("sample must be an OutMessage")
    req = wire.TestFilterRequest(expr, sample, enqueued_at_ms or 0, visible_at_ms or 0)
    return _call(wire.TEST_FILTER, req, SAFE, lambda r: r)


# -- send -------------------------------------------------------------------------------


def send(
    queue: str, messages: Sequence[OutMessage], ttl_ms: int | None, at_ms: int = 0
) -> Call[wire.SendResponse, list[int]]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise errors.InvalidArgument("messages must be a list of OutMessage")
    for m in messages:
        if not isinstance(m, OutMessage):
            raise errors.InvalidArgument("messages must be a list of OutMessage")
    route = wire.SCHEDULE if at_ms else wire.SEND
    req = wire.SendRequest(queue, tuple(messages), at_ms, ttl_ms or 0)
    return _call(route, req, UNSAFE, lambda r: list(r.seq_numbers))


def send_one(
    queue: str, message: OutMessage, ttl_ms: int | None
) -> Call[wire.SendResponse, list[int]]:
    if not isinstance(message, OutMessage):
        raise errors.InvalidArgument("message must be an OutMessage")
    return send(queue, [message], ttl_ms)


def schedule(
    queue: str, messages: Sequence[OutMessage], at_ms: int, ttl_ms: int | None
) -> Call[wire.SendResponse, list[int]]:
    if not isinstance(at_ms, int) or isinstance(at_ms, bool) or at_ms < 1:
        raise errors.InvalidArgument("at_ms must be a positive integer (epoch ms)")
    return send(queue, messages, ttl_ms, at_ms)


def cancel(queue: str, seq_number: int) -> Call[wire.OkResponse, None]:
    return _call(wire.CANCEL, wire.CancelRequest(queue, seq_number), UNSAFE, _none)


# -- receive ----------------------------------------------------------------------------


def new_attempt_id() -> str:
    return uuid.uuid4().hex


def receive(
    queue: str, max_messages: int, wait_ms: int, mode: str, attempt_id: str | None
) -> Call[wire.MessagesResponse, list[Message]]:
    """Every remote Receive carries an attempt id (a fresh one unless the caller gave
    one), so a retry after a lost answer replays the same batch instead of claiming a
    second one (and, in receive-and-delete mode, instead of losing the first)."""
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
        queue, max_messages, wait_ms, receive_mode, attempt_id or new_attempt_id()
    )
    return _call(wire.RECEIVE, req, SAFE, lambda r: _with_queue(queue, r.messages), wait)


def receive_deferred(
    queue: str, seq_numbers: Sequence[int]
) -> Call[wire.MessagesResponse, list[Message]]:
    if isinstance(seq_numbers, str | bytes) or not isinstance(seq_numbers, Sequence):
        raise errors.InvalidArgument("seq_numbers must be a list of integers")
    req = wire.ReceiveDeferredRequest(queue, tuple(seq_numbers))
    return _call(wire.RECEIVE_DEFERRED, req, UNSAFE, lambda r: _with_queue(queue, r.messages))


# -- settlement -------------------------------------------------------------------------


def _check_token(lock_token: object) -> None:
    if not isinstance(lock_token, str):
        raise errors.InvalidArgument("lock_token must be a string")


def complete(queue: str, seq: int, token: str) -> Call[wire.OkResponse, None]:
    _check_token(token)
    return _call(wire.COMPLETE, wire.SettleRequest(queue, seq, token), SAFE, _none)


def abandon(queue: str, seq: int, token: str, delay_ms: int) -> Call[wire.OkResponse, None]:
    _check_token(token)
    req = wire.SettleRequest(queue, seq, token, delay_ms=delay_ms)
    return _call(wire.ABANDON, req, SAFE, _none)


def reject(
    queue: str, seq: int, token: str, reason: str, description: str
) -> Call[wire.OkResponse, None]:
    _check_token(token)
    if not isinstance(reason, str) or not isinstance(description, str):
        raise errors.InvalidArgument("reason and description must be strings")
    req = wire.SettleRequest(queue, seq, token, reason, description)
    return _call(wire.REJECT, req, SAFE, _none)


def defer(queue: str, seq: int, token: str) -> Call[wire.OkResponse, None]:
    _check_token(token)
    return _call(wire.DEFER, wire.SettleRequest(queue, seq, token), SAFE, _none)


def _pairs(items: Sequence[tuple[int, str]]) -> tuple[wire.SettleItem, ...]:
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise errors.InvalidArgument("messages must be a list of (seq_number, lock_token) pairs")
    out = []
    for item in items:
        if not isinstance(item, tuple | list) or len(item) != 2:
            raise errors.InvalidArgument("each item must be a (seq_number, lock_token) pair")
        out.append(wire.SettleItem(item[0], item[1]))
    return tuple(out)


def complete_batch(
    queue: str, items: Sequence[tuple[int, str]]
) -> Call[wire.BatchResponse, list[BatchResult]]:
    req = wire.BatchSettleRequest(queue, _pairs(items))
    return _call(wire.COMPLETE_BATCH, req, SAFE, lambda r: list(r.results))


def renew_batch(
    queue: str, items: Sequence[tuple[int, str]]
) -> Call[wire.BatchResponse, list[BatchResult]]:
    req = wire.BatchSettleRequest(queue, _pairs(items))
    return _call(wire.RENEW_BATCH, req, SAFE, lambda r: list(r.results))


def renew(queue: str, seq: int, token: str) -> Call[wire.BatchResponse, int]:
    """Renew answers only ``{"ok": true}``; the embedded ``renew`` returns the committed
    deadline. A one-item RenewBatch is the same fenced statement and reports that
    deadline, so it stands in for Renew (same permission, same effect)."""
    _check_token(token)
    if not token:
        raise errors.LockLost("lock lost: empty lock token")
    req = wire.BatchSettleRequest(queue, (wire.SettleItem(seq, token),))

    def deadline(r: wire.BatchResponse) -> int:
        if len(r.results) != 1 or not r.results[0].ok:
            raise errors.LockLost(
                f"lock lost on message {seq} in {queue!r}: wrong or expired token"
            )
        return r.results[0].locked_until_ms

    return _call(wire.RENEW_BATCH, req, SAFE, deadline)


# -- browse, dead letters, status -------------------------------------------------------


def peek(
    queue: str, state: str | None, from_seq: int, max: int
) -> Call[wire.MessagesResponse, list[Message]]:
    if state is not None and not isinstance(state, str):
        raise errors.InvalidArgument("state must be a string")
    req = wire.PeekRequest(queue, from_seq, state or "", max)
    return _call(wire.PEEK, req, SAFE, lambda r: _with_queue(queue, r.messages))


def stats(queue: str) -> Call[Stats, Stats]:
    return _call(wire.STATS, wire.StatsRequest(queue), SAFE, lambda r: r)


def redrive(
    queue: str, target: str | None, max: int, older_than_ms: int, rate_per_sec: int
) -> Call[wire.RedriveResponse, int]:
    req = wire.RedriveRequest(queue, target or "", max, older_than_ms, rate_per_sec)
    return _call(wire.REDRIVE, req, UNSAFE, lambda r: r.moved)


def purge(queue: str, max: int, older_than_ms: int) -> Call[wire.PurgeResponse, int]:
    req = wire.PurgeRequest(queue, max, older_than_ms)
    return _call(wire.PURGE, req, UNSAFE, lambda r: r.purged)


def status() -> Call[wire.StatusResponse, wire.StatusResponse]:
    return _call(wire.STATUS, wire.EmptyRequest(), SAFE, lambda r: r)


def decode(call: Call[Any, R], body: bytes) -> R:
    """Decode a 200 answer into the method's return value."""
    return call.result(wire.decode_response(call.route, body))


# -- access keys ------------------------------------------------------------------------


def create_key(
    id: str, name: str, permissions: Sequence[str], expires_at_ms: int
) -> Call[wire.CreateKeyResponse, tuple[AccessKey, str]]:
    if isinstance(permissions, str | bytes) or not isinstance(permissions, Sequence):
        raise errors.InvalidArgument("permissions must be a list of strings")
    req = wire.CreateKeyRequest(id, name, tuple(permissions), expires_at_ms)
    return _call(wire.CREATE_KEY, req, UNSAFE, lambda r: (r.key, r.token))


def list_keys(
    after_id: str, limit: int, sort: str
) -> Call[wire.ListKeysResponse, tuple[list[AccessKey], str]]:
    req = wire.ListKeysRequest(after_id, limit, sort)
    return _call(wire.LIST_KEYS, req, SAFE, lambda r: (list(r.keys), r.next_after_id))


def revoke_key(id: str) -> Call[wire.OkResponse, None]:
    return _call(wire.REVOKE_KEY, wire.RevokeKeyRequest(id), SAFE, _none)
