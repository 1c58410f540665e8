"""Push delivery against a real receiver on 127.0.0.1 (docs/push.md "Delivery"): what is
sent and signed, what each status class does to the message, retries spaced by the
queue's retry policy (a FakeClock), Retry-After, ordering and concurrency, lock renewal,
and the egress guard applied at connection time."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote

import pytest
from push_support import Receiver, verify

import mqlite
from mqlite import OutMessage, QueueConfig
from mqlite.clock import FakeClock
from mqlite.engine.egress import Egress

# A retry far in the future: the first failure stays visible to the test.
SLOW_RETRY = QueueConfig(retry_initial_delay_ms=3_600_000, retry_max_delay_ms=3_600_000)


def wait_until(pred: Callable[[], object], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


def dead(mq: mqlite.EmbeddedClient, q: str) -> list[mqlite.Message]:
    return mq.peek(q, state="dead_lettered")


def test_each_message_is_posted_once_signed_with_its_headers(
    pushing: mqlite.EmbeddedClient, receiver: Receiver
) -> None:
    pushing.create_queue("orders")
    secret = pushing.create_push("orders", receiver.url()).secret
    seq = pushing.send_one(
        "orders",
        OutMessage(
            b'{"id": 1}',
            message_id="m-1",
            subject="créé",
            correlation_id="c-9",
            content_type="application/json",
            properties={"tenant": "acme", "bad key!": "x", "pct": "50%"},
        ),
    )
    (got,) = receiver.wait_for(1)
    h = got.headers
    assert got.body == b'{"id": 1}' and got.path == "/hook"
    assert verify(secret, h, got.body)
    assert not verify("whsec_" + "QUFB" * 8, h, got.body)  # the check can fail
    assert h["webhook-id"] == f"orders:{seq}"
    assert abs(int(h["webhook-timestamp"]) - pushing._engine.now_ms() // 1000) < 60
    assert h["content-type"] == "application/json"
    assert (h["mqlite-queue"], h["mqlite-seq-number"], h["mqlite-delivery-count"]) == (
        "orders", str(seq), "1",
    )  # fmt: skip
    assert unquote(h["mqlite-subject"]) == "créé" and h["mqlite-correlation-id"] == "c-9"
    assert h["mqlite-message-id"] == "m-1"
    assert h["mqlite-property-tenant"] == "acme" and unquote(h["mqlite-property-pct"]) == "50%"
    assert h["mqlite-properties-omitted"] == "1"  # "bad key!" is not a header token
    wait_until(lambda: pushing.list_pushes()[0].delivered == 1)
    assert pushing.stats("orders").total == 0
    (p,) = pushing.list_pushes()
    assert (p.status, p.last_status, p.delivered, p.failed) == ("active", 204, 1, 0)
    time.sleep(0.2)
    assert len(receiver.got) == 1  # completed: never sent again


def test_an_empty_content_type_is_sent_as_octet_stream(
    pushing: mqlite.EmbeddedClient, receiver: Receiver
) -> None:
    pushing.create_queue("q")
    pushing.create_push("q", receiver.url())
    pushing.send_one("q", OutMessage(b"\x00\x01"))
    (got,) = receiver.wait_for(1)
    assert got.headers["content-type"] == "application/octet-stream"
    assert got.body == b"\x00\x01"


@pytest.mark.parametrize("status", [500, 503, 502, 408, 429])
def test_a_retryable_status_abandons_with_the_error_and_delivers_again(
    pushing: mqlite.EmbeddedClient, receiver: Receiver, status: int
) -> None:
    pushing.create_queue("q")
    pushing.create_push("q", receiver.url())
    receiver.behave(lambda g, h: (status if len(receiver.got) == 1 else 200, {}, b""))
    seq = pushing.send_one("q", OutMessage(b"x"))
    first, second = receiver.wait_for(2)
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == f"q:{seq}"
    assert (first.headers["mqlite-delivery-count"], second.headers["mqlite-delivery-count"]) == (
        "1", "2",
    )  # fmt: skip
    wait_until(lambda: pushing.list_pushes()[0].delivered == 1)
    (p,) = pushing.list_pushes()
    assert (p.delivered, p.failed, pushing.stats("q").total) == (1, 1, 0)


def test_the_abandon_carries_the_push_error(
    pushing: mqlite.EmbeddedClient, receiver: Receiver
) -> None:
    pushing.create_queue("q", SLOW_RETRY)
    pushing.create_push("q", receiver.url())
    receiver.answer(503)
    pushing.send_one("q", OutMessage(b"x"))
    receiver.wait_for(1)
    wait_until(lambda: pushing.list_pushes()[0].failed == 1)
    (m,) = pushing.peek("q")
    assert m.last_error == "push: HTTP 503" and m.state != "locked"
    (p,) = pushing.list_pushes()
    assert (p.status, p.last_status, p.last_error) == ("failing", 503, "push: HTTP 503")
    assert p.next_attempt_at_ms >= p.last_attempt_at_ms + 3_600_000 - 1000


@pytest.mark.parametrize("status", [400, 401, 404, 410, 422, 301, 302])
def test_a_refusing_status_dead_letters_at_once_as_push_rejected(
    pushing: mqlite.EmbeddedClient, receiver: Receiver, status: int
) -> None:
    pushing.create_queue("q")
    pushing.create_push("q", receiver.url())
    receiver.answer(status, {"location": receiver.url("/elsewhere")})
    pushing.send_one("q", OutMessage(b"x"))
    receiver.wait_for(1)
    wait_until(lambda: dead(pushing, "q"))
    (m,) = dead(pushing, "q")
    assert m.dead_letter_reason == "PushRejected"
    assert str(status) in m.dead_letter_description
    assert m.delivery_count == 1
    time.sleep(0.2)
    assert [g.path for g in receiver.got] == ["/hook"]  # a redirect is never followed


def test_max_delivery_count_dead_letters_a_failing_message(
    pushing: mqlite.EmbeddedClient, receiver: Receiver
) -> None:
    pushing.create_queue("q", QueueConfig(max_delivery_count=3))
    pushing.create_push("q", receiver.url())
    receiver.answer(500)
    pushing.send_one("q", OutMessage(b"x"))
    # No retry policy: push spaces the retries itself (1 s, then 2 s).
    receiver.wait_for(3, timeout_s=15)
    wait_until(lambda: dead(pushing, "q"))
    (m,) = dead(pushing, "q")
    assert m.delivery_count == 3 and m.last_error == "push: HTTP 500"
    gaps = [b.at - a.at for a, b in zip(receiver.got, receiver.got[1:], strict=False)]
    assert gaps[0] >= 0.9 and gaps[1] >= 1.9, gaps


def test_retries_follow_the_queue_retry_policy(tmp_path: Path, receiver: Receiver) -> None:
    """Initial 5 s, x2, jitter 0: the message is due again exactly 5 s, then 10 s, after
    each failure (engine time: a FakeClock), and not a millisecond before."""
    clock = FakeClock(1_700_000_000_000)
    mq = mqlite.open_embedded(
        f"file:{tmp_path / 'mq.db'}", clock=clock, push_allow_networks="127.0.0.0/8"
    )
    try:
        cfg = QueueConfig(retry_initial_delay_ms=5_000, retry_multiplier=2.0)
        mq.create_queue("q", cfg)
        mq.create_push("q", receiver.url())
        receiver.answer(503)
        mq.send_one("q", OutMessage(b"x"))
        kick = mq._scheduler.push.kick  # type: ignore[union-attr]
        receiver.wait_for(1)
        wait_until(lambda: mq.peek("q")[0].last_error == "push: HTTP 503")
        assert mq.peek("q")[0].visible_at_ms == clock.now_ms() + 5_000
        clock.advance(4_999)
        kick()
        time.sleep(0.3)
        assert len(receiver.got) == 1
        clock.advance(1)
        kick()
        receiver.wait_for(2)
        wait_until(
            lambda: mq.peek("q")[0].delivery_count == 2 and mq.peek("q")[0].state != "locked"
        )
        assert mq.peek("q")[0].visible_at_ms == clock.now_ms() + 10_000
        receiver.answer(204)
        clock.advance(10_000)
        kick()
        receiver.wait_for(3)
        wait_until(lambda: mq.stats("q").total == 0)
    finally:
        mq.close()


def test_retry_after_is_the_delay_capped_at_the_policy_maximum(
    tmp_path: Path, receiver: Receiver
) -> None:
    clock = FakeClock(1_700_000_000_000)
    mq = mqlite.open_embedded(
        f"file:{tmp_path / 'mq.db'}", clock=clock, push_allow_networks="127.0.0.0/8"
    )
    try:
        cfg = QueueConfig(retry_initial_delay_ms=1_000, retry_max_delay_ms=60_000)
        mq.create_queue("a", cfg)
        mq.create_queue("b", cfg)
        mq.create_push("a", receiver.url("/a"))
        mq.create_push("b", receiver.url("/b"))
        receiver.behave(
            lambda g, h: (429, {"retry-after": "30" if g.path == "/a" else "7200"}, b"")
        )
        mq.send_one("a", OutMessage(b"x"))
        mq.send_one("b", OutMessage(b"x"))
        receiver.wait_for(2)
        for q in ("a", "b"):
            wait_until(lambda q=q: mq.peek(q)[0].last_error == "push: HTTP 429")  # type: ignore[misc]
        assert mq.peek("a")[0].visible_at_ms == clock.now_ms() + 30_000
        assert mq.peek("b")[0].visible_at_ms == clock.now_ms() + 60_000  # capped
    finally:
        mq.close()


def test_a_timeout_abandons_with_its_text(
    pushing: mqlite.EmbeddedClient, receiver: Receiver
) -> None:
    pushing.create_queue("q", SLOW_RETRY)
    pushing.create_push("q", receiver.url(), timeout_ms=300)
    receiver.behave(lambda g, h: (time.sleep(2), (204, {}, b""))[1])
    pushing.send_one("q", OutMessage(b"x"))
    wait_until(lambda: pushing.peek("q")[0].last_error, timeout_s=5)
    assert pushing.peek("q")[0].last_error == "push: timeout after 0.3 s"


def test_a_refused_connection_abandons_with_its_text(pushing: mqlite.EmbeddedClient) -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    pushing.create_queue("q", SLOW_RETRY)
    pushing.create_push("q", f"http://127.0.0.1:{port}/h")
    pushing.send_one("q", OutMessage(b"x"))
    wait_until(lambda: pushing.peek("q")[0].last_error)
    assert pushing.peek("q")[0].last_error.startswith("push: connection failed")


def test_the_egress_guard_is_applied_at_each_connection(
    pushing: mqlite.EmbeddedClient, receiver: Receiver
) -> None:
    """A target accepted while loopback was allowed is refused once it is not: the check
    runs when connecting, on the address actually connected to (what a DNS rebinding
    relies on slipping past)."""
    pushing.create_queue("q", SLOW_RETRY)
    url = receiver.url().replace("127.0.0.1", "localhost")
    pushing.create_push("q", url, paused=True)  # localhost: 127.0.0.1, allowed now
    engine = pushing._engine
    engine.pushes.egress = Egress(())  # closed: as if the name now meant a refused address
    stored = engine.push_targets()["q"]
    engine.pushes.publish("q", replace(stored, paused=False))  # resumed, no new check
    pushing.send_one("q", OutMessage(b"x"))
    wait_until(lambda: pushing.peek("q")[0].last_error)
    err = pushing.peek("q")[0].last_error
    assert err.startswith("push: connection failed") and "loopback" in err, err
    assert receiver.got == []


def test_group_fifo_delivers_one_per_group_in_order(
    pushing: mqlite.EmbeddedClient, receiver: Receiver
) -> None:
    pushing.create_queue("g", QueueConfig(ordering_mode="group_fifo"))
    pushing.create_push("g", receiver.url(), max_in_flight=16)
    receiver.behave(lambda g, h: (time.sleep(0.03), (204, {}, b""))[1])
    for i in range(10):
        for group in ("a", "b", "c"):
            pushing.send_one("g", OutMessage(f"{group}{i}".encode(), group_id=group))
    receiver.wait_for(30, timeout_s=20)
    for group in ("a", "b", "c"):
        bodies = [g.body.decode() for g in receiver.got if g.headers["mqlite-group-id"] == group]
        assert bodies == [f"{group}{i}" for i in range(10)]
        assert receiver.group_peak[group] == 1
    assert receiver.peak >= 2  # the groups did run side by side


def test_strict_fifo_delivers_one_at_a_time_in_order(
    pushing: mqlite.EmbeddedClient, receiver: Receiver
) -> None:
    pushing.create_queue("s", QueueConfig(ordering_mode="strict_fifo"))
    pushing.create_push("s", receiver.url(), max_in_flight=16)
    receiver.behave(lambda g, h: (time.sleep(0.01), (204, {}, b""))[1])
    pushing.send("s", [OutMessage(f"{i}".encode()) for i in range(20)])
    got = receiver.wait_for(20)
    assert [g.body for g in got] == [f"{i}".encode() for i in range(20)]
    assert receiver.peak == 1


def test_standard_queues_run_up_to_max_in_flight(
    pushing: mqlite.EmbeddedClient, receiver: Receiver
) -> None:
    pushing.create_queue("q")
    pushing.create_push("q", receiver.url(), max_in_flight=5)
    receiver.behave(lambda g, h: (time.sleep(0.2), (204, {}, b""))[1])
    pushing.send("q", [OutMessage(b"x") for _ in range(20)])
    receiver.wait_for(20, timeout_s=20)
    assert receiver.peak == 5


def test_the_lock_is_renewed_while_a_slow_post_runs(
    pushing: mqlite.EmbeddedClient, receiver: Receiver
) -> None:
    """Lock 1 s, an answer after 2.5 s: the message is never handed out twice at once."""
    pushing.create_queue("q", QueueConfig(lock_duration_ms=1_000))
    pushing.create_push("q", receiver.url(), timeout_ms=5_000)
    receiver.behave(lambda g, h: (time.sleep(2.5), (204, {}, b""))[1])
    pushing.send_one("q", OutMessage(b"x"))
    receiver.wait_for(1)
    wait_until(lambda: pushing.list_pushes()[0].delivered == 1, timeout_s=8)
    assert len(receiver.got) == 1 and pushing.stats("q").total == 0


def test_a_paused_target_delivers_nothing_until_resumed(
    pushing: mqlite.EmbeddedClient, receiver: Receiver
) -> None:
    pushing.create_queue("q")
    pushing.create_push("q", receiver.url(), paused=True)
    pushing.send_one("q", OutMessage(b"x"))
    time.sleep(1.5)
    assert receiver.got == [] and pushing.stats("q").active == 1
    pushing.create_push("q", receiver.url(), paused=False)
    receiver.wait_for(1)
