"""The in-memory catalog of queues and topic subscriptions, and send-name resolution.

Read on every send and claim, so it lives in memory; this process is the only writer of
the database (file lock). A change is made inside the transaction that writes its rows and
becomes visible to everyone only when that transaction COMMITs: until then it is staged,
seen only by the thread holding the writer (so ``create_queue`` then ``send`` inside one
``tx()`` works), and a rollback -- of the whole transaction or just the savepoint of one
call in a group-commit batch -- discards exactly the staged edits it covered.
One flat namespace: plain queues, subscriptions (their backing queues) and topics.
"""

from __future__ import annotations

import sqlite3

from mqlite import errors
from mqlite.engine import queues
from mqlite.engine.send import Route
from mqlite.engine.store import Store
from mqlite.types import OrderingMode, QueueConfig, QueueInfo, QueueKind


class _Version:
    """One consistent version of the catalog. Edits copy it (copy-on-write): versions
    already published are never mutated, except for the memos of plain routes and lanes."""

    __slots__ = ("lanes", "plain_routes", "queues", "retrying", "topics")

    def __init__(
        self,
        queues: dict[str, QueueInfo] | None = None,
        topics: dict[str, list[Route]] | None = None,
    ) -> None:
        self.queues: dict[str, QueueInfo] = queues or {}
        # topic -> routes (one per subscription, ordered by subscription name)
        self.topics: dict[str, list[Route]] = topics or {}
        self.plain_routes: dict[str, list[Route]] = {}
        # name -> its send lane (send_lane.py), or None where a send goes the general way;
        # filled by ``Catalog.send_lane``, only for names of queues (bounded by them).
        self.lanes: dict[str, QueueInfo | None] = {}
        self.retrying: dict[str, QueueConfig] | None = None  # memo of retry_policies()

    def copy(self) -> _Version:
        return _Version(dict(self.queues), dict(self.topics))


class Catalog:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._committed = _Version()
        self._pending: _Version | None = None

    def load(self, conn: sqlite3.Connection, topics: dict[str, list[Route]]) -> None:
        """Install the catalog read at open (before anyone else can see the engine)."""
        routes = {t: sorted(r, key=lambda x: x.queue.name) for t, r in topics.items() if r}
        self._committed = _Version(queues.load_queues(conn), routes)

    # -- versions -------------------------------------------------------------------------

    def _view(self) -> _Version:
        pending = self._pending
        if pending is not None and self._store.lock._is_owned():  # type: ignore[attr-defined]
            return pending
        return self._committed

    def _edit(self) -> _Version:
        """A new staged version for one change; published at COMMIT, undone on rollback."""
        store = self._store
        if not store.in_transaction:
            raise AssertionError("catalog edits happen inside the transaction that writes them")
        previous = self._pending
        version = (previous or self._committed).copy()
        self._pending = version

        def undo() -> None:
            self._pending = previous

        store.on_rollback(undo)
        store.after_commit(self._publish)
        return version

    def _publish(self) -> None:
        if self._pending is not None:
            self._committed, self._pending = self._pending, None

    # -- queues ---------------------------------------------------------------------------

    def find(self, name: str) -> QueueInfo | None:
        return self._view().queues.get(name)

    def queue(self, name: str) -> QueueInfo:
        info = self._view().queues.get(name)
        if info is None:
            raise errors.QueueNotFound(f"queue {name!r} not found")
        return info

    def put(self, info: QueueInfo) -> None:
        version = self._edit()
        version.queues[info.name] = info
        for topic, routes in version.topics.items():
            for i, route in enumerate(routes):
                if route.queue.name == info.name:
                    routes = list(routes)
                    routes[i] = Route(info, route.accepts)
                    version.topics[topic] = routes
                    break

    def drop(self, name: str) -> None:
        self._edit().queues.pop(name, None)

    def check_queue_creation(self, name: str, kind: str) -> None:
        """CreateQueue may reconfigure its own kind only; a live topic name is taken."""
        view = self._view()
        if name in view.topics:
            raise errors.NameConflict(f"{name!r} is a live topic")
        existing = view.queues.get(name)
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
        view = self._committed if self._pending is None else self._view()  # (hot path)
        topic = view.topics.get(name)
        if topic is not None:
            return topic
        routes = view.plain_routes.get(name)
        if routes is None:
            info = view.queues.get(queues.validate_name(name))
            if info is None:
                raise errors.QueueNotFound(f"queue {name!r} not found")
            routes = [Route(info)]
            view.plain_routes[name] = routes
        return routes

    def send_lane(self, name: str) -> QueueInfo | None:
        """The send lane of ``name`` in the committed version (send_lane.py), computed
        once per version: a queue (not a topic) with no dedup window and not group_fifo,
        whose single plain sends the lane may take. None: the general way."""
        view = self._committed
        info = view.queues.get(name)
        if info is None or name in view.topics:
            return None  # (not cached: an unknown name must not grow the map)
        cfg = info.config
        taken = cfg.dedup_window_ms <= 0 and cfg.ordering_mode != OrderingMode.GROUP_FIFO
        lane = view.lanes[name] = info if taken else None
        return lane

    def put_route(self, topic: str, route: Route) -> None:
        """Add or replace one subscription's route (fan-out order: subscription name)."""
        version = self._edit()
        routes = [r for r in version.topics.get(topic, []) if r.queue.name != route.queue.name]
        version.topics[topic] = sorted([*routes, route], key=lambda x: x.queue.name)

    def drop_route(self, topic: str, name: str) -> None:
        version = self._edit()
        routes = [r for r in version.topics.get(topic, []) if r.queue.name != name]
        if routes:
            version.topics[topic] = routes
        else:
            version.topics.pop(topic, None)
        version.queues.pop(name, None)

    def queues(self) -> dict[str, QueueInfo]:
        return dict(self._view().queues)

    def retry_policies(self) -> dict[str, QueueConfig]:
        """The queues with a retry policy, by name: what the lock reaper parks instead of
        releasing. Computed once per catalog version (the reaper asks every second)."""
        view = self._view()
        found = view.retrying
        if found is None:
            found = {
                name: info.config
                for name, info in view.queues.items()
                if info.config.retry_initial_delay_ms > 0
            }
            view.retrying = found
        return found

    def topic_names(self) -> list[str]:
        return sorted(self._view().topics)

    def topic_of(self, name: str) -> str | None:
        """The live topic whose subscription ``name`` is, or None (a plain queue, a topic,
        an unknown name). A scan of the topics: asked only for a scoped key's miss."""
        info = self._view().queues.get(name)
        if info is None or info.kind != QueueKind.SUBSCRIPTION:
            return None
        for topic, routes in self._view().topics.items():
            if any(r.queue.name == name for r in routes):
                return topic
        return None
