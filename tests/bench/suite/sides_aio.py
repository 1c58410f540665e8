"""mqlite over HTTP through the asyncio SDK (``mqlite.aio.connect``), as an asyncio user
drives it: one task awaiting each call, on one event loop the side owns; the e2e cell
runs the producer and the consumer as two tasks on that loop."""

from __future__ import annotations

import asyncio
import secrets
import time
from pathlib import Path
from typing import Any

from side import AsyncSide, timed_each
from workloads import CONSUMER_MAX, CONSUMER_WAIT_MS

import mqlite.aio
from mqlite import OutMessage, QueueConfig


class MqliteHttpAio(AsyncSide):
    name = "mqlite-http-aio"
    batch = True
    durability = "WAL, synchronous=NORMAL (mqlite serve's default)"

    def connect(self) -> Any:
        return mqlite.aio.connect(f"http://127.0.0.1:{self.server.port}", self.server.token)

    def open(self, workdir: Path, cell: str) -> None:
        self.queue = f"{cell}-{secrets.token_hex(4)}"

        async def go() -> None:
            self.client = self.connect()
            await self.client.create_queue(self.queue, QueueConfig(lock_duration_ms=60_000))

        self._run(go())

    def close(self) -> None:
        async def go() -> None:
            mode = "receive_and_delete"  # a queue holding messages cannot be deleted
            while await self.client.receive(self.queue, max_messages=256, mode=mode):
                pass
            await self.client.delete_queue(self.queue)
            await self.client.close()

        self._run(go())

    def produce_1(self, n: int, body: bytes) -> list[float]:
        msg = OutMessage(body=body)
        return timed_each(n, lambda: self._run(self.client.send_one(self.queue, msg)))

    def produce_64(self, n: int, body: bytes) -> None:
        batch = [OutMessage(body=body)] * 64

        async def go() -> None:
            for _ in range(n // 64):
                await self.client.send(self.queue, batch)

        self._run(go())

    async def _consume(self, n: int, wait_ms: int) -> None:
        done = 0
        while done < n:
            got = await self.client.receive(self.queue, max_messages=64, wait_ms=wait_ms)
            if not got and not wait_ms:
                raise RuntimeError(f"mqlite-http-aio: empty after {done} of {n}")
            if got:
                pairs = [(m.seq_number, m.lock_token) for m in got]
                await self.client.complete_batch(self.queue, pairs)
            done += len(got)

    def drain(self, n: int) -> None:
        self._run(self._consume(n, 0))

    def produce_p4(self, n: int, body: bytes) -> list[float]:
        """4 tasks sending single messages on one client (a connection each: the pool
        opens one per concurrent exchange); the latency of every send."""
        msg = OutMessage(body=body)
        lat: list[float] = []

        async def producer(count: int) -> None:
            clock = time.perf_counter
            for _ in range(count):
                t0 = clock()
                await self.client.send_one(self.queue, msg)
                lat.append(clock() - t0)

        async def go() -> None:
            await asyncio.gather(*(producer(k) for k in [n // 4 + (i < n % 4) for i in range(4)]))

        self._run(asyncio.wait_for(go(), 300))
        return lat

    def e2e_4x4(self, n: int, body: bytes) -> None:
        """The e2e_4x4 shape as asyncio tasks on one client: 4 producers (single sends)
        and 4 consumers (receive 16, wait 20 ms, CompleteBatch) until n are completed."""
        msg = OutMessage(body=body)
        done = [0]

        async def producer(count: int) -> None:
            for _ in range(count):
                await self.client.send_one(self.queue, msg)

        async def consumer() -> None:
            while done[0] < n:
                got = await self.client.receive(
                    self.queue, max_messages=CONSUMER_MAX, wait_ms=CONSUMER_WAIT_MS
                )
                if got:
                    pairs = [(m.seq_number, m.lock_token) for m in got]
                    await self.client.complete_batch(self.queue, pairs)
                    done[0] += len(got)

        async def go() -> None:
            shares = [n // 4 + (i < n % 4) for i in range(4)]
            await asyncio.gather(*(producer(k) for k in shares), *(consumer() for _ in range(4)))

        self._run(asyncio.wait_for(go(), 300))

    def e2e(self, n: int, body: bytes) -> None:
        msg = OutMessage(body=body)

        async def produce() -> None:
            for _ in range(n):
                await self.client.send_one(self.queue, msg)

        async def go() -> None:
            await asyncio.gather(produce(), self._consume(n, 50))

        self._run(asyncio.wait_for(go(), 300))
