"""The network peers, each driven by its usual Python client, on the servers the runner
started (``servers.py`` says how each is configured for durability):

- Redis Streams with redis-py: XADD per message; 64 XADDs in one pipeline (one round
  trip, one reply per entry); XREADGROUP COUNT 64 + XACK of those ids; produce_p4 and
  e2e_4x4 (XREADGROUP COUNT 16 BLOCK 20 + XACK) with 4 threads, a connection each.
- RabbitMQ with aio-pika: durable queue, persistent messages, publisher confirms awaited
  per message, or 64 publishes in flight then all confirms awaited; consume with
  prefetch 64 and a manual ack per message.
- NATS JetStream with nats-py: publish awaiting its PubAck per message, or 64 in flight
  then all acks; a pull consumer fetching 64 and acking each.

Async clients run on one event loop owned by the side, so the runner's timing wraps a
plain call either way.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from pathlib import Path
from typing import Any

import workloads
from side import AsyncSide, ServerSide, Side, pair, timed_each


class RedisStreams(ServerSide):
    batch = True

    def __init__(self, server: Any) -> None:
        super().__init__(server)
        self.name = server.name.replace("redis-aof-", "redis-")
        fsync = server.name.rsplit("-", 1)[1]
        self.durability = f"AOF appendfsync {fsync}, no RDB; XADD acknowledged on reply"

    def open(self, workdir: Path, cell: str) -> None:
        import redis

        self.r = redis.Redis(host="127.0.0.1", port=self.server.port)
        self.key = f"{cell}-{secrets.token_hex(4)}"
        self.r.xgroup_create(self.key, "g", id="0", mkstream=True)

    def close(self) -> None:
        self.r.delete(self.key)
        self.r.close()

    def produce_1(self, n: int, body: bytes) -> list[float]:
        fields = {"b": body}
        return timed_each(n, lambda: self.r.xadd(self.key, fields))

    def produce_64(self, n: int, body: bytes) -> None:
        fields = {"b": body}
        for _ in range(n // 64):
            pipe = self.r.pipeline(transaction=False)
            for _ in range(64):
                pipe.xadd(self.key, fields)
            pipe.execute()

    def drain(self, n: int) -> None:
        done = 0
        while done < n:
            got = self.r.xreadgroup("g", "c", {self.key: ">"}, count=64)
            if not got:
                raise RuntimeError(f"redis: empty after {done} of {n}")
            ids = [entry_id for entry_id, _fields in got[0][1]]
            self.r.xack(self.key, "g", *ids)
            done += len(ids)

    def e2e(self, n: int, body: bytes) -> None:
        import redis

        def produce() -> None:  # its own connection, as a separate producer has
            r = redis.Redis(host="127.0.0.1", port=self.server.port)
            for _ in range(n):
                r.xadd(self.key, {"b": body})
            r.close()

        def consume_some() -> int:
            got = self.r.xreadgroup("g", "c", {self.key: ">"}, count=64, block=50)
            if not got:
                return 0
            ids = [entry_id for entry_id, _fields in got[0][1]]
            self.r.xack(self.key, "g", *ids)
            return len(ids)

        pair(n, produce, consume_some)

    def _conn(self) -> Any:
        import redis

        r = redis.Redis(host="127.0.0.1", port=self.server.port)
        self.extra.append(r)
        return r

    def produce_p4(self, n: int, body: bytes) -> list[float]:
        """4 threads, a connection each, one XADD at a time."""
        self.extra: list[Any] = []

        def send_for() -> Any:
            r, fields = self._conn(), {"b": body}
            return lambda: r.xadd(self.key, fields)

        try:
            return workloads.producers(send_for, n)
        finally:
            for r in self.extra:
                r.close()

    def e2e_4x4(self, n: int, body: bytes) -> None:
        """mqlite's e2e_4x4 shape: 4 producer threads (XADD each) and 4 consumer threads
        (XREADGROUP COUNT 16 BLOCK 20, XACK), a connection each, until n are acked."""
        self.extra = []
        done, lock, errs = [0], threading.Lock(), []

        def producer(count: int) -> None:
            r = self._conn()
            for _ in range(count):
                r.xadd(self.key, {"b": body})

        def consumer(name: str) -> None:
            r = self._conn()
            while True:
                with lock:
                    if done[0] >= n or errs:
                        return
                got = r.xreadgroup("g", name, {self.key: ">"}, count=16, block=20)
                if got:
                    ids = [entry_id for entry_id, _fields in got[0][1]]
                    r.xack(self.key, "g", *ids)
                    with lock:
                        done[0] += len(ids)

        def guard(fn: Any, *a: Any) -> threading.Thread:
            def run() -> None:
                try:
                    fn(*a)
                except BaseException as exc:
                    errs.append(exc)

            return threading.Thread(target=run, daemon=True)

        shares = [n // 4 + (i < n % 4) for i in range(4)]
        threads = [guard(producer, k) for k in shares]
        threads += [guard(consumer, f"c{i}") for i in range(4)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            if errs:
                raise errs[0]
        finally:
            for r in self.extra:
                r.close()


class RabbitMq(AsyncSide):
    name = "rabbitmq"
    batch = True
    durability = "durable classic queue, persistent messages, publisher confirms"

    def open(self, workdir: Path, cell: str) -> None:
        import aio_pika

        async def go() -> None:
            url = f"amqp://guest:guest@127.0.0.1:{self.server.port}/"
            self.conn = await aio_pika.connect(url)
            self.ch = await self.conn.channel(publisher_confirms=True)
            await self.ch.set_qos(prefetch_count=64)
            self.q = await self.ch.declare_queue(f"{cell}-{secrets.token_hex(4)}", durable=True)

        self._run(go())

    def close(self) -> None:
        async def go() -> None:
            await self.q.delete(if_unused=False, if_empty=False)
            await self.conn.close()

        self._run(go())

    def _message(self, body: bytes) -> Any:
        import aio_pika

        return aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT)

    def produce_1(self, n: int, body: bytes) -> list[float]:
        ex, key = self.ch.default_exchange, self.q.name
        publish = lambda: self._run(ex.publish(self._message(body), routing_key=key))  # noqa: E731
        return timed_each(n, publish)

    def produce_64(self, n: int, body: bytes) -> None:
        ex, key = self.ch.default_exchange, self.q.name

        async def go() -> None:
            for _ in range(n // 64):
                await asyncio.gather(
                    *(ex.publish(self._message(body), routing_key=key) for _ in range(64))
                )

        self._run(go())

    def drain(self, n: int) -> None:
        async def go() -> None:
            done = 0
            async with self.q.iterator() as it:
                async for message in it:
                    await message.ack()
                    done += 1
                    if done >= n:
                        break

        self._run(asyncio.wait_for(go(), 300))

    def e2e(self, n: int, body: bytes) -> None:
        """Producer and consumer as two tasks on one loop (one connection, two channels:
        the consumer's channel has no publisher confirms)."""
        ex, key = self.ch.default_exchange, self.q.name

        async def produce() -> None:
            for _ in range(n):
                await ex.publish(self._message(body), routing_key=key)

        async def consume() -> None:
            ch = await self.conn.channel()
            await ch.set_qos(prefetch_count=64)
            q = await ch.get_queue(key)
            done = 0
            async with q.iterator() as it:
                async for message in it:
                    await message.ack()
                    done += 1
                    if done >= n:
                        break
            await ch.close()

        async def go() -> None:
            await asyncio.gather(produce(), consume())

        self._run(asyncio.wait_for(go(), 300))


class NatsJetStream(AsyncSide):
    name = "nats-js"
    batch = True
    durability = "JetStream file storage; PubAck after the write (fsync left to the OS)"

    def open(self, workdir: Path, cell: str) -> None:
        import nats

        self.stream = f"s{secrets.token_hex(4)}"
        self.subject = f"{self.stream}.m"

        async def go() -> None:
            self.nc = await nats.connect(f"nats://127.0.0.1:{self.server.port}")
            self.js = self.nc.jetstream()
            await self.js.add_stream(name=self.stream, subjects=[self.subject])
            self.sub = await self.js.pull_subscribe(self.subject, durable="c")

        self._run(go())

    def close(self) -> None:
        async def go() -> None:
            await self.js.delete_stream(self.stream)
            await self.nc.close()

        self._run(go())

    def produce_1(self, n: int, body: bytes) -> list[float]:
        return timed_each(n, lambda: self._run(self.js.publish(self.subject, body)))

    def produce_64(self, n: int, body: bytes) -> None:
        async def go() -> None:
            for _ in range(n // 64):
                await asyncio.gather(*(self.js.publish(self.subject, body) for _ in range(64)))

        self._run(go())

    def drain(self, n: int) -> None:
        async def go() -> None:
            done = 0
            while done < n:
                msgs = await self.sub.fetch(min(64, n - done), timeout=10)
                for m in msgs:
                    await m.ack()
                done += len(msgs)

        self._run(go())

    def e2e(self, n: int, body: bytes) -> None:
        import nats.errors

        async def produce() -> None:
            for _ in range(n):
                await self.js.publish(self.subject, body)

        async def consume() -> None:
            done = 0
            while done < n:
                try:
                    msgs = await self.sub.fetch(64, timeout=0.05)
                except nats.errors.TimeoutError:
                    continue
                for m in msgs:
                    await m.ack()
                done += len(msgs)

        async def go() -> None:
            await asyncio.gather(produce(), consume())

        self._run(asyncio.wait_for(go(), 300))


def net_side(server: Any) -> Side:
    if server.name.startswith("redis"):
        return RedisStreams(server)
    if server.name == "rabbitmq":
        return RabbitMq(server)
    if server.name == "nats-js":
        return NatsJetStream(server)
    raise KeyError(server.name)
