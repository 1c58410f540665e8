"""The tool table: every tool ``mqlite-mcp`` offers, in the order ``tools/list`` shows them.

Each entry names the wire route it forwards to, what it does to the broker (``Effect``)
and, in words for a model, what it does and when to use it; schemas, credentials,
idempotency and requests are derived (``tool``). Every route of ``wire.ROUTES`` is served
by a tool or named in ``NOT_TOOLS`` with the reason, and ``tests/mcp`` fails otherwise:
a new RPC cannot be forgotten, only deliberately left out.

Kept small on purpose (original-behaviour §10: over-specified tools make models misuse
them): one message per send, one lock per settle call.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from mqlite import defaults, errors, wire

from .overview import overview
from .tool import Arguments, Effect, Tool

R, W, D = Effect.READ, Effect.WRITE, Effect.DESTRUCTIVE

SETTLE = ("queue", "seq_number", "lock_token")

# -- what a few tools add to the wire ----------------------------------------------------


def _send_route(args: Arguments) -> tuple[wire.Route[Any, Any], Arguments]:
    """A future ``scheduled_enqueue_time_ms`` is the Schedule route (same request)."""
    at = args.get("scheduled_enqueue_time_ms", 0)
    return (wire.SCHEDULE if isinstance(at, int) and at > 0 else wire.SEND), args


def _receive_attempt(args: Arguments) -> tuple[wire.Route[Any, Any], Arguments]:
    """Every Receive carries a fresh attempt id, as the SDK's do: the client's retry of
    a lost answer then replays the same batch instead of claiming a second one."""
    return wire.RECEIVE, {**args, "receive_attempt_id": uuid.uuid4().hex}


def _renewed(response: wire.RenewBatchResponse) -> dict[str, int]:
    """A one-item RenewBatch is the SDK's renew (``calls.STAND_INS``): it reports the
    committed deadline, and a stale lock is ``lock_lost`` as from Renew."""
    (item,) = response.results
    if not item.ok:
        raise errors.LockLost(
            f"lock lost on message {item.seq_number}: wrong or expired lock token"
        )
    return {"seq_number": item.seq_number, "locked_until_ms": item.locked_until_ms}


PURGE_ALL = {
    "description": "true = purge EVERY dead letter of the queue: the one way to empty the "
    "whole dead-letter queue (the original's purge did that when max was absent)",
    "type": "boolean",
    "default": False,
}
PURGE_BOUNDS = {
    "max": {"description": "at most this many, oldest first (> 0)", "minimum": 0},
    "older_than_ms": {"description": "only those older than this many ms (> 0)", "minimum": 0},
}
RECEIVE_BOUNDS = {
    "max_messages": {
        "description": f"how many messages at most, 1 to {defaults.MAX_RECEIVE_MESSAGES}",
        "minimum": 1,
        "maximum": defaults.MAX_RECEIVE_MESSAGES,
        "default": 1,
    },
    "wait_time_ms": {
        "description": f"long-poll up to this many ms for the first message, 0 to "
        f"{defaults.MAX_WAIT_MS}",
        "minimum": 0,
        "maximum": defaults.MAX_WAIT_MS,
    },
}


def _purge_bounded(args: Arguments) -> tuple[wire.Route[Any, Any], Arguments]:
    """The wire purges the whole DLQ when both bounds are zero; a tool call must say so."""
    everything = args.pop("all", False)
    bounded = bool(args.get("max") or args.get("older_than_ms") or args.get("seq_numbers"))
    if everything is True and bounded:
        raise errors.InvalidArgument(
            "purge: give a bound (max, older_than_ms, seq_numbers) or `all: true`, not both"
        )
    if everything is not True and not bounded:
        raise errors.InvalidArgument(
            "purge refused: give a bound (max, older_than_ms and/or seq_numbers), or the argument "
            "`all: true` to purge every dead letter of the queue"
        )
    return wire.PURGE, args


# -- the table ---------------------------------------------------------------------------

TOOLS: tuple[Tool, ...] = (
    Tool(
        "observe",
        wire.OBSERVE,
        R,
        "The broker's complete observation, the same snapshot /metrics and `mqlite "
        "observe` read: availability and freshness (`collection.state`: read it first; "
        "`queues` is null while the collection is unavailable), per-queue gauges (backlog "
        "by state, oldest message age, dead letters), committed message effects, storage "
        "operations, maintenance tasks and their recent failures, filter failures and HTTP "
        "measurements. Takes no arguments. Counters reset when the broker restarts. It is "
        "large (tens of KB, more with many queues): for health and backlog call overview "
        "instead; call observe only when you need what overview leaves out: per-queue "
        "event counters, latency histograms, storage and HTTP measurements by RPC and "
        "code, maintenance step diagnostics, or the exact snapshot /metrics renders.",
    ),
    Tool(
        "overview",
        wire.OBSERVE,
        R,
        "The broker at a glance, small enough to call often (under 4 KB for 50 queues): "
        "`health` (ok or degraded) with the `problems` found (queue collection or storage "
        "read unavailable, failing maintenance tasks, replication), storage (database "
        "size, failed storage operations), and one row per queue with its counts by state, "
        "dead letters and oldest message age in seconds (`queue_columns` names the "
        "columns; `queues` is null while the collection is unavailable). Takes no "
        "arguments. Start here to check health or find a backed-up queue.",
        finish=overview,
    ),
    Tool(
        "list_queues",
        wire.LIST_QUEUES,
        R,
        "List every queue (subscription backing queues included) with its whole "
        "configuration and its `generation`, which delete_queue needs. Use it to see what "
        "exists before sending to or receiving from a queue.",
    ),
    Tool(
        "create_queue",
        wire.CREATE_QUEUE,
        W,
        "Create a queue, or reconfigure an existing one of the same kind (an upsert). "
        "Repeating it with the same settings changes nothing; repeating it with other "
        "settings REPLACES the queue's whole configuration, and omitted `config` fields "
        "go back to their defaults (lock_duration_ms 30000, max_delivery_count 10, "
        "standard ordering, no TTL, no dedup window): list_queues first to keep the "
        "current ones.",
    ),
    Tool(
        "delete_queue",
        wire.DELETE_QUEUE,
        D,
        "Destructive: delete an empty plain queue for good. Pass the `generation` that "
        "list_queues reports: a queue deleted and created again since has another one, and "
        "the call is refused instead of deleting the newer queue.",
    ),
    Tool(
        "subscribe",
        wire.SUBSCRIBE,
        W,
        "Create or update subscription `name` on `topic`: each message sent to the topic "
        "is copied into the subscription's backing queue (named `name`; receive from it) "
        "when `filter.expr` matches it (absent or empty = every message). Check an "
        "expression with test_filter first.",
    ),
    Tool(
        "unsubscribe",
        wire.UNSUBSCRIBE,
        D,
        "Destructive: remove subscription `name` from `topic` together with its (empty) "
        "backing queue; later messages to the topic are no longer copied to it.",
    ),
    Tool(
        "list_subscriptions",
        wire.LIST_SUBSCRIPTIONS,
        R,
        "List every subscription with its topic and filter expression, by topic then name.",
    ),
    Tool(
        "test_filter",
        wire.TEST_FILTER,
        R,
        "Dry-run a subscription filter expression: whether it compiles (`valid`, `error`) "
        "and, given a sample `message`, whether a publish would route that message to the "
        "subscription (`matched`). Changes nothing.",
    ),
    Tool(
        "send",
        wire.SEND,
        W,
        "Send ONE message to a queue or topic; returns `seq_numbers`, a list holding its "
        "seq_number (as the HTTP Send answers). Give the payload "
        "as `body` (UTF-8 text) or `body_base64` (binary). `message_id` deduplicates a "
        "resend on a queue with a dedup window; `group_id` keeps a group in order (required "
        "on group_fifo queues); `scheduled_enqueue_time_ms` (epoch ms, in the future) holds "
        "delivery until then (cancel can take it back); `ttl_ms` bounds its life.",
        one="messages",
        prepare=_send_route,
        also=(wire.SCHEDULE,),
    ),
    Tool(
        "receive",
        wire.RECEIVE,
        W,
        "Receive up to `max_messages` (default 1) under a peek-lock, waiting up to "
        "`wait_time_ms` (at most 20000) for the first one. Each message has a "
        "`seq_number`, a `lock_token` and its `body` base64-encoded (plus `body_text` "
        "when it is UTF-8 text): settle every message before its "
        "`locked_until_ms` with complete (done), abandon (retry later), reject "
        "(dead-letter) or defer, or renew it to keep working. Delivery is at-least-once, so "
        "handle messages idempotently.",
        fields=("queue", "max_messages", "wait_time_ms"),
        narrow=RECEIVE_BOUNDS,
        prepare=_receive_attempt,
        repeatable=False,
    ),
    Tool(
        "complete",
        wire.COMPLETE,
        W,
        "Acknowledge a received message once it is handled: it is deleted from the queue. "
        "A `lock_lost` error means the lock expired or the token is wrong, and the message "
        "may be delivered again.",
        fields=SETTLE,
    ),
    Tool(
        "abandon",
        wire.ABANDON,
        W,
        "Give a received message back unhandled: it can be received again after "
        "`delay_ms`, or when omitted after the queue's retry policy delay (at once without "
        "one). Say why in `error`: it is kept as the message's last_error. After the "
        "queue's max_delivery_count deliveries it is dead-lettered instead, the error in "
        "its description.",
        fields=(*SETTLE, "delay_ms", "error"),
    ),
    Tool(
        "reject",
        wire.REJECT,
        W,
        "Dead-letter a received message that cannot be handled, with a `reason` and a "
        "`description` for whoever looks at it (peek with state dead_lettered shows them "
        "as dead_letter_reason and dead_letter_description; redrive brings it back).",
        fields=(*SETTLE, "dead_letter_reason", "dead_letter_description"),
        rename={"reason": "dead_letter_reason", "description": "dead_letter_description"},
        narrow={
            "reason": {"description": "why it is dead-lettered, short (peek: dead_letter_reason)"},
            "description": {
                "description": "the details, for whoever inspects the dead letter (peek: "
                "dead_letter_description)"
            },
        },
    ),
    Tool(
        "renew",
        wire.RENEW_BATCH,
        W,
        "Extend the lock of a received message by the queue's lock duration, for work "
        "that outlasts the lock; returns the new `locked_until_ms`.",
        one="messages",
        finish=_renewed,
    ),
    Tool(
        "defer",
        wire.DEFER,
        W,
        "Set a received message aside without settling it: only receive_deferred with its "
        "`seq_number` gets it back, so keep that number.",
        fields=SETTLE,
    ),
    Tool(
        "receive_deferred",
        wire.RECEIVE_DEFERRED,
        W,
        "Lock deferred messages by their `seq_numbers` (from defer), to settle them like "
        "received ones; numbers of messages that are not deferred are skipped.",
    ),
    Tool(
        "peek",
        wire.PEEK,
        R,
        "Browse a queue's messages without locking or changing them, from `from_seq` on, "
        "optionally only those in one `state` (e.g. dead_lettered, with their reasons). "
        "Bodies are base64 in `body`, plus `body_text` when UTF-8. Never returns a lock "
        "token: receive to process a message.",
    ),
    Tool(
        "stats",
        wire.STATS,
        R,
        "A queue's message counts by state and the age of its oldest active or locked "
        "message: is it backing up, are dead letters piling up?",
    ),
    Tool(
        "redrive",
        wire.REDRIVE,
        W,
        "Move dead letters back to active (or into queue `target`), oldest first, at most "
        "`max` of them and only those older than `older_than_ms` (0 = no bound), optionally "
        "paced; returns how many moved. Fix what failed them first, or they fail again.",
    ),
    Tool(
        "purge",
        wire.PURGE,
        D,
        "Destructive: permanently delete a queue's dead letters, oldest first; returns how "
        "many. Bound it with `max` and/or `older_than_ms`; to purge EVERY dead letter of "
        "the queue pass the argument `all: true` (and no bound). A call with neither is "
        "refused. Look first (peek with state dead_lettered): this cannot be undone.",
        narrow=PURGE_BOUNDS,
        extra={"all": PURGE_ALL},
        prepare=_purge_bounded,
    ),
    Tool(
        "cancel",
        wire.CANCEL,
        D,
        "Destructive: delete a scheduled message that has not been delivered yet, by the "
        "`seq_number` send returned for it.",
    ),
    Tool(
        "create_key",
        wire.CREATE_KEY,
        W,
        "Issue a managed access key with `permissions` (send, listen, or manage, which "
        "includes both) under an `id` you choose (32 lowercase hex characters) and keep; "
        "`queues` confines it to those queue names or trailing-* prefixes (empty = all). "
        "The result holds the secret `token` ONCE: store it securely and never paste it "
        "into prompts or files. Never retry with a new id after an unclear failure: look "
        "the id up with list_keys, revoke it and issue a replacement.",
    ),
    Tool(
        "list_keys",
        wire.LIST_KEYS,
        R,
        "Page through access key metadata (never secrets), revoked and expired keys "
        "included: pass each page's `next_after_id` as `after_id` until it is absent, "
        "keeping the same `sort`.",
    ),
    Tool(
        "revoke_key",
        wire.REVOKE_KEY,
        D,
        "Destructive: revoke a managed access key by its public `id`, for good (revoking "
        "again succeeds); clients using it are refused from then on.",
    ),
    Tool(
        "create_schedule",
        wire.CREATE_SCHEDULE,
        W,
        "Create or replace (by `name`) a cron schedule: at every slot of `cron` (five fields "
        "minute hour day-of-month month day-of-week, or @hourly/@daily/@weekly/@monthly/"
        "@yearly) in IANA `timezone` (default UTC) the broker sends `message` to `queue` (a "
        "queue, or a topic that fans out), once per slot, with message_id "
        "cron:<name>:<slot epoch ms>. `catch_up` latest (default) sends the most recent "
        "slot missed while the broker was down, skip sends none; `paused` keeps it without "
        "firing. Repeating the call is harmless.",
    ),
    Tool(
        "list_schedules",
        wire.LIST_SCHEDULES,
        R,
        "List every cron schedule with its cron, timezone, target, `status` (active, paused "
        "or target missing: its queue or topic is gone, so it does not fire), the next slot "
        "(`next_fire_at_ms`), the last one sent and how many were sent.",
    ),
    Tool(
        "delete_schedule",
        wire.DELETE_SCHEDULE,
        D,
        "Destructive: delete a cron schedule by `name`; it fires no more slots (messages it "
        "already sent stay). `deleted` is false when there was no such schedule.",
    ),
    Tool(
        "list_audit",
        wire.LIST_AUDIT,
        R,
        "Read the audit trail: who (`actor`: admin:<n>, key:<id>, embedded) changed what "
        "(`action`: CreateQueue with its config diff, DeleteQueue, Subscribe, Unsubscribe, "
        "Purge and Redrive with counts, CreateKey, RevokeKey, CreateSchedule, "
        "DeleteSchedule) and when, with the HTTP `request_id`. Oldest first: pass the last "
        "entry's `id` as `after_id` for the next page; `queue` and `since_ms` narrow it.",
    ),
    Tool(
        "create_push",
        wire.CREATE_PUSH,
        W,
        "Bind (or update, by `queue`) a push target: the broker POSTs each message of the "
        "queue to `url` (https; internal addresses are refused unless the operator "
        "allow-listed them), signed with Standard Webhooks headers, retried by the queue's "
        "retry policy, dead-lettered as PushRejected on a 4xx. Afterwards the queue cannot "
        "be received from. A new target without `secret` gets one generated, shown once in "
        "the answer: hand it to whoever verifies the signatures. `paused` true stops "
        "delivery and keeps the target (the secret is kept on updates).",
    ),
    Tool(
        "list_pushes",
        wire.LIST_PUSHES,
        R,
        "List every push target with its url, `status` (active, paused, or failing: its "
        "last attempt failed), last HTTP status and error, delivered and failed counts "
        "since the broker started, and when a failed message is due again. Never a secret.",
    ),
    Tool(
        "delete_push",
        wire.DELETE_PUSH,
        D,
        "Destructive: unbind a queue's push target; the broker stops POSTing its messages "
        "and the queue can be received from again. `deleted` is false when there was none.",
    ),
)

NOT_TOOLS: Mapping[str, str] = MappingProxyType(
    {
        wire.COMPLETE_BATCH.name: "a throughput path for SDK consumers; an agent settles "
        "one message per call (complete)",
        wire.RENEW.name: "answers only ok: the renew tool sends a one-item RenewBatch, "
        "which reports the committed deadline (the SDK's renew does the same)",
        wire.ENSURE_QUEUE.name: "the SDK's start-up verb; an agent creating a queue calls "
        "create_queue, having read list_queues first (a small tool set is easier to use)",
        wire.STATUS.name: "a subset of what observe reports (version, backend, footprint, "
        "counts); one health view keeps an agent from guessing which to call",
    }
)

BY_NAME: Mapping[str, Tool] = MappingProxyType({t.name: t for t in TOOLS})
