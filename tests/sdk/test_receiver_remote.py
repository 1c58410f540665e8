"""The Receiver over HTTP against a real ``mqlite serve`` subprocess on a loopback port.

Same consumer, the other client: outcomes, auth errors that stop it, and lease renewal
against the broker's own reaper (real time, kept short: a 1 s lease through a handler that
waits for the broker's reaper to run past the lease's first deadline).
"""

from __future__ import annotations

import itertools
import threading
import uuid
from typing import Any

import pytest

import mqlite
from mqlite import DeadLetter, Message, OutMessage, QueueConfig, Receiver, errors
from waiting import poll_real_process, wait_for_receiver

WAIT = 10.0

# ``broker`` (one ``mqlite serve`` per session) and ``remote`` (a connected client) come
# from tests/sdk/conftest.py; the broker is shared, so queue names are unique per test.


@pytest.fixture
def client(remote: Any) -> Any:
    return remote


@pytest.fixture
def queue() -> str:
    return "rq-" + uuid.uuid4().hex[:12]


def reaped_after(client: Any, deadline_ms: int) -> bool:
    """Has the broker's lock reaper (a real process's 1 s pass) run since ``deadline_ms``?
    A lease that lapsed by then would have been taken back."""
    passes = [t for t in client.observe().maintenance if t.task == "locks"]
    return bool(passes) and passes[0].last_success_at_ms > deadline_ms


def test_remote_outcomes_complete_abandon_and_dead_letter(client: Any, queue: str) -> None:
    client.create_queue(queue, QueueConfig(max_delivery_count=2))
    client.send(queue, [OutMessage(body=b) for b in (b"ok", b"poison", b"flaky")])
    seen: list[tuple[bytes, int]] = []
    lock = threading.Lock()

    def handler(m: Message) -> None:
        with lock:
            seen.append((m.body, m.delivery_count))
        if m.body == b"poison":
            raise DeadLetter("Poison", "cannot parse")
        if m.body == b"flaky":
            raise RuntimeError("always fails")

    r = Receiver(client, queue, handler, concurrency=2, wait_ms=500, on_error=lambda e, m: None)
    with r:
        wait_for_receiver(
            r, lambda st: st.completed == 1 and st.abandoned == 2, "ok and flaky settled"
        )
    st = r.stats()
    assert (st.completed, st.dead_lettered, st.abandoned, st.lock_lost) == (1, 1, 2, 0)
    dead = {m.body: m for m in client.peek(queue, state="dead_lettered")}
    assert dead[b"poison"].dead_letter_reason == "Poison"
    assert dead[b"poison"].dead_letter_description == "cannot parse"
    assert dead[b"flaky"].dead_letter_reason == "MaxDeliveryCountExceeded"
    assert sorted(c for b, c in seen if b == b"flaky") == [1, 2]
    assert client.stats(queue).locked == 0


def test_remote_bad_token_stops_the_receiver(broker: Any, client: Any, queue: str) -> None:
    client.create_queue(queue)
    bad = mqlite.connect(broker.url, token="mqk_not_a_real_token")
    try:
        r = Receiver(bad, queue, lambda m: None, wait_ms=500)
        with pytest.raises(errors.Unauthenticated):
            r.run()
    finally:
        bad.close()


def test_remote_send_only_key_is_permission_denied(broker: Any, client: Any, queue: str) -> None:
    client.create_queue(queue)
    _, token = client.create_key(mqlite.generate_key_id(), "sender", ["send"])
    sender = mqlite.connect(broker.url, token=token)
    try:
        sender.send_one(queue, OutMessage(body=b"x"))
        r = Receiver(sender, queue, lambda m: None, wait_ms=500)
        with pytest.raises(errors.PermissionDenied):
            r.run()
    finally:
        sender.close()
    assert client.stats(queue).active == 1


def test_remote_auto_renew_outlives_the_lease(client: Any, queue: str) -> None:
    """Real time, a real broker: a 1 s lease through a handler that lasts until the
    broker's own reaper (every second) has run past the lease's first deadline."""
    client.create_queue(queue, QueueConfig(lock_duration_ms=1000))
    client.send_one(queue, OutMessage(body=b"slow"))
    deliveries: list[int] = []

    def handler(m: Message) -> None:
        deliveries.append(m.delivery_count)
        poll_real_process(
            "the broker's reaper to pass the lease's first deadline",
            lambda: reaped_after(client, m.locked_until_ms),
            deadline_s=WAIT,
            interval_s=0.1,
        )

    r = Receiver(client, queue, handler, concurrency=2, wait_ms=500)
    with r:
        wait_for_receiver(r, lambda st: st.completed == 1, "the slow message completed")
    st = r.stats()
    assert deliveries == [1]
    assert (st.leases_lost, st.lock_lost, st.renew_errors) == (0, 0, 0)
    assert st.renewed >= 2  # every third of the lease, past its first deadline
    assert client.stats(queue).total == 0


def test_remote_deliveries_follow_the_queue_retry_policy_and_the_dlq_keeps_the_error(
    client: Any, queue: str
) -> None:
    """Through ``mqlite serve``: a handler that always fails, a queue with a retry policy
    (1 s, x2, cap 3 s) and a Receiver whose own Backoff (1 ms) the policy overrides. The
    delivery timestamps are spaced 1 s, 2 s, 3 s (plus at most the broker's 1 s scheduler
    pass and the long poll), and the dead letter says why."""
    from mqlite import Backoff
    from mqlite.clock import SYSTEM_CLOCK

    client.create_queue(
        queue,
        QueueConfig(
            max_delivery_count=4,
            retry_initial_delay_ms=1_000,
            retry_multiplier=2,
            retry_max_delay_ms=3_000,
        ),
    )
    client.send_one(queue, OutMessage(b"job"))
    times: list[int] = []

    def handler(m: Message) -> None:
        times.append(SYSTEM_CLOCK.now_ms())
        raise RuntimeError(f"fail {m.delivery_count}")

    r = Receiver(client, queue, handler, wait_ms=2_000, backoff=Backoff(1, 2),
                 on_error=lambda e, m: None)  # fmt: skip
    with r:
        wait_for_receiver(r, lambda st: st.abandoned == 4, "four deliveries", 30)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(gaps) == 3
    for gap, delay in zip(gaps, (1_000, 2_000, 3_000), strict=True):
        assert delay <= gap <= delay + 2_000, gaps
    (dead,) = client.peek(queue, state="dead_lettered")
    assert (dead.dead_letter_reason, dead.dead_letter_description) == (
        "MaxDeliveryCountExceeded",
        "RuntimeError: fail 4",
    )
    assert (dead.last_error, dead.delivery_count) == ("RuntimeError: fail 4", 4)
    assert dead.last_error_at_ms >= times[-1]
