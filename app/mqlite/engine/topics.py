"""Topics and subscriptions: the disjoint namespace, subscribe/unsubscribe, fan-out routes.

A topic is not stored: it exists iff subscription rows name it. Each subscription owns a
backing queue named after the subscription (kind ``subscription``), created in the same
transaction as its row. Filters are compiled once at subscribe and cached per route;
evaluation fails closed (a runtime error routes nothing there and is counted, and logged
at most once per filter per minute).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable

from mqlite import errors
from mqlite.engine import queues
from mqlite.engine.send import Route
from mqlite.filters import CompiledFilter, FilterInput, FilterRuntimeError, compile_filter
from mqlite.types import QueueConfig, QueueInfo, QueueKind, Subscription

log = logging.getLogger("mqlite.filters")

LOG_EVERY_MS = 60_000

SELECT_SUBSCRIPTIONS_SQL = """
SELECT topic, subscription, filter_json FROM subscriptions ORDER BY topic, subscription
"""

SELECT_SUBSCRIPTION_TOPIC_SQL = "SELECT topic FROM subscriptions WHERE subscription = ?"

IS_TOPIC_SQL = "SELECT 1 FROM subscriptions WHERE topic = ? LIMIT 1"

UPSERT_SUBSCRIPTION_SQL = """
INSERT INTO subscriptions (topic, subscription, filter_json, created_at) VALUES (?, ?, ?, ?)
ON CONFLICT(topic, subscription) DO UPDATE SET filter_json = excluded.filter_json
"""

DELETE_SUBSCRIPTION_SQL = "DELETE FROM subscriptions WHERE topic = ? AND subscription = ?"


def filter_json(expr: str | None) -> str | None:
    """``{"expr": ...}``; an empty expression stores ``{}``, no filter at all stores NULL."""
    if expr is None:
        return None
    return json.dumps({"expr": expr} if expr else {}, ensure_ascii=False)


def expr_of(stored: str | None) -> str:
    if not stored:
        return ""
    value = json.loads(stored).get("expr", "")
    return value if isinstance(value, str) else ""


class FilterFailures:
    """Counts routing failures: evaluation per (topic, subscription), and stored filters
    that no longer compile (the ``compile`` stage); rate-limits the logging. Publishes
    route on worker threads, hence the lock."""

    def __init__(self, monotonic_ms: Callable[[], float]) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()
        self.compile_failures = 0
        self._last_logged: dict[tuple[str, str], float] = {}
        self._monotonic_ms = monotonic_ms
        self._lock = threading.Lock()

    def by_stage(self) -> list[tuple[str, int]]:
        """(stage, count) for both stages, zeros included (observe.py)."""
        with self._lock:
            return [("compile", self.compile_failures), ("evaluate", sum(self.counts.values()))]

    def record_compile(self) -> None:
        with self._lock:
            self.compile_failures += 1

    def record(self, topic: str, name: str, error: Exception) -> None:
        key = (topic, name)
        with self._lock:
            self.counts[key] += 1
        now = self._monotonic_ms()
        last = self._last_logged.get(key)
        if last is None or now - last >= LOG_EVERY_MS:
            self._last_logged[key] = now
            log.warning(
                "subscription filter failed; message not routed there (fail closed)",
                extra={"topic": topic, "subscription": name, "error": str(error)},
            )


def make_route(
    topic: str, queue: QueueInfo, compiled: CompiledFilter | None, failures: FilterFailures
) -> Route:
    if compiled is None or compiled.matches_all:
        return Route(queue)
    evaluate = compiled.evaluate
    name = queue.name

    def accepts(env: FilterInput) -> bool:
        try:
            return evaluate(env)
        except FilterRuntimeError as exc:
            failures.record(topic, name, exc)
            return False

    return Route(queue, accepts)


def compile_stored(
    topic: str, name: str, stored: str | None, failures: FilterFailures | None = None
) -> CompiledFilter | None:
    """Compile a filter read back from the database; one that no longer compiles routes
    nothing (fail closed) rather than everything, and counts as a compile failure."""
    expr = expr_of(stored)
    if not expr:
        return None
    try:
        return compile_filter(expr)
    except errors.InvalidArgument as exc:
        if failures is not None:
            failures.record_compile()
        log.error(
            "stored subscription filter does not compile; routing nothing to it",
            extra={"topic": topic, "subscription": name, "error": exc.message},
        )
        return compile_filter("false")


def load_routes(
    conn: sqlite3.Connection, catalog_queues: dict[str, QueueInfo], failures: FilterFailures
) -> dict[str, list[Route]]:
    topics: dict[str, list[Route]] = {}
    for topic, name, stored in conn.execute(SELECT_SUBSCRIPTIONS_SQL).fetchall():
        queue = catalog_queues.get(name)
        if queue is None:
            continue
        compiled = compile_stored(topic, name, stored, failures)
        topics.setdefault(topic, []).append(make_route(topic, queue, compiled, failures))
    return topics


def check_subscribe(
    conn: sqlite3.Connection, topic: str, name: str, existing: QueueInfo | None
) -> bool:
    """Enforce the one flat namespace (concepts §2); True when this re-subscribes."""
    if topic == name:
        raise errors.NameConflict(f"topic and subscription name are both {topic!r}")
    if conn.execute(SELECT_KIND_SQL, (topic,)).fetchone() is not None:
        raise errors.NameConflict(f"topic {topic!r} is the name of an existing queue")
    if conn.execute(IS_TOPIC_SQL, (name,)).fetchone() is not None:
        raise errors.NameConflict(f"subscription name {name!r} is a live topic")
    if existing is None:
        return False
    if existing.kind == QueueKind.QUEUE:
        raise errors.NameConflict(f"subscription name {name!r} is a plain queue")
    row = conn.execute(SELECT_SUBSCRIPTION_TOPIC_SQL, (name,)).fetchone()
    if row is None or row[0] != topic:
        owner = row[0] if row else "no topic"
        raise errors.NameConflict(f"subscription {name!r} belongs to {owner!r}")
    return True


SELECT_KIND_SQL = queues.SELECT_KIND_SQL


def subscribe(
    conn: sqlite3.Connection,
    now_ms: int,
    topic: str,
    name: str,
    expr: str | None,
    existing: QueueInfo | None,
) -> QueueInfo:
    """Create (or re-filter) a subscription and its backing queue in one transaction."""
    resubscribe = check_subscribe(conn, topic, name, existing)
    if resubscribe and existing is not None:
        queue = existing  # a re-subscribe never touches the backing queue's config
    else:
        queue = queues.upsert_queue(conn, now_ms, name, QueueConfig(kind=QueueKind.SUBSCRIPTION))
    conn.execute(UPSERT_SUBSCRIPTION_SQL, (topic, name, filter_json(expr), now_ms))
    return queue


def unsubscribe(conn: sqlite3.Connection, topic: str, name: str) -> None:
    """Remove a subscription and its backing queue; refuse while the queue holds messages."""
    if conn.execute(DELETE_SUBSCRIPTION_SQL, (topic, name)).rowcount == 0:
        raise errors.NotFound(f"no subscription {name!r} on topic {topic!r}")
    if conn.execute(queues.HAS_MESSAGES_SQL, (name,)).fetchone()[0]:
        raise errors.QueueNotEmpty(
            f"subscription {name!r} still holds messages (any state); drain it first"
        )
    for sql in (
        queues.DELETE_QUEUE_DEDUP_SQL,
        queues.DELETE_QUEUE_RECEIPTS_SQL,
        queues.DELETE_QUEUE_ATTEMPTS_SQL,
        queues.DELETE_QUEUE_SQL,
    ):
        conn.execute(sql, (name,))
    conn.execute(queues.DELETE_GENERATION_SQL, (queues.generation_key(name),))


def list_subscriptions(conn: sqlite3.Connection) -> list[Subscription]:
    return [
        Subscription(topic, name, expr_of(stored))
        for topic, name, stored in conn.execute(SELECT_SUBSCRIPTIONS_SQL).fetchall()
    ]
