"""Sending: send, send_one, schedule and cancel (the routing runs on the caller's thread,
the commit on the writer; ``send.py`` holds the SQL).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from mqlite import defaults, errors
from mqlite.engine import send
from mqlite.engine.core import EngineCore, serialized
from mqlite.engine.part import Part
from mqlite.engine.send import Route, SendResult
from mqlite.engine.send_lane import SendLane
from mqlite.engine.validate import check_int, check_seq
from mqlite.types import OutMessage


class Sending(Part):
    def __init__(self, core: EngineCore) -> None:
        super().__init__(core)
        self.lane = SendLane(
            store=self.store,
            writer=self.writer,
            catalog=self.catalog,
            clock=self.clock,
            disk=self.disk,
            effects=self.effects,
            notifier=self.notifier,
            max_message_bytes=self.max_message_bytes,
            general=self._send_one,
        )
        # The verb is the lane's, which sends the general way (``_send_one``) whatever
        # it does not take (send_lane.py); bound here, so a send is one frame to the lane.
        self.send_one = self.lane.send_one  # type: ignore[method-assign]

    # -- send -----------------------------------------------------------------------------

    def send(
        self, queue: str, messages: Sequence[OutMessage], ttl_ms: int | None = None
    ) -> list[int]:
        """Enqueue a batch atomically; positional seqs (0 = dedup conflict in a batch)."""
        return self._send(queue, messages, ttl_ms, None)

    def send_one(self, queue: str, message: OutMessage, ttl_ms: int | None = None) -> int:
        """Enqueue one message; a dedup conflict raises ``DedupConflict``."""
        return self._send_one(queue, message, ttl_ms)  # (replaced by the lane's: __init__)

    def _send_one(self, queue: str, message: OutMessage, ttl_ms: int | None) -> int:
        """``send_one`` the general way (the reference the lane is tested against)."""
        if not isinstance(message, OutMessage):
            raise errors.InvalidArgument("message must be an OutMessage")
        return self._send(queue, [message], ttl_ms, None)[0]

    def schedule(
        self,
        queue: str,
        messages: Sequence[OutMessage],
        at_ms: int,
        ttl_ms: int | None = None,
    ) -> list[int]:
        """Enqueue for delivery at ``at_ms`` (must be in the future), atomically."""
        check_int("at_ms", at_ms, minimum=1)
        return self._send(queue, messages, ttl_ms, at_ms)

    def _send(
        self,
        name: str,
        messages: Sequence[OutMessage],
        ttl_ms: int | None,
        at_ms: int | None,
    ) -> list[int]:
        """Validate and route on the caller's thread (filters run here, never holding the
        writer), then commit on the writer."""
        if not isinstance(name, str):
            raise errors.InvalidArgument("queue name must be a string")
        routes = self.catalog.routes(name)  # an unknown or invalid name fails even when empty
        msgs = send.validate_messages(messages, self.max_message_bytes)
        if ttl_ms is not None:
            check_int("ttl_ms", ttl_ms, minimum=0)
        if not msgs:
            return []
        if len(msgs) * len(routes) > defaults.MAX_FANOUT_ROWS:  # (no call when within)
            send.check_fanout(len(msgs), len(routes))
        if self.disk is not None:  # below the free-space floor only consumers may write
            nbytes = 256 * len(msgs)
            for m in msgs:  # (a loop, not sum(<genexpr>): every send pays it)
                nbytes += len(m.body)
            self.disk.check_send(len(routes) * nbytes)
        now = self.clock.now_ms()
        if at_ms is not None and at_ms <= now:
            raise errors.InvalidArgument(
                f"scheduled time {at_ms} is not in the future (now is {now})"
            )
        visible_at = at_ms if at_ms is not None else now
        plan = None  # no filter on any route (the common case): no route_plan call
        for route in routes:
            if route.accepts is not None:
                plan = send.route_plan(routes, msgs, now, visible_at)
                break
        return self._commit_send(name, routes, plan, msgs, now, visible_at, ttl_ms)

    @serialized
    def _commit_send(
        self,
        name: str,
        routes: list[Route],
        plan: list[list[Route]] | None,
        msgs: list[OutMessage],
        now: int,
        visible_at: int,
        ttl_ms: int | None,
    ) -> list[int]:
        current = self.catalog.routes(name)
        if current is not routes:  # subscriptions changed since routing: route again
            send.check_fanout(len(msgs), len(current))
            routes, plan = current, send.route_plan(current, msgs, now, visible_at)
        try:
            with self.store.transaction() as conn:
                result = send.insert(conn, now, routes, msgs, visible_at, ttl_ms, plan)
                # Once it commits: count its effects, then wake as many parked polls per
                # queue as it made claimable (one after-commit callback for both, a
                # ``partial`` rather than a closure: no cells to build on every send).
                self.store.after_commit(partial(self._sent, result, visible_at > now))
        except errors.DedupConflict:
            # A refused single send: nothing committed, but the conflict is a confirmed
            # effect (the conflicting record is committed). Every route it reached
            # conflicted, else the send would have had a seq.
            reached = routes if plan is None else plan[0]
            for route in reached:
                self.effects.add(route.queue.name, "dedup_conflict", 1)
            raise
        return result.seq_numbers

    def _sent(self, result: SendResult, scheduled: bool) -> None:
        """After the COMMIT of a send (hot path: no generators, no dict per send)."""
        by_queue = self.effects.by_queue  # (MessageEffects.add inlined)
        for queue, n in result.copies.items():
            counts = by_queue[queue]
            counts["enqueued"] += n
            if scheduled:
                counts["scheduled"] += n
        if result.deduplicated or result.conflicts:
            add = self.effects.add
            for queue, n in result.deduplicated.items():
                add(queue, "deduplicated", n)
            for queue, n in result.conflicts.items():
                add(queue, "dedup_conflict", n)
        notify = self.notifier.notify
        for queue, n in result.notify.items():
            notify(queue, n)

    @serialized
    def cancel(self, queue: str, seq_number: int) -> None:
        """Delete a scheduled, never-delivered message; otherwise ``NotFound``."""
        q = self._queue(queue)
        check_seq(seq_number)
        with self.store.transaction() as conn:
            send.cancel(conn, q.name, seq_number)
            self._count((q.name, "canceled", 1))
