"""The catalog's verbs: queues (create, ensure, list, get, delete) and topics (subscribe,
unsubscribe, list, test a filter).

The namespace rules and fan-out routes live in ``queues.py`` and ``topics.py``; these verbs
run them in a transaction and stage the catalog change in it (published at COMMIT, see
catalog.py).
"""

from __future__ import annotations

from mqlite import errors
from mqlite.engine import audit, queues, send, topics
from mqlite.engine.audit import Actor
from mqlite.engine.core import serialized
from mqlite.engine.part import Part
from mqlite.engine.validate import check_int
from mqlite.filters import compile_filter
from mqlite.filters import test_filter as run_test_filter
from mqlite.types import (
    FilterTestResult,
    OutMessage,
    QueueConfig,
    QueueEnsured,
    QueueInfo,
    Subscription,
)


class Queues(Part):
    # -- queues ---------------------------------------------------------------------------

    @serialized
    def create_queue(
        self, name: str, config: QueueConfig | None = None, *, actor: Actor | None = None
    ) -> QueueInfo:
        """Create, or reconfigure (same kind only), a queue. Overwrites every config field.
        Audited with the config diff against the previous config (``audit.py``)."""
        name = queues.validate_name(name)
        cfg = queues.normalize_config(config if config is not None else QueueConfig())
        self.catalog.check_queue_creation(name, cfg.kind)
        before = self.catalog.find(name)
        with self.store.transaction() as conn:
            now = self.clock.now_ms()
            info = queues.upsert_queue(conn, now, name, cfg)
            audit.queue_upserted(conn, now, actor, before, info, queues.CONFIG_FIELDS)
            self.catalog.put(info)
        return info

    @serialized
    def ensure_queue(
        self,
        name: str,
        config: QueueConfig | None = None,
        strict: bool = False,
        *,
        actor: Actor | None = None,
    ) -> QueueEnsured:
        """Create a queue if the name is free; an existing one is left as it is and its
        differences from ``config`` reported (``strict``: refused with
        ``QueueConfigDiffers``). One conditional insert, so no read-then-write race."""
        name = queues.validate_name(name)
        if not isinstance(strict, bool):
            raise errors.InvalidArgument("strict must be a boolean")
        cfg = queues.normalize_config(config if config is not None else QueueConfig())
        self.catalog.check_queue_creation(name, cfg.kind)
        with self.store.transaction() as conn:
            now = self.clock.now_ms()
            info, created = queues.insert_queue_if_absent(conn, now, name, cfg)
            if created:  # an existing queue is left as it is: nothing changed, no row
                audit.record(conn, now, actor, "EnsureQueue", name, created=True)
            differs = () if created else queues.config_differences(cfg, info.config)
            if strict and differs:
                raise errors.QueueConfigDiffers(
                    f"queue {name!r} exists with a different {', '.join(differs)}; "
                    "it was left as it is (create_queue reconfigures it)"
                )
            self.catalog.put(info)
        return QueueEnsured(info, created, differs)

    def list_queues(self) -> list[QueueInfo]:
        """Every queue by name (on the replica if any: a queue created a moment ago may be
        missing there; ``get_queue`` reads the catalog, always current)."""
        found = self._read_stale(queues.load_queues)
        return sorted(found.values(), key=lambda q: q.name)

    def get_queue(self, name: str) -> QueueInfo:
        return self._queue(name)

    @serialized
    def delete_queue(
        self, name: str, generation: str | None = None, *, actor: Actor | None = None
    ) -> None:
        """Delete an empty plain queue; ``generation`` fences against a replacement."""
        name = queues.validate_name(name)
        if generation is not None and (not isinstance(generation, str) or not generation):
            raise errors.InvalidArgument("generation must be a non-empty string")
        with self.store.transaction() as conn:
            queues.delete_queue(conn, name, generation)
            audit.record(conn, self.clock.now_ms(), actor, "DeleteQueue", name)
            self.catalog.drop(name)
            self._wake_all_after_commit({name})  # parked long polls wake, find it gone
            self.effects.forget_after_commit(self.store, name)  # its series go with it

    def topic_of(self, name: str) -> str | None:
        """The topic ``name`` is a subscription of, if any (a catalog read: any thread). A
        scoped key reaches a subscription through its topic's name (server ``auth``)."""
        return self.catalog.topic_of(name)

    def has_filters(self, name: str) -> bool:
        """True when a send to ``name`` evaluates subscription filters (the server then
        routes it on a worker thread, off the event loop and off the writer)."""
        try:
            return any(r.accepts is not None for r in self.catalog.routes(name))
        except errors.MQLiteError:
            return False

    # -- topics ---------------------------------------------------------------------------

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
