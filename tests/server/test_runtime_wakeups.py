"""The server's long polls wake only as many parked polls as there is work, and a poll
that was woken but leaves without claiming (its client went away) hands the wake on."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mqlite import OutMessage
from mqlite.clock import FakeClock
from mqlite.engine import Engine
from mqlite.server.runtime import Runtime


def test_a_woken_poll_whose_client_left_hands_its_wake_to_the_next(tmp_path: Path) -> None:
    engine = Engine(f"file:{tmp_path / 'w.db'}", clock=FakeClock())
    engine.create_queue("q")
    runtime = Runtime(engine)

    async def scenario() -> tuple[list[object], list[object]]:
        gone_a, gone_b = asyncio.Event(), asyncio.Event()
        kw = {"delete": False, "attempt_id": None}
        a = asyncio.ensure_future(runtime.receive("q", 1, 10_000, disconnected=gone_a, **kw))
        await asyncio.sleep(0)
        # the notifier signals each parked poll (no polling of its count)
        assert await asyncio.to_thread(engine.notifier.wait_for_waiters, "q", 1)
        b = asyncio.ensure_future(runtime.receive("q", 1, 10_000, disconnected=gone_b, **kw))
        # the notifier signals each parked poll (no polling of its count)
        assert await asyncio.to_thread(engine.notifier.wait_for_waiters, "q", 2)
        gone_a.set()  # A's client has gone; A has not seen it yet ...
        # ... and the loop is held here while the send commits and wakes the OLDEST poll, A.
        engine.send_one("q", OutMessage(b"for whoever is still there"))
        got_a = await asyncio.wait_for(a, 5)
        got_b = await asyncio.wait_for(b, 5)  # B gets it only if A handed the wake on
        return got_a, got_b

    try:
        got_a, got_b = asyncio.run(scenario())
        assert got_a == []
        assert [m.body for m in got_b] == [b"for whoever is still there"]  # type: ignore[attr-defined]
    finally:
        engine.close()


def test_one_send_wakes_one_of_many_parked_polls(tmp_path: Path) -> None:
    engine = Engine(f"file:{tmp_path / 'w.db'}", clock=FakeClock())
    engine.create_queue("q")
    runtime = Runtime(engine)

    async def scenario() -> tuple[int, int]:
        claims = 0
        real = engine.try_receive

        def counting(*args: object, **kwargs: object) -> object:
            nonlocal claims
            claims += 1
            return real(*args, **kwargs)  # type: ignore[arg-type]

        engine.try_receive = counting  # type: ignore[method-assign]
        kw = {"delete": False, "attempt_id": None}
        polls = [
            asyncio.ensure_future(
                runtime.receive("q", 1, 10_000, disconnected=asyncio.Event(), **kw)
            )
            for _ in range(50)
        ]
        # the notifier signals each parked poll (no polling of its count)
        assert await asyncio.to_thread(engine.notifier.wait_for_waiters, "q", 50)
        await runtime.call(int)  # every poll's claims so far are done
        before = claims
        await runtime.call(engine.send_one, "q", OutMessage(b"one"))
        await asyncio.wait(polls, timeout=2, return_when="FIRST_COMPLETED")
        for _ in range(10):  # let any other woken poll run and submit its claim ...
            await asyncio.sleep(0)
        await runtime.call(int)  # ... and let the writer (FIFO) get through those claims
        finished = sum(p.done() for p in polls)
        woken_claims = claims - before
        runtime.begin_drain()
        await asyncio.gather(*polls)
        return finished, woken_claims

    try:
        finished, claims = asyncio.run(scenario())
        assert finished == 1
        assert claims == 1  # one wake, one claim: not fifty claims on the writer
    finally:
        engine.close()
