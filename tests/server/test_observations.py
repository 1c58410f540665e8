"""The coalescing of observations (server/observations.py): callers that arrive before a
round begins sampling share it; one that arrives after gets the next round (so what it
wrote before asking is in its answer), the rounds never overlap, and a failure reaches
every sharer. The collection here is a stand-in whose sampling the test controls; the
real broker is tests/e2e/test_observe_coalescing.py."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable
from typing import Any

import pytest

from mqlite.engine import Engine
from mqlite.engine import observation as o
from mqlite.server.observations import Observations


class Collector:
    """Collection ``n`` waits for ``go[n]`` (the writer is busy: sampling has not begun),
    calls ``on_sample`` and sets ``started[n]``, waits for ``finish[n]``, then answers a
    real observation stamped with its ordinal (``sampled_at_ms``)."""

    def __init__(self) -> None:
        self.engine = Engine(":memory:")
        self.started: list[threading.Event] = []
        self.go: list[threading.Event] = []
        self.finish: list[threading.Event] = []
        self.running = 0
        self.overlapped = False
        self.fail = False

    async def __call__(self, on_sample: Callable[[], None]) -> o.Observation:
        n = len(self.started)
        self.started.append(threading.Event())
        self.go.append(threading.Event())
        self.finish.append(threading.Event())

        def collect() -> o.Observation:
            self.running += 1
            self.overlapped |= self.running > 1
            try:
                self.go[n].wait(10)
                on_sample()
                self.started[n].set()
                self.finish[n].wait(10)
                if self.fail:
                    raise RuntimeError("collection failed")
                return dataclasses.replace(self.engine.observe(), sampled_at_ms=n)
            finally:
                self.running -= 1

        return await asyncio.to_thread(collect)

    def release(self, n: int) -> None:
        self.go[n].set()
        self.finish[n].set()


async def until(predicate: Callable[[], bool]) -> None:
    """Let the event loop run the callers' tasks until ``predicate`` holds. It reads only
    what those tasks change on this loop (callers waiting, collections begun), so yielding
    (``sleep(0)``) is enough: no timer, and a bound so a missing step fails."""
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


async def sampling(c: Collector, n: int) -> None:
    """Wait (off the loop) until collection ``n`` has begun sampling, on its thread."""
    assert await asyncio.to_thread(c.started[n].wait, 10), f"collection {n} never sampled"


def run(scenario: Callable[[Observations, Collector], Any], reuse_s: float = 1.0) -> None:
    collector = Collector()
    try:
        asyncio.run(scenario(Observations(collector, reuse_s), collector))
    finally:
        collector.engine.close()


def test_callers_before_sampling_share_one_round() -> None:
    async def scenario(obs: Observations, c: Collector) -> None:
        callers = [asyncio.ensure_future(obs.round()) for _ in range(10)]
        await until(lambda: obs.waiting == 10 and len(c.go) == 1)
        c.release(0)
        rounds = await asyncio.gather(*callers)
        assert obs.rounds == 1 and len({id(r) for r in rounds}) == 1
        renders = await asyncio.gather(*(r.exposition() for r in rounds))
        assert len({id(body) for body in renders}) == 1  # rendered once, shared

    run(scenario)


def test_a_caller_after_sampling_began_gets_the_next_round() -> None:
    async def scenario(obs: Observations, c: Collector) -> None:
        first = asyncio.ensure_future(obs.round())
        await until(lambda: len(c.go) == 1)
        c.go[0].set()  # round 0 samples now, and is held before it answers
        await sampling(c, 0)
        late = [asyncio.ensure_future(obs.round()) for _ in range(3)]
        await until(lambda: obs.waiting == 4)
        assert len(c.go) == 1  # round 1 waits for round 0: never two at once
        c.finish[0].set()
        r0 = await first
        await until(lambda: len(c.go) == 2)
        c.release(1)
        later = await asyncio.gather(*late)
        assert r0.future.result().sampled_at_ms == 0
        assert {r.future.result().sampled_at_ms for r in later} == {1}
        assert obs.rounds == 2 and not c.overlapped

    run(scenario)


def test_a_failed_collection_fails_every_sharer_and_the_next_round_runs() -> None:
    async def scenario(obs: Observations, c: Collector) -> None:
        c.fail = True
        callers = [asyncio.ensure_future(obs.round()) for _ in range(3)]
        await until(lambda: obs.waiting == 3 and len(c.go) == 1)
        c.release(0)
        for outcome in await asyncio.gather(*callers, return_exceptions=True):
            assert isinstance(outcome, RuntimeError)
        c.fail = False
        again = asyncio.ensure_future(obs.round())
        await until(lambda: len(c.go) == 2)
        c.release(1)
        assert (await again).future.result().sampled_at_ms == 1

    run(scenario)


@pytest.mark.parametrize("callers", [1, 5])
def test_converted_once_per_round(callers: int) -> None:
    async def scenario(obs: Observations, c: Collector) -> None:
        conversions = []

        def convert(observed: o.Observation) -> int:
            conversions.append(observed)
            return len(conversions)

        pending = [asyncio.ensure_future(obs.round()) for _ in range(callers)]
        await until(lambda: obs.waiting == callers and len(c.go) == 1)
        c.release(0)
        rounds = await asyncio.gather(*pending)
        assert await asyncio.gather(*(r.converted(convert) for r in rounds)) == [1] * callers

    run(scenario)


@pytest.mark.parametrize("reuse_s", [0.0, 3600.0])
def test_a_scrape_reuses_the_last_round_within_the_window(reuse_s: float) -> None:
    async def scenario(obs: Observations, c: Collector) -> None:
        first = asyncio.ensure_future(obs.recent())  # nothing yet: a round
        await until(lambda: len(c.go) == 1)
        c.release(0)
        r0 = await first
        later = asyncio.ensure_future(obs.recent())
        if reuse_s:
            assert await later is r0 and obs.rounds == 1
        else:  # past the window: a round of its own
            await until(lambda: len(c.go) == 2)
            c.release(1)
            assert await later is not r0 and obs.rounds == 2
        began = obs.rounds
        fresh = asyncio.ensure_future(obs.round())  # what Observe uses: never reused
        # Its own collection: one more than before (not the one already released, which
        # left the new collection to time out on its events, 20 s a run).
        await until(lambda: len(c.go) == began + 1)
        c.release(began)
        assert await fresh is not r0

    run(scenario, reuse_s)
