"""Long-poll receive: woken by a commit from another thread, never busy-polling, and woken
by close. Waits use events with timeouts (test signals), never sleeps."""

from __future__ import annotations

import threading
import time

import mqlite
from mqlite import OutMessage, errors, testing


def run_in_thread(fn) -> tuple[threading.Thread, dict[str, object]]:  # type: ignore[no-untyped-def]
    out: dict[str, object] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:
            out["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, out


def wait_for_waiter(mq: mqlite.EmbeddedClient, queue: str) -> None:
    assert testing.engine(mq).notifier.wait_for_waiters(queue), "receive never parked"


def test_send_from_another_thread_wakes_a_parked_receive(engine: mqlite.EmbeddedClient) -> None:
    engine.create_queue("q")
    t, out = run_in_thread(lambda: engine.receive("q", wait_ms=10_000))
    wait_for_waiter(engine, "q")
    started = time.monotonic()
    seq = engine.send_one("q", OutMessage(body=b"wake"))
    t.join(5)
    assert not t.is_alive()
    assert time.monotonic() - started < 2
    msgs = out["value"]
    assert [m.seq_number for m in msgs] == [seq]  # type: ignore[attr-defined]


def test_an_empty_long_poll_returns_empty_at_its_deadline(engine: mqlite.EmbeddedClient) -> None:
    engine.create_queue("q")
    started = time.monotonic()
    assert engine.receive("q", wait_ms=150) == []
    assert 0.1 <= time.monotonic() - started < 3


def test_advancing_the_fake_clock_brings_the_deadline_closer(
    engine: mqlite.EmbeddedClient, clock
) -> None:  # type: ignore[no-untyped-def]
    engine.create_queue("q")
    t, out = run_in_thread(lambda: engine.receive("q", wait_ms=20_000))
    wait_for_waiter(engine, "q")
    clock.advance(25_000)
    testing.engine(engine).notifier.notify("q")  # re-evaluate the deadline
    t.join(5)
    assert out["value"] == []


def test_close_wakes_parked_receivers_with_closed(db_path) -> None:  # type: ignore[no-untyped-def]
    mq = mqlite.open_embedded(f"file:{db_path}", background=False)
    mq.create_queue("q")
    t, out = run_in_thread(lambda: mq.receive("q", wait_ms=20_000))
    wait_for_waiter(mq, "q")
    mq.close()
    t.join(5)
    assert isinstance(out.get("error"), errors.Closed)
    try:
        mq.send_one("q", OutMessage(body=b"x"))
    except errors.Closed:
        pass
    else:
        raise AssertionError("send after close must raise Closed")


def test_completing_a_group_head_wakes_a_waiter_for_its_successor(
    engine: mqlite.EmbeddedClient,
) -> None:
    engine.create_queue("q")
    engine.send("q", [OutMessage(body=b"1", group_id="g"), OutMessage(body=b"2", group_id="g")])
    (head,) = engine.receive("q", max_messages=5)
    t, out = run_in_thread(lambda: engine.receive("q", wait_ms=10_000))
    wait_for_waiter(engine, "q")
    head.complete()
    t.join(5)
    assert [m.body for m in out["value"]] == [b"2"]  # type: ignore[attr-defined]


def test_a_parked_receive_holds_no_writer(engine: mqlite.EmbeddedClient) -> None:
    engine.create_queue("q")
    engine.create_queue("other")
    t, _ = run_in_thread(lambda: engine.receive("q", wait_ms=2_000))
    wait_for_waiter(engine, "q")
    started = time.monotonic()
    engine.send_one("other", OutMessage(body=b"x"))
    assert time.monotonic() - started < 1
    engine.send_one("q", OutMessage(body=b"x"))
    t.join(5)


def test_a_send_wakes_only_as_many_parked_polls_as_it_made_claimable(
    engine: mqlite.EmbeddedClient,
) -> None:
    """No thundering herd: one message wakes one of ten parked polls; the rest stay parked
    until there is work for them."""
    engine.create_queue("q")
    notifier = testing.engine(engine).notifier
    polls = [run_in_thread(lambda: engine.receive("q", wait_ms=10_000)) for _ in range(10)]
    assert notifier.wait_for_waiters("q", 10)
    engine.send_one("q", OutMessage(body=b"one"))
    polls[0][0].join(5)  # the oldest waiter is woken first
    assert not polls[0][0].is_alive()
    assert notifier.wait_for_waiters("q", 9)
    assert notifier.waiting("q") == 9
    assert sum(not t.is_alive() for t, _ in polls) == 1
    engine.send("q", [OutMessage(body=b"%d" % i) for i in range(9)])
    for t, _ in polls:
        t.join(5)
    got = sorted(len(out["value"]) for _, out in polls)  # type: ignore[arg-type]
    assert got == [1] * 10


def test_an_unused_wake_is_handed_to_the_next_waiter() -> None:
    """A poll woken but leaving without claiming (deadline, disconnect) passes the wake on,
    so bounded wake-ups never strand a message while others are parked."""
    from mqlite.engine.notify import Notifier

    n = Notifier()
    fired: list[str] = []
    a = n.register("q", lambda: fired.append("a"))
    n.register("q", lambda: fired.append("b"))
    n.notify("q", 1)
    assert fired == ["a"]
    if a.cancel():  # what the receive loops do on their way out
        n.notify("q", 1)
    assert fired == ["a", "b"]
