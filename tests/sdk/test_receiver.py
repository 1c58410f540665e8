"""The managed consumer (``mqlite.Receiver``) against the embedded engine.

Outcomes (complete / abandon with backoff / dead-letter), the concurrency bound, stop()
mid-work, fatal and transient broker errors, and lease renewal. Every wait is on an event
or a condition with a timeout (the spy's calls, the receiver's own condition); lease time
is the FakeClock's, the reaper run by the test after each step.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

import mqlite
from mqlite import (
    Backoff,
    BatchResult,
    DeadLetter,
    Message,
    OutMessage,
    QueueConfig,
    Receiver,
    errors,
    testing,
)
from mqlite.clock import SYSTEM_CLOCK, FakeClock
from mqlite.sdk.consumer import RENEW_FLOOR_MS, renewal_delay_ms
from waiting import wait_for_receiver, wake_receiver

WAIT = 10.0  # generous upper bound for any event in these tests (they finish far sooner)


class SpyClient:
    """Delegates to a real client and records every call's outcome for tests to wait on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.clock = getattr(inner, "clock", None)  # what the Receiver's default clock reads
        self.cond = threading.Condition()
        self.calls: list[tuple[Any, ...]] = []

    def _record(self, *call: Any) -> None:
        with self.cond:
            self.calls.append(call)
            self.cond.notify_all()

    def wait_for(
        self, pred: Callable[[list[tuple[Any, ...]]], bool], timeout: float = WAIT
    ) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: pred(self.calls), timeout), self.calls

    def count(self, verb: str) -> int:
        with self.cond:
            return sum(1 for c in self.calls if c[0] == verb)

    def _call(self, verb: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            out = fn(*args)
        except Exception as exc:
            self._record(verb + "!", args, exc)
            raise
        self._record(verb, args, out)
        return out

    def receive(self, *args: Any) -> Any:
        return self._call("receive", self.inner.receive, *args)

    def complete(self, *args: Any) -> Any:
        return self._call("complete", self.inner.complete, *args)

    def abandon(self, *args: Any) -> Any:
        return self._call("abandon", self.inner.abandon, *args)

    def reject(self, *args: Any) -> Any:
        return self._call("reject", self.inner.reject, *args)

    def renew_batch(self, *args: Any) -> Any:
        return self._call("renew_batch", self.inner.renew_batch, *args)


def calls_of(verb: str, n: int) -> Callable[[list[tuple[Any, ...]]], bool]:
    return lambda calls: sum(1 for c in calls if c[0] == verb) >= n


def last(spy: SpyClient, verb: str) -> tuple[Any, ...]:
    with spy.cond:
        return [c for c in spy.calls if c[0] == verb][-1]


def send(mq: mqlite.EmbeddedClient, queue: str, n: int) -> list[int]:
    return mq.send(queue, [OutMessage(body=f"m{i}".encode()) for i in range(n)])


def by_seq(mq: mqlite.EmbeddedClient, queue: str) -> dict[int, Message]:
    return {m.seq_number: m for m in mq.peek(queue, max=1000)}


@pytest.fixture
def spy(engine: mqlite.EmbeddedClient) -> SpyClient:
    return SpyClient(engine)


@pytest.fixture
def stoppers() -> Iterator[list[Receiver]]:
    """Receivers a test started; stopped at teardown (abandon at once) if it failed early."""
    made: list[Receiver] = []
    yield made
    for r in made:
        with contextlib.suppress(errors.MQLiteError):
            r.stop(timeout=0)


def start(made: list[Receiver], *args: Any, **kwargs: Any) -> Receiver:
    kwargs.setdefault("wait_ms", 200)
    r = Receiver(*args, **kwargs)
    made.append(r)
    return r.start()


# -- outcomes ----------------------------------------------------------------------------


def test_handler_return_completes(
    engine: mqlite.EmbeddedClient, spy: SpyClient, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q")
    seqs = send(engine, "q", 3)
    seen: list[bytes] = []
    r = start(stoppers, spy, "q", lambda m: seen.append(m.body), clock=testing.engine(engine).clock)
    spy.wait_for(calls_of("complete", 3))
    r.stop()
    assert sorted(seen) == [b"m0", b"m1", b"m2"]
    assert engine.peek("q") == []
    assert sorted(c[1][1] for c in spy.calls if c[0] == "complete") == seqs
    st = r.stats()
    assert (st.received, st.completed, st.abandoned, st.in_flight) == (3, 3, 0, 0)


def test_handler_raise_abandons_and_redelivers_until_max_delivery_dead_letters(
    engine: mqlite.EmbeddedClient, spy: SpyClient, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q", QueueConfig(max_delivery_count=3))
    [seq] = send(engine, "q", 1)
    counts: list[int] = []
    reported: list[tuple[BaseException, Message | None]] = []

    def handler(m: Message) -> None:
        counts.append(m.delivery_count)
        raise ValueError(f"boom {m.delivery_count}")

    r = start(
        stoppers,
        spy,
        "q",
        handler,
        clock=testing.engine(engine).clock,
        on_error=lambda exc, m: reported.append((exc, m)),
    )
    spy.wait_for(calls_of("abandon", 3))
    r.stop()
    assert counts == [1, 2, 3]  # redelivered at once (no backoff), count growing
    [dead] = engine.peek("q", state="dead_lettered")
    assert (dead.seq_number, dead.delivery_count) == (seq, 3)
    assert dead.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert [str(exc) for exc, _ in reported] == ["boom 1", "boom 2", "boom 3"]
    assert all(m is not None and m.seq_number == seq for _, m in reported)
    assert all(c[1][3] == 0 for c in spy.calls if c[0] == "abandon")  # no delay
    st = r.stats()
    assert (st.abandoned, st.handler_errors, st.completed) == (3, 3, 0)


def test_dead_letter_exception_rejects_with_reason(
    engine: mqlite.EmbeddedClient, spy: SpyClient, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q")
    [seq] = send(engine, "q", 1)

    def handler(m: Message) -> None:
        raise DeadLetter("BadSchema", "field 'x' missing")

    r = start(stoppers, spy, "q", handler, clock=testing.engine(engine).clock)
    spy.wait_for(calls_of("reject", 1))
    r.stop()
    [dead] = engine.peek("q", state="dead_lettered")
    assert dead.seq_number == seq
    assert (dead.dead_letter_reason, dead.dead_letter_description) == (
        "BadSchema",
        "field 'x' missing",
    )
    st = r.stats()
    assert (st.dead_lettered, st.handler_errors, st.abandoned) == (1, 0, 0)


def test_backoff_parks_the_abandoned_message_as_scheduled_with_the_jittered_delay(
    engine: mqlite.EmbeddedClient, clock: FakeClock, spy: SpyClient, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q")
    [seq] = send(engine, "q", 1)
    twin = random.Random(1234)  # the same draws the Receiver's Backoff will make

    def handler(m: Message) -> None:
        raise RuntimeError("downstream is down")

    r = start(
        stoppers,
        spy,
        "q",
        handler,
        clock=clock,
        backoff=Backoff(1000, 3000, rng=random.Random(1234)),
        on_error=lambda exc, m: None,
    )
    for delivery, ceiling in ((1, 1000), (2, 2000), (3, 3000), (4, 3000)):
        spy.wait_for(calls_of("abandon", delivery))
        expected = twin.randint(0, ceiling)
        m = by_seq(engine, "q")[seq]
        assert m.state == "scheduled"
        assert m.delivery_count == delivery
        assert m.visible_at_ms == clock.now_ms() + expected
        assert last(spy, "abandon")[1][3] == expected
        clock.advance(expected + 1)
        # due: back to active, and the parked poll is woken
        testing.engine(engine).activate_scheduled()
    spy.wait_for(calls_of("abandon", 5))
    r.stop()


# -- the queue's retry policy and the last error -----------------------------------------


class QueueReadingSpy(SpyClient):
    """A spy that also answers ``get_queue`` (as the embedded client and a manage key do),
    or refuses it like a listen-only key."""

    def __init__(self, inner: mqlite.EmbeddedClient, *, refuse: bool = False) -> None:
        super().__init__(inner)
        self.refuse = refuse
        self.asked = 0

    def get_queue(self, name: str) -> Any:
        self.asked += 1
        if self.refuse:
            raise errors.PermissionDenied("this key may not read queue config")
        return self.inner.get_queue(name)


def test_the_handler_exception_is_the_abandon_error_and_the_message_last_error(
    engine: mqlite.EmbeddedClient, spy: SpyClient, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q", QueueConfig(max_delivery_count=2))
    [seq] = send(engine, "q", 1)

    def handler(m: Message) -> None:
        if m.delivery_count == 1:
            raise KeyError("sku-42")
        raise RuntimeError("x" * 10_000)  # clipped to the 4 KiB limit

    r = start(stoppers, spy, "q", handler, clock=testing.engine(engine).clock)
    spy.wait_for(calls_of("abandon", 2))
    r.stop()
    first, second = [c[1][4] for c in spy.calls if c[0] == "abandon"]
    assert first == "KeyError: 'sku-42'"
    assert second.startswith("RuntimeError: xxx") and second.endswith("...")
    assert len(second.encode()) == 4096
    [dead] = engine.peek("q", state="dead_lettered")
    assert (dead.seq_number, dead.last_error) == (seq, second)
    assert dead.dead_letter_description == second  # the DLQ says why, without a log


def test_a_queue_retry_policy_takes_over_from_the_receiver_backoff(
    engine: mqlite.EmbeddedClient, clock: FakeClock, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q", QueueConfig(retry_initial_delay_ms=5_000))
    [seq] = send(engine, "q", 1)
    spy = QueueReadingSpy(engine)

    def handler(m: Message) -> None:
        raise RuntimeError("downstream is down")

    r = start(
        stoppers, spy, "q", handler, clock=clock, backoff=Backoff(1, 2), on_error=lambda e, m: None
    )
    spy.wait_for(calls_of("abandon", 1))
    r.stop()
    assert last(spy, "abandon")[1][3] == 0  # the delay is left to the queue
    m = by_seq(engine, "q")[seq]
    assert (m.state, m.visible_at_ms) == ("scheduled", clock.now_ms() + 5_000)
    assert spy.asked == 1


@pytest.mark.parametrize("refuse", [False, True], ids=["no_policy", "may_not_read"])
def test_the_receiver_backoff_applies_when_the_queue_has_no_policy_or_cannot_say(
    engine: mqlite.EmbeddedClient, clock: FakeClock, stoppers: list[Receiver], refuse: bool
) -> None:
    engine.create_queue("q")
    [seq] = send(engine, "q", 1)
    spy = QueueReadingSpy(engine, refuse=refuse)

    def handler(m: Message) -> None:
        raise RuntimeError("downstream is down")

    r = start(
        stoppers,
        spy,
        "q",
        handler,
        clock=clock,
        backoff=Backoff(700, 700, rng=random.Random(5)),
        on_error=lambda e, m: None,
    )
    spy.wait_for(calls_of("abandon", 1))
    r.stop()
    expected = random.Random(5).randint(0, 700)
    assert last(spy, "abandon")[1][3] == expected
    assert by_seq(engine, "q")[seq].delivery_count == 1


# -- Backoff and the renewal cadence (pure) ----------------------------------------------


def test_backoff_is_exponential_capped_full_jitter_and_deterministic() -> None:
    b = Backoff(100, 1000)
    assert [b.ceiling_ms(n) for n in (0, 1, 2, 3, 4, 5, 100, 10**6)] == [
        100,
        100,
        200,
        400,
        800,
        1000,
        1000,
        1000,
    ]
    assert Backoff(100, 10_000, multiplier=3).ceiling_ms(3) == 900
    assert Backoff(0, 0).delay_ms(7) == 0
    a = Backoff(100, 5000, rng=random.Random(9))
    c = Backoff(100, 5000, rng=random.Random(9))
    draws = [a.delay_ms(n) for n in range(1, 40)]
    assert draws == [c.delay_ms(n) for n in range(1, 40)]
    assert all(0 <= d <= a.ceiling_ms(n) for n, d in zip(range(1, 40), draws, strict=True))
    assert len(set(draws)) > 10  # jittered, not a fixed ladder
    for bad in (
        lambda: Backoff(-1, 10),
        lambda: Backoff(10, 5),
        lambda: Backoff(10, 50, multiplier=0.5),
        lambda: Backoff(10, 50, multiplier=float("inf")),
    ):
        with pytest.raises(ValueError):
            bad()


def test_renewal_delay_is_a_third_of_the_tightest_lease_floored_below_half() -> None:
    assert renewal_delay_ms(30_000) == 10_000
    assert renewal_delay_ms(120) == RENEW_FLOOR_MS  # 40 -> floor 50, still < 60
    assert renewal_delay_ms(90) == 30  # floor 50 would reach half (45): keep a third
    assert renewal_delay_ms(1) == pytest.approx(1 / 3)
    assert renewal_delay_ms(0.5) == 0
    assert renewal_delay_ms(-5) == 0


# -- the concurrency bound ---------------------------------------------------------------


def test_concurrency_bound_is_respected_and_reached(
    engine: mqlite.EmbeddedClient, spy: SpyClient, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q")
    send(engine, "q", 10)
    lock = threading.Lock()
    active = 0
    peak = 0
    three = threading.Event()
    release = threading.Event()

    def handler(m: Message) -> None:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
            if active == 3:
                three.set()
        try:
            assert release.wait(WAIT)
        finally:
            with lock:
                active -= 1

    r = start(stoppers, spy, "q", handler, concurrency=3, clock=testing.engine(engine).clock)
    assert three.wait(WAIT)
    st = engine.stats("q")
    assert (st.locked, st.active) == (3, 7)  # claimed no more than the free slots
    assert r.stats().in_flight == 3
    release.set()
    spy.wait_for(calls_of("complete", 10))
    r.stop()
    assert peak == 3
    assert all(len(c[2]) <= 3 for c in spy.calls if c[0] == "receive")
    assert engine.peek("q") == []


# -- stop() ------------------------------------------------------------------------------


def test_stop_mid_work_lets_handlers_finish_and_claims_nothing_more(
    engine: mqlite.EmbeddedClient, spy: SpyClient, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q")
    send(engine, "q", 5)
    both = threading.Barrier(3)
    release = threading.Event()

    def handler(m: Message) -> None:
        both.wait(WAIT)
        assert release.wait(WAIT)

    r = start(stoppers, spy, "q", handler, concurrency=2, clock=testing.engine(engine).clock)
    both.wait(WAIT)
    stopper = threading.Thread(target=r.stop)
    stopper.start()
    stopper.join(0.1)
    assert stopper.is_alive()  # waiting for the two handlers
    release.set()
    stopper.join(WAIT)
    assert not stopper.is_alive()
    st = engine.stats("q")
    assert (st.locked, st.active, st.total) == (0, 3, 3)  # 2 completed, 3 never claimed
    assert spy.count("complete") == 2
    assert not r.running


def test_stop_timeout_abandons_in_flight_messages_with_no_delay(
    engine: mqlite.EmbeddedClient, spy: SpyClient, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q")
    send(engine, "q", 5)
    both = threading.Barrier(3)
    release = threading.Event()
    returned = threading.Semaphore(0)

    def handler(m: Message) -> None:
        try:
            both.wait(WAIT)
            assert release.wait(WAIT)
        finally:
            returned.release()

    r = start(stoppers, spy, "q", handler, concurrency=2, clock=testing.engine(engine).clock)
    both.wait(WAIT)
    started = time.monotonic()
    r.stop(timeout=0.2)
    assert time.monotonic() - started < 5
    msgs = engine.peek("q")
    assert [m.state for m in msgs] == ["active"] * 5  # nothing locked, nothing scheduled
    assert sorted(m.delivery_count for m in msgs) == [0, 0, 0, 1, 1]
    assert [c[1][3] for c in spy.calls if c[0] == "abandon"] == [0, 0]
    assert r.stats().abandoned_on_stop == 2
    # The stragglers finish later: their outcome is dropped, nothing else is settled.
    release.set()
    for _ in range(2):
        assert returned.acquire(timeout=WAIT)
    wait_for_receiver(r, lambda st: st.in_flight == 0, "the stragglers to leave", WAIT)
    assert spy.count("complete") == 0
    assert spy.count("abandon") == 2


def test_stop_does_not_wait_for_a_parked_long_poll_and_abandons_its_late_claim(
    engine: mqlite.EmbeddedClient, spy: SpyClient, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q")
    called = threading.Event()
    r = start(
        stoppers,
        spy,
        "q",
        lambda m: called.set(),
        wait_ms=20_000,
        clock=testing.engine(engine).clock,
    )
    assert testing.engine(engine).notifier.wait_for_waiters("q", timeout_s=WAIT), (
        "the receiver never parked a long poll"
    )
    started = time.monotonic()
    r.stop()
    assert time.monotonic() - started < 2
    [seq] = send(engine, "q", 1)  # the detached poll claims it ... and gives it back
    spy.wait_for(calls_of("abandon", 1))
    [m] = engine.peek("q")
    assert (m.seq_number, m.state, m.delivery_count) == (seq, "active", 1)
    assert not called.is_set()
    assert r.stats().abandoned_on_stop == 1


def test_a_handler_can_stop_its_own_receiver(
    engine: mqlite.EmbeddedClient, spy: SpyClient, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q")
    send(engine, "q", 3)
    holder: list[Receiver] = []

    def handler(m: Message) -> None:
        holder[0].stop()  # only requests the stop: waiting here would wait on itself

    r = Receiver(spy, "q", handler, wait_ms=200, clock=testing.engine(engine).clock)
    holder.append(r)
    stoppers.append(r)
    runner = threading.Thread(target=r.run)
    runner.start()
    runner.join(WAIT)
    assert not runner.is_alive()
    assert spy.count("complete") == 1
    assert engine.stats("q").active == 2


def test_context_manager_starts_and_stops(engine: mqlite.EmbeddedClient, spy: SpyClient) -> None:
    engine.create_queue("q")
    send(engine, "q", 2)
    with Receiver(spy, "q", lambda m: None, wait_ms=200, clock=testing.engine(engine).clock) as r:
        assert r.running
        spy.wait_for(calls_of("complete", 2))
    assert not r.running
    assert engine.peek("q") == []
    with pytest.raises(RuntimeError):
        r.start()


# -- broker errors -----------------------------------------------------------------------


class FailingReceives(SpyClient):
    """A client whose receive raises ``errors`` in turn (then delegates, if any remain)."""

    def __init__(self, inner: Any, errs: Sequence[BaseException], forever: bool = False):
        super().__init__(inner)
        self.errs = list(errs)
        self.forever = forever
        self.attempt_ids: list[str | None] = []
        self.raised = threading.Event()

    def receive(self, *args: Any) -> Any:
        with self.cond:
            self.attempt_ids.append(args[4])
            err = self.errs[0] if self.forever else (self.errs.pop(0) if self.errs else None)
        if err is not None:
            self._record("receive!", args, err)
            self.raised.set()
            raise err
        return super().receive(*args)


@pytest.mark.parametrize("err", [errors.Unauthenticated(), errors.PermissionDenied()])
def test_auth_errors_stop_the_receiver_and_surface_from_run(
    engine: mqlite.EmbeddedClient, err: errors.MQLiteError
) -> None:
    engine.create_queue("q")
    send(engine, "q", 1)
    client = FailingReceives(engine, [err])
    r = Receiver(client, "q", lambda m: None, wait_ms=200, clock=testing.engine(engine).clock)
    with pytest.raises(type(err)):
        r.run()
    assert r.error is err
    assert len(client.attempt_ids) == 1  # no retry
    assert engine.stats("q").active == 1  # never claimed


def test_permission_denied_mid_run_drains_in_flight_work_then_surfaces_from_stop(
    engine: mqlite.EmbeddedClient,
) -> None:
    engine.create_queue("q")
    send(engine, "q", 1)

    denied = threading.Event()

    class DeniedAfterFirst(SpyClient):
        def receive(self, *args: Any) -> Any:
            if self.count("receive"):
                denied.set()
                raise errors.PermissionDenied()  # e.g. the key was revoked meanwhile
            return super().receive(*args)

    client = DeniedAfterFirst(engine)
    entered = threading.Event()
    release = threading.Event()

    def handler(m: Message) -> None:
        entered.set()
        assert release.wait(WAIT)

    r = Receiver(
        client, "q", handler, concurrency=2, wait_ms=200, clock=testing.engine(engine).clock
    ).start()
    assert entered.wait(WAIT)
    assert denied.wait(WAIT)  # the free slot's receive was refused while a handler runs
    release.set()
    with pytest.raises(errors.PermissionDenied):
        r.stop()
    assert client.count("complete") == 1  # the in-flight message was still completed
    assert engine.peek("q") == []


def test_transient_receive_errors_are_retried_with_the_same_attempt_id(
    engine: mqlite.EmbeddedClient, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q")
    send(engine, "q", 1)
    client = FailingReceives(engine, [errors.Internal("db hiccup"), ConnectionError("reset")])
    reported: list[BaseException] = []
    r = start(
        stoppers,
        client,
        "q",
        lambda m: None,
        retry_backoff=Backoff(10, 20, rng=random.Random(3)),
        on_error=lambda exc, m: reported.append(exc),
        clock=testing.engine(engine).clock,
    )
    client.wait_for(calls_of("complete", 1))
    r.stop()
    assert len(set(client.attempt_ids[:3])) == 1  # one logical claim, retried twice
    assert client.attempt_ids[0] is not None
    assert [type(e) for e in reported] == [errors.Internal, ConnectionError]
    assert r.stats().receive_errors == 2
    assert r.error is None


def test_a_persistently_failing_receive_never_busy_loops(engine: mqlite.EmbeddedClient) -> None:
    engine.create_queue("q")
    client = FailingReceives(engine, [errors.Internal()], forever=True)
    r = Receiver(
        client,
        "q",
        lambda m: None,
        retry_backoff=Backoff(0, 0),
        on_error=lambda exc, m: None,
        clock=testing.engine(engine).clock,
    )
    started = time.monotonic()
    r.start()
    client.wait_for(lambda calls: len(calls) >= 5)
    elapsed = time.monotonic() - started
    r.stop()
    assert elapsed >= 4 * 0.045  # a retry floor between attempts, even with a zero backoff


def test_an_empty_zero_wait_poll_never_busy_loops(engine: mqlite.EmbeddedClient) -> None:
    engine.create_queue("q")
    client = SpyClient(engine)
    r = Receiver(client, "q", lambda m: None, wait_ms=0, clock=testing.engine(engine).clock)
    started = time.monotonic()
    r.start()
    client.wait_for(calls_of("receive", 5))
    elapsed = time.monotonic() - started
    r.stop()
    assert elapsed >= 4 * 0.045


# -- lease renewal -----------------------------------------------------------------------


def test_a_lost_lease_is_counted_and_the_loop_carries_on(
    engine: mqlite.EmbeddedClient, clock: FakeClock, spy: SpyClient, stoppers: list[Receiver]
) -> None:
    engine.create_queue("q", QueueConfig(lock_duration_ms=300))
    [seq] = send(engine, "q", 1)
    deliveries: list[int] = []
    reported: list[BaseException] = []

    def handler(m: Message) -> None:
        deliveries.append(m.delivery_count)
        if m.delivery_count == 1:
            clock.advance(1000)  # the lease lapses mid-handler
            spy.wait_for(lambda calls: any(c[0] == "renew_batch" and not c[2][0].ok for c in calls))

    # No clock=: a client exposing ``clock`` (the spy passes the engine's on) lends it to
    # the Receiver, so lease deadlines and "now" come from the same FakeClock.
    r = start(stoppers, spy, "q", handler, on_error=lambda exc, m: reported.append(exc))
    spy.wait_for(calls_of("complete!", 1))  # the late completion is refused ...
    assert isinstance(last(spy, "complete!")[2], errors.LockLost)
    testing.engine(engine).reap_locks()  # ... the broker redelivers ...
    spy.wait_for(calls_of("complete", 1))  # ... and the receiver handles it again
    r.stop()
    assert deliveries == [1, 2]
    assert engine.peek("q") == []
    st = r.stats()
    assert (st.leases_lost, st.lock_lost, st.completed) == (1, 1, 1)
    assert [type(e) for e in reported] == [errors.LockLost, errors.LockLost]
    assert seq not in by_seq(engine, "q")


class FakeLeases:
    """A client-shaped fake: hands out ``n`` leases, renews anything, records batch sizes."""

    def __init__(self, n: int, lease_ms: int) -> None:
        self.lease_ms = lease_ms
        self.pending = list(range(1, n + 1))
        self.cond = threading.Condition()
        self.batches: list[int] = []
        self.settled: list[int] = []
        self.closed = threading.Event()

    def receive(self, queue: str, n: int, wait_ms: int, mode: str, attempt_id: str | None) -> Any:
        with self.cond:
            take, self.pending = self.pending[:n], self.pending[n:]
        if not take:
            self.closed.wait(wait_ms / 1000)
            return []
        until = SYSTEM_CLOCK.now_ms() + self.lease_ms
        return [
            Message(seq, queue=queue, lock_token=f"t{seq}", locked_until_ms=until) for seq in take
        ]

    def renew_batch(self, queue: str, items: Sequence[tuple[int, str]]) -> list[BatchResult]:
        assert len(items) <= 512
        until = SYSTEM_CLOCK.now_ms() + self.lease_ms
        with self.cond:
            self.batches.append(len(items))
            self.cond.notify_all()
        return [BatchResult(seq, True, until) for seq, _ in items]

    def complete(self, queue: str, seq: int, token: str) -> None:
        with self.cond:
            self.settled.append(seq)
            self.cond.notify_all()

    def abandon(self, queue: str, seq: int, token: str, delay_ms: int, error: str) -> None:
        raise AssertionError("nothing should be abandoned")

    def reject(self, queue: str, seq: int, token: str, reason: str, desc: str) -> None:
        raise AssertionError("nothing should be rejected")


def test_renewals_go_out_in_groups_of_at_most_512(stoppers: list[Receiver]) -> None:
    fake = FakeLeases(513, lease_ms=900)
    release = threading.Event()
    r = start(stoppers, fake, "q", lambda m: release.wait(WAIT), concurrency=513)
    with fake.cond:
        assert fake.cond.wait_for(
            lambda: any(fake.batches[i : i + 2] == [512, 1] for i in range(len(fake.batches))),
            WAIT,
        ), fake.batches
    release.set()
    with fake.cond:
        assert fake.cond.wait_for(lambda: len(fake.settled) == 513, WAIT)
    fake.closed.set()
    r.stop()
    assert max(fake.batches) == 512
    assert r.stats().leases_lost == 0


def test_auto_renew_keeps_a_2s_lease_alive_through_a_5s_handler(
    engine: mqlite.EmbeddedClient, clock: FakeClock, spy: SpyClient, stoppers: list[Receiver]
) -> None:
    """The handler's 5.6 s are eight FakeClock steps of 700 ms (over a third of the lease,
    so each is due a renewal): after each it wakes the receiver (whose waits re-read the
    clock when notified), waits for the renewal and runs the reaper, which would take
    back a lapsed lease for redelivery (concurrency 2 would claim it again)."""
    engine.create_queue("q", QueueConfig(lock_duration_ms=2000))
    [seq] = send(engine, "q", 1)
    deliveries: list[int] = []
    reaped: list[int] = []
    steps = 8

    def handler(m: Message) -> None:
        deliveries.append(m.delivery_count)
        for step in range(1, steps + 1):
            clock.advance(700)  # the work
            wake_receiver(r)
            spy.wait_for(calls_of("renew_batch", step))
            reaped.append(sum(testing.engine(engine).reap_locks().values()))

    r = start(stoppers, spy, "q", handler, concurrency=2)
    spy.wait_for(calls_of("complete", 1))
    r.stop(timeout=0)
    assert deliveries == [1]  # never redelivered
    assert reaped == [0] * steps  # the reaper never found the lease lapsed
    assert [c[1][1] for c in spy.calls if c[0] == "complete"] == [seq]
    assert spy.count("complete!") == 0
    assert engine.peek("q") == []
    st = r.stats()
    assert (st.completed, st.leases_lost, st.lock_lost) == (1, 0, 0)
    assert st.renewed == steps  # one per step: every third of the lease


# -- construction ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"concurrency": 0},
        {"concurrency": True},
        {"max_messages": 0},
        {"max_messages": 257},
        {"wait_ms": -1},
        {"wait_ms": 20_001},
    ],
)
def test_bad_options_are_refused_up_front(engine: mqlite.EmbeddedClient, kwargs: Any) -> None:
    with pytest.raises(ValueError):
        Receiver(engine, "q", lambda m: None, **kwargs)


def test_dead_letter_carries_reason_and_description() -> None:
    dl = DeadLetter("Poison", "bad json")
    assert (dl.reason, dl.description, str(dl)) == ("Poison", "bad json", "Poison: bad json")
    assert str(DeadLetter("Poison")) == "Poison"


def test_a_rate_limited_receive_backs_off_for_the_brokers_retry_after(
    engine: mqlite.EmbeddedClient,
) -> None:
    """A 429 that outlived the client's own retries: the Receiver waits the broker's
    ``Retry-After`` (issue 35), not its short retry backoff."""
    engine.create_queue("q")
    err = errors.ResourceExhausted("rate limit", retry_after_s=1)
    client = FailingReceives(engine, [err], forever=True)
    r = Receiver(
        client,
        "q",
        lambda m: None,
        retry_backoff=Backoff(0, 0),
        on_error=lambda exc, m: None,
        clock=testing.engine(engine).clock,
    )
    started = time.monotonic()
    r.start()
    client.wait_for(lambda calls: len(calls) >= 2)
    elapsed = time.monotonic() - started
    r.stop()
    assert elapsed >= 0.95  # not the 50 ms retry floor
