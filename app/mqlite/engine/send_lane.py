"""``send_one``'s fast lane: one plain message into one plain queue of a local file, sent
by a caller that finds the writer free -- the embedded producer's every call.

The general path (``sending.py``) builds, for every call, what a single plain message
does not need: a list of messages, a routing plan, a send result with per-queue counts, a
transaction object nested in a measured one, an after-commit callback. Issue 29 measured
that at ~20 µs of Python per send on the CI machine, against ~28 µs for SQLite's own
BEGIN IMMEDIATE, INSERT and COMMIT. The lane does the same work in one frame, with every
guarantee of the general path:

- the writer token taken inline exactly when ``Writer.call`` would run inline (nobody
  holds it, nobody waits), the caller recorded as its owner while it runs;
- the catalog read again under the token: the version the lane was found in must still
  be the committed one ("catalog after commit": a queue deleted or reconfigured since
  sends the general way, which routes again);
- the disk floor (``DiskGuard.check_send``, the same estimate of one copy), before
  anything is written -- under the token, so that nothing after it sends the message
  the general way a second time, counted twice;
- BEGIN IMMEDIATE and the INSERT on the one connection, then the store's own COMMIT
  (``Store._commit``: the crash drill's kill points, the tests' failing-commit seam);
- the storage operation measured (one ``transaction`` success and its duration) and the
  message effects counted only once COMMIT returned, then the parked receivers woken,
  still under the token (a wake-up never precedes what it announces);
- a failure rolls back, is measured as the general path measures it, and leaves as the
  same ``MQLiteError``.

A lane is a queue's ``QueueInfo``, looked up once per name and catalog version
(``Catalog.send_lane``). Anything else -- metadata, a body of 1 KiB or more, a TTL
argument, properties, a dedup or group_fifo queue, a topic, a remote store, a busy
writer, a call nested in ``tx()`` or in another verb, an armed storage fault -- answers
"not here" (0) and the caller goes the general way, the reference:
tests/engine/test_send_lane.py sends the same messages both ways and compares rows,
counters and errors.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import suppress
from threading import get_ident
from time import perf_counter
from typing import TYPE_CHECKING

from mqlite.engine.measured_store import MeasuredStore
from mqlite.engine.rows import EXTERNAL_BODY_MIN_BYTES
from mqlite.types import OutMessage

if TYPE_CHECKING:
    from mqlite.clock import Clock
    from mqlite.engine.catalog import Catalog
    from mqlite.engine.disk import DiskGuard
    from mqlite.engine.measure import MessageEffects
    from mqlite.engine.notify import Notifier
    from mqlite.engine.writer import Writer

_EMPTY = ""  # compared by identity: CPython has one empty str object

# send.INSERT_PLAIN_SQL with the lane's constants written in: the fewer values bound, the
# less each INSERT costs (the row is the same; tests/engine/test_send_lane.py compares).
INSERT_LANE_SQL = """
INSERT INTO messages (queue, state, visible_at, enqueued_at, expires_at, message_id,
                      correlation_id, reply_to, group_id, content_type, subject, properties, body,
                      external_body_bytes)
VALUES (?, 'active', ?, ?, ?, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ?, 0)
"""


class SendLane:
    """The lane over one engine's parts (bound once: plain attributes on the hot path)."""

    def __init__(
        self,
        *,
        store: MeasuredStore,
        writer: Writer,
        catalog: Catalog,
        clock: Clock,
        disk: DiskGuard | None,
        effects: MessageEffects,
        notifier: Notifier,
        max_message_bytes: int,
        general: Callable[[str, OutMessage, int | None], int],
    ) -> None:
        self.general = general  # the general way (sending.py)
        self.store = store
        self.writer = writer
        self.catalog = catalog
        self.clock = clock
        self.disk = disk
        self.by_queue = effects.by_queue
        self.notifier = notifier
        self.parked = notifier.parked
        # A body the lane stores inline: under the external-body threshold and the cap
        # (a larger one goes the general way, which stores it in ``bodies`` or refuses it).
        self.max_inline = min(EXTERNAL_BODY_MIN_BYTES, max_message_bytes)
        # Only a local file: a remote store has a lease, its own BEGIN and outcome rules.
        self.open = store.location.remote is None and store.lease is None

    def send_one(self, queue: str, message: OutMessage, ttl_ms: int | None = None) -> int:
        """Enqueue one message; a dedup conflict raises ``DedupConflict``."""
        # (The engine's ``send_one`` verb: ``Sending`` binds it over its own, which is the
        # general way every "not here" below takes.)
        if ttl_ms is not None or type(message) is not OutMessage or type(queue) is not str:
            return self.general(queue, message, ttl_ms)
        view = self.catalog._committed
        lane = view.lanes.get(queue)
        if lane is None:
            if not self.open or queue in view.lanes:
                return self.general(queue, message, ttl_ms)
            lane = self.catalog.send_lane(queue)  # the first send to it in this version
            if lane is None:
                return self.general(queue, message, ttl_ms)
        m = message
        body = m.body
        writer = self.writer
        if not (
            type(body) is bytes
            and len(body) < self.max_inline
            and m.message_id is _EMPTY
            and m.group_id is _EMPTY
            and m.subject is _EMPTY
            and m.correlation_id is _EMPTY
            and m.reply_to is _EMPTY
            and m.content_type is _EMPTY
            and type(m.properties) is dict
            and not m.properties
            # Writer.call's inline condition, and no owner: a call nested in tx() or in
            # another verb on this thread goes the general way (a savepoint).
            and not writer._owner
            and not writer._taken
            and writer._queue.empty()
            and MeasuredStore.fault is None
        ):
            return self.general(queue, message, ttl_ms)
        store = self.store
        token = store.lock
        if not token.acquire(False):
            return self.general(queue, message, ttl_ms)
        try:
            if store._tx.depth or store._closed or self.catalog._committed is not view:
                # (a read holding the token on this thread; closed; the catalog changed)
                token.release()
                return self.general(queue, message, ttl_ms)
            writer._owner = get_ident()
            if self.disk is not None:  # the general path's estimate for one copy
                self.disk.check_send(256 + len(body))
            conn = store.conn
            now = self.clock.now_ms()
            name = lane.name
            ttl = lane.config.default_ttl_ms
            started = perf_counter()
            try:
                conn.execute("BEGIN IMMEDIATE")
                seq: int = conn.execute(
                    INSERT_LANE_SQL, (name, now, now, now + ttl if ttl > 0 else 0, body)
                ).lastrowid  # type: ignore[assignment]
                store._commit(conn)  # the one COMMIT path (its seam, the kill points)
            except BaseException as exc:
                self._failed(conn, started, exc)
                raise  # (_failed raises the translated error for a driver one)
            store.transaction_ok(perf_counter() - started, 0)
            self.by_queue[name]["enqueued"] += 1  # (MessageEffects.add inlined)
            if name in self.parked:  # (notify's own first test, without its call)
                self.notifier.notify(name, 1)
            return seq
        finally:
            if writer._owner:
                writer._owner = 0
                token.release()

    def _failed(self, conn: sqlite3.Connection, started: float, exc: BaseException) -> None:
        """Roll back, measure the failure, and raise a driver error as the writer would."""
        with suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.rollback()
        store = self.store
        store.ops.failed("transaction", perf_counter() - started, exc, 0)
        if isinstance(exc, sqlite3.Error):
            raise self.writer.translate(exc) from exc
