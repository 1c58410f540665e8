"""Lease renewal for the ``Receiver``: one ``renew_batch`` per ≤512 in-flight messages,
every third of the tightest remaining lease (original-behaviour §9), trusting the deadline
the broker committed. A part of the receiver (``receiver_core.py``): it shares the
receiver's state behind its one condition variable (``Shared`` fields are the receiver's
own), and calls the receiver's counting, reporting and failing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqlite import defaults, errors
from mqlite.sdk.consumer import (
    FATAL_ERRORS,
    RENEW_UNKNOWN_DEADLINE_MS,
    RETRY_FLOOR_MS,
    Lease,
    Shared,
    log,
    renewal_delay_ms,
)
from mqlite.sdk.receiver_core import ReceiverCore, ReceiverPart
from mqlite.types import BatchResult, Message

if TYPE_CHECKING:
    from mqlite.sdk.stopping import Stopping


class LeaseRenewal(ReceiverPart):
    """The renewer thread's part of the ``Receiver``."""

    _error = Shared[BaseException | None]()
    _renew_stop = Shared[bool]()
    _renew_dirty = Shared[bool]()

    def __init__(self, receiver: ReceiverCore, stopper: Stopping) -> None:
        super().__init__(receiver)
        self._fail = stopper._fail

    def _renewable(self) -> list[Lease]:
        return [x for x in self._inflight.values() if not x.lost and not x.released]

    def _next_delay_ms(self, leases: list[Lease]) -> float:
        known = [x.locked_until_ms for x in leases if x.locked_until_ms > 0]
        if not known:
            return RENEW_UNKNOWN_DEADLINE_MS
        return renewal_delay_ms(min(known) - self._clock.now_ms())

    def _renew_loop(self) -> None:
        """Renew every live in-flight lease when a third of the tightest one has passed.

        The due time is kept across wake-ups (recomputed only after a pass, or pulled
        earlier by a new lease): recomputing "a third of what is left" on every wake-up
        would creep toward the deadline instead of renewing.
        """
        due: float | None = None
        while True:
            with self._cond:
                while True:
                    if self._renew_stop or self._error is not None:
                        return
                    leases = self._renewable()
                    if not leases:
                        due = None
                        self._cond.wait()
                        continue
                    now = self._clock.monotonic_ms()
                    if due is None or self._renew_dirty:
                        candidate = now + self._next_delay_ms(leases)
                        due = candidate if due is None else min(due, candidate)
                        self._renew_dirty = False
                    if now >= due:
                        break
                    self._cond.wait((due - now) / 1000.0)
            failed = self._renew_pass(leases)
            due = None
            if failed:
                with self._cond:
                    left = self._renewable()
                    delay = self._next_delay_ms(left) if left else RENEW_UNKNOWN_DEADLINE_MS
                due = self._clock.monotonic_ms() + max(delay, RETRY_FLOOR_MS)

    def _renew_pass(self, leases: list[Lease]) -> bool:
        """One RenewBatch per ≤512 leases; returns True if any call failed."""
        failed = False
        step = defaults.RENEW_BATCH_MAX
        for start in range(0, len(leases), step):
            chunk = leases[start : start + step]
            items = [lease.key for lease in chunk]
            try:
                results = list(self._client.renew_batch(self._queue, items))
            except FATAL_ERRORS as exc:
                self._count("renew_errors")
                self._fail(exc)
                return True
            except Exception as exc:
                failed = True
                self._count("renew_errors")
                log.warning("renew_batch on %r failed: %s", self._queue, exc)
                self._report(exc, None)
                continue
            self._apply_renewals(chunk, results)
        if failed:
            self._expire_overdue()
        return failed

    def _apply_renewals(self, chunk: list[Lease], results: list[BatchResult]) -> None:
        """Adopt the committed deadlines; a refused or already-lapsed lease is lost.

        ``locked_until_ms`` is authoritative and compared against our own clock: ok=True
        only meant "live when the broker's statement finished" (api-reference RenewBatch).
        """
        if len(results) == len(chunk) and all(
            r.seq_number == x.message.seq_number for r, x in zip(results, chunk, strict=True)
        ):
            pairs = list(zip(chunk, results, strict=True))
        else:  # a client that reorders or drops items: match by seq, ignore the missing
            by_seq = {r.seq_number: r for r in results}
            pairs = [
                (x, by_seq[x.message.seq_number]) for x in chunk if x.message.seq_number in by_seq
            ]
        now = self._clock.now_ms()
        newly_lost: list[Message] = []
        with self._cond:
            self._counts["renew_calls"] += 1
            for lease, res in pairs:
                if lease.lost or lease.released:
                    continue
                if res.ok and res.locked_until_ms == 0:
                    self._counts["renewed"] += 1
                    lease.locked_until_ms = 0  # ok but no deadline: fall back to the 1 s cadence
                elif res.ok and res.locked_until_ms > now:
                    self._counts["renewed"] += 1
                    lease.locked_until_ms = max(lease.locked_until_ms, res.locked_until_ms)
                else:
                    lease.lost = True
                    if not lease.settling:  # settled meanwhile: the refusal is expected
                        self._counts["leases_lost"] += 1
                        newly_lost.append(lease.message)
        for msg in newly_lost:
            self._lease_lost(msg, "the broker refused the renewal or the lease had lapsed")

    def _expire_overdue(self) -> None:
        """After a failed pass, leases whose deadline has passed by our clock are lost: no
        renewal can revive them, and retrying them forever would be a busy loop."""
        now = self._clock.now_ms()
        newly_lost: list[Message] = []
        with self._cond:
            for lease in self._renewable():
                if 0 < lease.locked_until_ms <= now:
                    lease.lost = True
                    if not lease.settling:
                        self._counts["leases_lost"] += 1
                        newly_lost.append(lease.message)
        for msg in newly_lost:
            self._lease_lost(msg, "its deadline passed while renewals were failing")

    def _lease_lost(self, msg: Message, why: str) -> None:
        log.warning(
            "lease on message %d in %r lost (%s); the handler's settlement will be refused",
            msg.seq_number,
            self._queue,
            why,
        )
        self._report(errors.LockLost(f"lease on message {msg.seq_number} lost: {why}"), msg)
