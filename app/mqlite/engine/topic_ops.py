"""Topic verbs mixed into the Engine: subscribe, unsubscribe, list, test a filter.

The namespace rules and fan-out routes live in ``topics.py``; this mixin runs them in a
transaction and stages the catalog change in it (published at COMMIT, see catalog.py).
"""

from __future__ import annotations

from mqlite import errors
from mqlite.engine import audit, queues, send, topics
from mqlite.engine.audit import Actor
from mqlite.engine.core import EngineCore, serialized
from mqlite.engine.validate import check_int
from mqlite.filters import compile_filter
from mqlite.filters import test_filter as run_test_filter
from mqlite.types import FilterTestResult, OutMessage, QueueInfo, Subscription


class TopicOps(EngineCore):
    @serialized
    def subscribe(
        self, topic: str, name: str, expr: str | None = "", *, actor: Actor | None = None
    ) -> QueueInfo:
        """Create subscription ``name`` on ``topic`` with its backing queue, in one call.

        Re-subscribing the same (topic, name) replaces the filter and leaves the backing
        queue's config alone. The filter is compiled and type-checked first: a bad one is
        ``InvalidArgument`` and nothing is stored.
        """
        topic = queues.validate_name(topic, "topic")
        name = queues.validate_name(name, "subscription name")
        if expr is not None and not isinstance(expr, str):
            raise errors.InvalidArgument("filter expr must be a string")
        compiled = compile_filter(expr) if expr else None
        with self._write() as (conn, now):
            info = topics.subscribe(conn, now, topic, name, expr, self.catalog.find(name))
            audit.record(conn, now, actor, "Subscribe", topic, subscription=name, filter=expr or "")
            self.catalog.put(info)
            self.catalog.put_route(
                topic, topics.make_route(topic, info, compiled, self.filter_failures)
            )
        return info

    @serialized
    def unsubscribe(self, topic: str, name: str, *, actor: Actor | None = None) -> None:
        """Remove a subscription and its (empty) backing queue; the topic goes with its last."""
        topic = queues.validate_name(topic, "topic")
        name = queues.validate_name(name, "subscription name")
        with self._write() as (conn, now):
            topics.unsubscribe(conn, topic, name)
            audit.record(conn, now, actor, "Unsubscribe", topic, subscription=name)
            self.catalog.drop_route(topic, name)
            self._wake_all_after_commit({name})
            self.effects.forget_after_commit(self.store, name)  # the backing queue's

    @serialized
    def list_subscriptions(self) -> list[Subscription]:
        """Every subscription with its topic and filter, ordered by topic then name."""
        with self.store.transaction() as conn:
            return topics.list_subscriptions(conn)

    def test_filter(
        self,
        expr: str,
        sample: OutMessage | None = None,
        enqueued_at_ms: int | None = None,
        visible_at_ms: int | None = None,
    ) -> FilterTestResult:
        """Compile ``expr`` and, given a sample, decide exactly as a publish would."""
        if not isinstance(expr, str):
            raise errors.InvalidArgument("expr must be a string")
        env = None
        if sample is not None:
            (msg,) = send.validate_messages([sample], self.max_message_bytes)
            enq = self.clock.now_ms() if enqueued_at_ms is None else enqueued_at_ms
            check_int("enqueued_at_ms", enq)
            vis = enq if visible_at_ms is None else visible_at_ms
            check_int("visible_at_ms", vis)
            env = send.filter_input(msg, enq, vis)
        return run_test_filter(expr, env)
