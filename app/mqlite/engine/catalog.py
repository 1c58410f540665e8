"""The in-memory catalog of queues and topic subscriptions, and send-name resolution.

Read on every send and claim, so it lives in memory; this process is the only writer of
the database (file lock), and the catalog is updated only after the write commits.
One flat namespace: plain queues, subscriptions (their backing queues) and topics.
"""

from __future__ import annotations

import sqlite3

from mqlite import errors
from mqlite.engine import queues
from mqlite.engine.send import Route
from mqlite.types import QueueInfo, QueueKind


class Catalog:
    def __init__(self) -> None:
        self._queues: dict[str, QueueInfo] = {}
        # topic -> routes (one per subscription, ordered by subscription name)
        self._topics: dict[str, list[Route]] = {}
        self._plain_routes: dict[str, list[Route]] = {}

    def load(self, conn: sqlite3.Connection) -> None:
        self._queues = queues.load_queues(conn)
        self._plain_routes = {}

    # -- queues ---------------------------------------------------------------------------

    def find(self, name: str) -> QueueInfo | None:
        return self._queues.get(name)

    def queue(self, name: str) -> QueueInfo:
        info = self._queues.get(name)
        if info is None:
            raise errors.QueueNotFound(f"queue {name!r} not found")
        return info

    def put(self, info: QueueInfo) -> None:
        self._queues[info.name] = info
        self._plain_routes.pop(info.name, None)
        self._refresh_topic_routes(info)

    def drop(self, name: str) -> None:
        self._queues.pop(name, None)
        self._plain_routes.pop(name, None)

    def check_queue_creation(self, name: str, kind: str) -> None:
        """CreateQueue may reconfigure its own kind only; a live topic name is taken."""
        if name in self._topics:
            raise errors.NameConflict(f"{name!r} is a live topic")
        existing = self._queues.get(name)
        if existing is not None and existing.kind != kind:
            raise errors.NameConflict(
                f"{name!r} is already a {existing.kind}; a cross-kind upsert is refused"
            )
        if existing is None and kind == QueueKind.SUBSCRIPTION:
            raise errors.InvalidArgument(
                "kind=subscription only reconfigures an existing subscription's backing queue; "
                "create subscriptions with subscribe"
            )

    # -- send resolution ------------------------------------------------------------------

    def routes(self, name: str) -> list[Route]:
        """A topic fans out to its subscriptions; otherwise the name must be a queue."""
        topic = self._topics.get(name)
        if topic is not None:
            return topic
        routes = self._plain_routes.get(name)
        if routes is None:
            routes = [Route(self.queue(queues.validate_name(name)))]
            self._plain_routes[name] = routes
        return routes

    def set_topics(self, topics: dict[str, list[Route]]) -> None:
        self._topics = {t: sorted(r, key=lambda x: x.queue.name) for t, r in topics.items() if r}

    def put_route(self, topic: str, route: Route) -> None:
        """Add or replace one subscription's route (fan-out order: subscription name)."""
        routes = [r for r in self._topics.get(topic, []) if r.queue.name != route.queue.name]
        self._topics[topic] = sorted([*routes, route], key=lambda x: x.queue.name)

    def drop_route(self, topic: str, name: str) -> None:
        routes = [r for r in self._topics.get(topic, []) if r.queue.name != name]
        if routes:
            self._topics[topic] = routes
        else:
            self._topics.pop(topic, None)
        self.drop(name)

    def queues(self) -> dict[str, QueueInfo]:
        return dict(self._queues)

    def _refresh_topic_routes(self, info: QueueInfo) -> None:
        for topic, routes in self._topics.items():
            for i, route in enumerate(routes):
                if route.queue.name == info.name:
                    routes = list(routes)
                    routes[i] = Route(info, route.accepts)
                    self._topics[topic] = routes
                    break
