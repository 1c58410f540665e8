"""What every measured system offers the runner: the same three workloads, each a plain
method, so a cell is "open a fresh namespace, maybe prefill, time one method, close".

A workload returns the latencies it measured per acknowledged operation (seconds), or
None when a latency per message is not meaningful (batches, drains). A system that has no
batch API says so with ``batch = False`` and the cell is reported as "not offered",
rather than emulated with a loop that would measure something else.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any


class Side:
    """One system under test. Subclasses set ``name`` and override the workloads."""

    name = "?"
    batch = True  # offers a 64-message produce with one acknowledgement
    durability = ""  # one line for the report: what "acknowledged" means here
    produce_only = False  # a variant of another side (FULL, properties): produce scenarios

    def open(self, workdir: Path, cell: str) -> None:
        """A fresh, empty queue (and, for embedded systems, a fresh database in workdir)."""

    def close(self) -> None:
        """Drop the queue and let go of every connection."""

    def broker_pids(self) -> list[int]:
        """Processes other than this one doing the work (empty for embedded systems)."""
        return []

    def data_paths(self) -> list[Path]:
        """Where the queue's data lives on disk, for database bytes per message."""
        return []

    def produce_1(self, n: int, body: bytes) -> list[float] | None:
        raise NotImplementedError

    def produce_64(self, n: int, body: bytes) -> list[float] | None:
        raise NotImplementedError

    def prefill(self, n: int, body: bytes) -> None:
        """Put n messages in as fast as the system allows (not measured)."""
        if self.batch:
            self.produce_64(n, body)
        else:
            self.produce_1(n, body)

    def drain(self, n: int) -> list[float] | None:
        """Receive and acknowledge (settle) n messages, in batches where offered."""
        raise NotImplementedError

    def e2e(self, n: int, body: bytes) -> None:
        """One producer sending n single messages while one consumer receives and
        acknowledges them (``pair``)."""
        raise NotImplementedError


class ServerSide(Side):
    """A system whose broker is a process of its own (``servers.Server``): its processes
    and data directory are what the cell measures."""

    def __init__(self, server: Any) -> None:
        self.server = server

    def broker_pids(self) -> list[int]:
        return self.server.pids()  # type: ignore[no-any-return]

    def data_paths(self) -> list[Path]:
        return [self.server.data]


class AsyncSide(ServerSide):
    """A system driven by an asyncio client: one event loop per side, every workload run
    to completion on it (the runner itself is synchronous)."""

    def __init__(self, server: Any) -> None:
        super().__init__(server)
        self.loop = asyncio.new_event_loop()

    def _run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)


def timed_each(n: int, op: object) -> list[float]:
    """Call ``op()`` n times; the latency of each call."""
    call = op  # a plain callable; typed loosely to keep the sides short
    lat = []
    clock = time.perf_counter
    for _ in range(n):
        t0 = clock()
        call()  # type: ignore[operator]
        lat.append(clock() - t0)
    return lat


def pair(n: int, produce: object, consume_some: object, deadline_s: float = 300) -> None:
    """The e2e shape: ``produce()`` on a thread (one producer sending n messages, one at a
    time) while this thread calls ``consume_some()`` (one consumer: receive a batch,
    acknowledge it, return how many) until n are consumed."""
    import threading

    errors: list[BaseException] = []

    def producer() -> None:
        try:
            produce()  # type: ignore[operator]
        except BaseException as exc:  # handed to the consumer's thread, raised there
            errors.append(exc)

    t = threading.Thread(target=producer, daemon=True)
    t.start()
    done, deadline = 0, time.monotonic() + deadline_s
    while done < n:
        if errors:
            raise errors[0]
        if time.monotonic() > deadline:
            raise RuntimeError(f"e2e: consumed {done} of {n} in {deadline_s} s")
        done += consume_some()  # type: ignore[operator]
    t.join()
    if errors:
        raise errors[0]


IDLE_S = 0.0005  # a consumer without a blocking receive naps this long on an empty queue
