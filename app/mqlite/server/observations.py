"""Observations shared by concurrent callers (issue 26: four concurrent /metrics scrapes
of 10,000 queues moved another client's Send p50 from 1.9 ms to 357 ms).

Every Observe call and /metrics scrape needs a collection: the engine's grouped read on
the writer, then a pivot and a render that hold the GIL. Concurrent callers share ONE
collection -- a caller joins the round that has not begun sampling yet, so what it gets
was read after it arrived (what it wrote before asking is in it) -- and one round runs
at a time: a caller arriving while a round samples waits for the next, which every such
caller shares. N concurrent scrapes are one collection, and one render: the exposition
is rendered once per round, off the event loop and off the writer, and served to each
of them (``Round.exposition``). An Observe answer never comes from a round older than
its call; a scrape may (``recent``): from the last round, when it began sampling at most
``SCRAPE_REUSE_S`` ago -- Prometheus stamps its own scrape time, and a second of
staleness bounds what any number of scrapers costs the writer to a collection a second.
"""

from __future__ import annotations

import asyncio
import gzip
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mqlite.engine import observation as o
from mqlite.server import metrics

# What a round runs: the collection, given the callback it must call (from its thread)
# just before its first read.
Collect = Callable[[Callable[[], None]], Awaitable[o.Observation]]
SCRAPE_REUSE_S = 1.0
GZIP_LEVEL = 1  # the exposition is repetitive text: level 1 already shrinks it ~10x


class Round:
    """One collection and what is derived from it once, for every caller sharing it."""

    def __init__(self) -> None:
        self.sampling = False  # set by the collecting thread before its first read
        self.began_at = 0.0  # time.monotonic() when it began sampling
        self.future: asyncio.Future[o.Observation] = asyncio.get_running_loop().create_future()
        self._rendered: asyncio.Future[bytes] | None = None
        self._compressed: asyncio.Future[bytes] | None = None
        self._response: asyncio.Future[Any] | None = None

    def began(self) -> None:
        """Called on the collecting thread: late arrivals may no longer join."""
        self.began_at = time.monotonic()
        self.sampling = True

    async def exposition(self) -> bytes:
        """The /metrics text of this round's observation, rendered once (in a thread)."""
        if self._rendered is None:
            observed = await asyncio.shield(self.future)
            if self._rendered is None:
                self._rendered = asyncio.ensure_future(asyncio.to_thread(metrics.render, observed))
        return await asyncio.shield(self._rendered)

    async def exposition_gzip(self) -> bytes:
        """The same text gzip-compressed, once (Prometheus asks for gzip: a 10,000-queue
        exposition of 19 MB is well under a tenth of that compressed; zlib runs without
        the GIL)."""
        if self._compressed is None:
            text = await self.exposition()
            if self._compressed is None:
                self._compressed = asyncio.ensure_future(
                    asyncio.to_thread(gzip.compress, text, GZIP_LEVEL, mtime=0)
                )
        return await asyncio.shield(self._compressed)

    async def converted(self, convert: Callable[[o.Observation], Any]) -> Any:
        """``convert(observation)`` once per round, in a thread (the Observe answer: a
        zero-filled observation of many queues is too big to convert on the loop)."""
        if self._response is None:
            observed = await asyncio.shield(self.future)
            if self._response is None:
                self._response = asyncio.ensure_future(asyncio.to_thread(convert, observed))
        return await asyncio.shield(self._response)


class Observations:
    """Hands out rounds; ``rounds`` counts the collections started (the tests read it)."""

    def __init__(self, collect: Collect, reuse_s: float = SCRAPE_REUSE_S) -> None:
        self._collect = collect
        self._reuse_s = reuse_s
        self._last: Round | None = None  # the newest round that succeeded
        self._joinable: Round | None = None
        self._previous: asyncio.Future[o.Observation] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.rounds = 0
        self.waiting = 0  # callers waiting for a round (the tests read it)

    async def round(self) -> Round:
        """A round that samples after this call began, finished."""
        r = self._joinable
        if r is None or r.sampling:
            r = self._joinable = Round()
            task = asyncio.ensure_future(self._run(r, self._previous))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            self._previous = r.future
        self.waiting += 1
        try:
            await asyncio.shield(r.future)
        finally:
            self.waiting -= 1
        return r

    async def recent(self) -> Round:
        """For a scrape: the last successful round if it began sampling within the reuse
        window, else ``round()``."""
        last = self._last
        if last is not None and time.monotonic() - last.began_at <= self._reuse_s:
            return last
        return await self.round()

    async def _run(self, r: Round, previous: asyncio.Future[o.Observation] | None) -> None:
        if previous is not None:  # one collection at a time
            await asyncio.wait([previous])
        self.rounds += 1
        try:
            observed = await self._collect(r.began)
        except asyncio.CancelledError:
            r.future.cancel()
            raise
        except Exception as exc:  # every sharer gets the failure
            r.future.set_exception(exc)
        else:
            r.future.set_result(observed)
            self._last = r
        finally:
            if self._joinable is r:
                self._joinable = None
