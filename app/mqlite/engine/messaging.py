"""Messaging: receive (long poll), settle, and the transactional outbox.

Every verb validates its input first (a client mistake is an ``MQLiteError``, never a crash
and never a partial write), then runs one transaction on the single writer. Long-poll
waiting happens outside any transaction, parked on the per-queue notifier.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from urllib.parse import urlsplit

from mqlite import defaults, errors
from mqlite.engine import claim, queues, retry, settle, settle_batch, settle_pipelined
from mqlite.engine.core import serialized
from mqlite.engine.notify import Waiter
from mqlite.engine.sending import Sending
from mqlite.engine.storage_errors import translate
from mqlite.engine.tx import EngineTx
from mqlite.engine.validate import (
    check_int,
    check_pairs,
    check_seq,
    check_token,
    clamp,
    receive_mode,
)
from mqlite.types import BatchResult, Message


class Messaging(Sending):
    # -- receive --------------------------------------------------------------------------

    def receive(
        self,
        queue: str,
        max_messages: int = 1,
        wait_ms: int = 0,
        mode: str = "peek_lock",
        attempt_id: str | None = None,
    ) -> list[Message]:
        """Claim up to ``max_messages``, long-polling up to ``wait_ms`` for the first one."""
        name, n, wait, delete = self.receive_args(queue, max_messages, wait_ms, mode, attempt_id)
        q = self.catalog.queue(name)
        got = self.try_receive(q.name, n, delete=delete, attempt_id=attempt_id)
        if got or wait == 0:
            return got
        deadline = self.clock.monotonic_ms() + wait
        waiter: Waiter | None = None
        try:
            while True:
                woken = threading.Event()
                waiter = self.notifier.register(q.name, woken.set)
                # Claim again after registering: a send that committed in between would
                # otherwise be a lost wake-up.
                got = self.try_receive(q.name, n, delete=delete, attempt_id=attempt_id)
                if got:
                    return got
                remaining = deadline - self.clock.monotonic_ms()
                if remaining <= 0:
                    return []
                woken.wait(remaining / 1000.0)
                if self.closed:
                    raise errors.Closed()
                waiter.cancel()  # the wake (if any) is consumed by the claim that follows
                waiter = None
        finally:
            # A wake this poll will not use goes to the next waiter (notify.py).
            if waiter is not None and waiter.cancel() and not self.closed:
                self.notifier.notify(q.name, 1)

    def receive_args(
        self,
        queue: str,
        max_messages: int,
        wait_ms: int,
        mode: str,
        attempt_id: str | None,
    ) -> tuple[str, int, int, bool]:
        """Validate and clamp a receive: (queue, max 1..256, wait 0..20000 ms, delete?)."""
        check_int("max_messages", max_messages)
        check_int("wait_ms", wait_ms)
        delete = receive_mode(mode)
        if attempt_id is not None:
            check_token("attempt_id", attempt_id)
        q = self._queue(queue)
        if q.name in self.pushes.targets:  # one dict lookup: the push loop is the consumer
            host = urlsplit(self.pushes.targets[q.name].url).hostname
            raise errors.PushAttached(
                f"queue {q.name!r} has a push target (to {host}; ListPushes shows it): the "
                "broker delivers its messages; DeletePush to receive them again"
            )
        n = clamp(max_messages, 1, defaults.MAX_RECEIVE_MESSAGES)
        return q.name, n, clamp(wait_ms, 0, defaults.MAX_WAIT_MS), delete

    @serialized
    def try_receive(
        self,
        queue: str,
        max_messages: int,
        *,
        delete: bool = False,
        attempt_id: str | None = None,
    ) -> list[Message]:
        """One claim round, no waiting (the HTTP server parks on the notifier itself)."""
        q = self.catalog.queue(queue)
        with self.store.transaction() as conn:
            now = self.clock.now_ms()
            if attempt_id:
                replay = claim.lookup_attempt(conn, now, q.name, attempt_id)
                if replay is not None:
                    return self._bind(replay)
            msgs = claim.claim_batch(conn, now, q, max_messages, delete=delete, settler=self)
            if attempt_id and msgs:
                claim.save_attempt(conn, now, q, attempt_id, msgs)
            if msgs:  # a replay returned above: it counts nothing twice
                self._count_claims(q.name, msgs, deleted=delete)
        return msgs  # (bound by the claim: no second pass over them)

    def _count_claims(self, queue: str, msgs: list[Message], *, deleted: bool) -> None:
        again = sum(1 for m in msgs if m.delivery_count > 1)
        self._count(
            (queue, "delivered", len(msgs)),
            (queue, "redelivered", again),
            (queue, "receive_deleted", len(msgs) if deleted else 0),
        )

    @serialized
    def receive_deferred(self, queue: str, seq_numbers: Sequence[int]) -> list[Message]:
        """Lock deferred messages by seq (request order); seqs not deferred are skipped."""
        q = self._queue(queue)
        if isinstance(seq_numbers, str | bytes) or not isinstance(seq_numbers, Sequence):
            raise errors.InvalidArgument("seq_numbers must be a list of integers")
        if len(seq_numbers) > defaults.MAX_RECEIVE_MESSAGES:
            raise errors.InvalidArgument(
                f"at most {defaults.MAX_RECEIVE_MESSAGES} seq_numbers per call"
            )
        for seq in seq_numbers:
            check_seq(seq)
        with self._write() as (conn, now):
            msgs = settle.receive_deferred(conn, now, q, seq_numbers)
            self._count_claims(q.name, msgs, deleted=False)
        return self._bind(msgs)

    # -- settlement -----------------------------------------------------------------------

    @serialized
    def complete(self, queue: str, seq_number: int, lock_token: str) -> None:
        queue, seq_number, lock_token = _settle_args(queue, seq_number, lock_token)
        with self._write() as (conn, now):
            fresh = settle.complete(conn, now, queue, seq_number, lock_token)
            if fresh:
                self.store.after_commit(lambda: self._completed(queue, 1))

    @serialized
    def abandon(
        self, queue: str, seq_number: int, lock_token: str, delay_ms: int = 0, error: str = ""
    ) -> None:
        """Release a lock for redelivery: after ``delay_ms`` when > 0, else after the
        queue's retry policy delay (none: at once); ``error`` (<= 4 KiB UTF-8) is kept as
        the message's ``last_error``."""
        queue, seq_number, lock_token = _settle_args(queue, seq_number, lock_token)
        check_int("delay_ms", delay_ms)
        err = retry.check_error(error)
        q = self.catalog.find(queue)
        if q is None:
            raise errors.LockLost(f"lock lost: no queue {queue!r}")
        with self._write() as (conn, now):
            state = settle.abandon(conn, now, q, seq_number, lock_token, delay_ms, err)
            if state is not None:  # fresh: at the delivery limit an abandon dead-letters
                dead = state == "dead_lettered"
                self._count((queue, "abandoned", 1), (queue, "dead_lettered", int(dead)))
            self._wake_after_commit({queue: 1})

    @serialized
    def reject(
        self,
        queue: str,
        seq_number: int,
        lock_token: str,
        reason: str = "",
        description: str = "",
    ) -> None:
        queue, seq_number, lock_token = _settle_args(queue, seq_number, lock_token)
        if not isinstance(reason, str) or not isinstance(description, str):
            raise errors.InvalidArgument("reason and description must be strings")
        with self._write() as (conn, now):
            if settle.reject(conn, now, queue, seq_number, lock_token, reason, description):
                self._count((queue, "rejected", 1), (queue, "dead_lettered", 1))
            self._wake_after_commit({queue: 1})  # a dead-lettered head unblocks its group

    @serialized
    def defer(self, queue: str, seq_number: int, lock_token: str) -> None:
        queue, seq_number, lock_token = _settle_args(queue, seq_number, lock_token)
        with self._write() as (conn, now):
            if settle.defer(conn, now, queue, seq_number, lock_token):
                self._count((queue, "deferred", 1))

    @serialized
    def renew(self, queue: str, seq_number: int, lock_token: str) -> int:
        """Extend a live lease by the queue's lock duration; returns the new deadline."""
        q = self._queue(queue)
        _, seq_number, lock_token = _settle_args(queue, seq_number, lock_token)
        with self._write() as (conn, now):
            return settle.renew(conn, now, q, seq_number, lock_token)

    @serialized
    def complete_batch(self, queue: str, items: Sequence[tuple[int, str]]) -> list[BatchResult]:
        """Complete many (seq, token) pairs in one transaction; per-item ``ok``."""
        name = queues.validate_name(queue)
        pairs = check_pairs(items)
        if self.catalog.find(name) is None:
            return [BatchResult(seq, False) for seq, _ in pairs]
        with self._write() as (conn, now):
            if settle_pipelined.pipelined(conn):  # one request with the COMMIT
                hooks = (self.store.after_commit, self._completed)  # (counted after it)
                return settle_pipelined.complete_batch(conn, now, name, pairs, *hooks)
            results, deleted = settle_batch.complete_batch(conn, now, name, pairs)
            if deleted:
                self.store.after_commit(lambda: self._completed(name, deleted))
        return results

    @serialized
    def renew_batch(self, queue: str, items: Sequence[tuple[int, str]]) -> list[BatchResult]:
        """Renew up to 512 leases in ONE statement; ok only if still live after the write."""
        name = queues.validate_name(queue)
        pairs = check_pairs(items)
        if len(pairs) > defaults.RENEW_BATCH_MAX:
            raise errors.InvalidArgument(
                f"renew_batch takes at most {defaults.RENEW_BATCH_MAX} messages, got {len(pairs)}"
            )
        if not any(token for _, token in pairs):
            return [BatchResult(seq, False) for seq, _ in pairs]
        q = self._queue(name)
        with self._write() as (conn, now):
            renewed = settle.renew_batch(conn, now, q, pairs)
        after = self.clock.now_ms()
        out = []
        for seq, token in pairs:
            until = renewed.get((seq, token), 0)
            ok = until > after
            out.append(BatchResult(seq, ok, until if ok else 0))
        return out

    # -- the transactional outbox ---------------------------------------------------------

    @contextmanager
    def tx(self) -> Iterator[EngineTx]:
        """One transaction shared by your SQL, mqlite's sends and the settlement of the
        messages you received: all commit or none does (``tx.py``).

        Inside the block use ``tx.execute``, ``tx.send``/``send_one``/``schedule`` and
        ``tx.complete``/``abandon``/``reject``/``defer``/``complete_batch``; any exception
        rolls everything back (your own statements' ``sqlite3`` errors reach you unchanged;
        mqlite's verbs and the COMMIT raise ``MQLiteError``s), and so does a settlement
        refused with ``LockLost``, even if caught. The writer is yours until the block
        ends: keep it short, and do not long-poll in it or wait on another thread that
        calls the engine.
        """
        with self.writer.hold():
            transaction = self.store.transaction()
            try:
                conn = transaction.__enter__()
            except sqlite3.Error as exc:
                raise translate(exc) from exc
            handle = EngineTx(self, conn)
            try:
                yield handle
                if handle.doomed is not None:
                    raise handle.doomed  # a refused settlement: nothing of the block commits
            except BaseException as exc:
                transaction.__exit__(type(exc), exc, exc.__traceback__)
                raise
            try:
                transaction.__exit__(None, None, None)
            except sqlite3.Error as exc:
                raise translate(exc) from exc


def _settle_args(queue: object, seq: object, token: object) -> tuple[str, int, str]:
    name = queues.validate_name(queue)
    check_seq(seq)
    if not isinstance(token, str):
        raise errors.InvalidArgument("lock_token must be a string")
    return name, seq, token  # type: ignore[return-value]
