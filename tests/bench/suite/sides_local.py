"""The systems that run inside the benchmark's own process: mqlite's embedded engine, raw
sqlite3 statements (the floor), and the Python SQLite queue libraries a user might pick
instead (huey's SqliteStorage, persist-queue's SQLiteAckQueue, litequeue), plus mqlite
over HTTP through its own SDK (the broker is a separate process; the client is here).

Every SQLite-based system runs WAL with ``synchronous=NORMAL`` unless its name says FULL:
huey and persist-queue default to SQLite's FULL, so the suite sets NORMAL on their
connection for the comparison at equal durability (litequeue sets NORMAL itself).
"""

from __future__ import annotations

import secrets
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import workloads
from side import IDLE_S, ServerSide, Side, pair, timed_each

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # engine_bench.py

import engine_bench

import mqlite
from mqlite import OrderingMode, OutMessage, QueueConfig

Q = "bench"
MANY = ("e2e_4x4", "sessions_64g", "longpoll")  # the workloads.py scenarios, mqlite only


def _config(cell: str) -> QueueConfig:
    """sessions_64g runs on a group_fifo queue; every other cell on a standard one."""
    mode = OrderingMode.GROUP_FIFO if cell == "sessions-64g" else OrderingMode.STANDARD
    return QueueConfig(lock_duration_ms=60_000, ordering_mode=mode)


class ManyMixin:
    """The workloads.py scenarios for a side with ``queue`` and ``client_for()``."""

    queue: str

    def client_for(self) -> Any:
        raise NotImplementedError

    def e2e_4x4(self, n: int, body: bytes) -> None:
        workloads.many(self.client_for, self.queue, n, body)

    def sessions_64g(self, n: int, body: bytes) -> None:
        workloads.many(self.client_for, self.queue, n, body, groups=64)

    def longpoll(self, n: int, body: bytes) -> list[float]:
        return workloads.longpoll(self.client_for, self.queue, n)

    def receiver_4x4(self, n: int, body: bytes) -> None:
        workloads.receivers(self.client_for, self.queue, n, body)


PROPS = {f"p{i}": f"value-{i}" for i in range(6)}  # the original's props_* scenarios
META = {"message_id": "m-1", "subject": "orders", "correlation_id": "c-1",
        "content_type": "application/json"}  # fmt: skip


class MqliteEmbedded(ManyMixin, Side):
    batch = True
    queue = Q

    def __init__(self, sync: str = "NORMAL", props: bool = False) -> None:
        self.sync, self.props = sync, props
        self.name = "mqlite" + ("" if sync == "NORMAL" else f"-{sync.lower()}")
        self.name += "-props" if props else ""
        self.durability = f"WAL, synchronous={sync}"
        self.produce_only = sync != "NORMAL" or props

    def open(self, workdir: Path, cell: str) -> None:
        self.dir = workdir
        self.mq = mqlite.open_embedded(f"file:{workdir}/mq.db", background=False, sync=self.sync)
        self.mq.create_queue(Q, _config(cell))

    def client_for(self) -> Any:
        return self.mq  # one engine, shared by every thread (it serializes its writer)

    def close(self) -> None:
        self.mq.close()

    def data_paths(self) -> list[Path]:
        return [self.dir]

    def _msg(self, body: bytes) -> OutMessage:
        if self.props:
            return OutMessage(body=body, properties=PROPS, **META)
        return OutMessage(body=body)

    def produce_1(self, n: int, body: bytes) -> list[float]:
        msg = self._msg(body)
        return timed_each(n, lambda: self.mq.send_one(Q, msg))

    def produce_64(self, n: int, body: bytes) -> None:
        self.produce_batch(n, body, 64)

    def produce_batch(self, n: int, body: bytes, size: int) -> None:
        batch = [self._msg(body)] * size
        for _ in range(n // size):
            self.mq.send(Q, batch)

    def produce_p4(self, n: int, body: bytes) -> list[float]:
        msg = self._msg(body)
        return workloads.producers(lambda: lambda: self.mq.send_one(Q, msg), n)

    def drain(self, n: int) -> None:
        done = 0
        while done < n:
            got = self.mq.receive(Q, max_messages=64)
            if not got:
                raise RuntimeError(f"mqlite: queue empty after {done} of {n}")
            results = self.mq.complete_batch(Q, [(m.seq_number, m.lock_token) for m in got])
            assert all(r.ok for r in results)
            done += len(got)

    def e2e(self, n: int, body: bytes) -> None:
        def consume_some() -> int:
            got = self.mq.receive(Q, max_messages=64, wait_ms=50)
            if got:
                self.mq.complete_batch(Q, [(m.seq_number, m.lock_token) for m in got])
            return len(got)

        pair(n, lambda: self.produce_1(n, body), consume_some)


class RawSqlite(Side):
    """The engine's own statements on a database built from its schema.sql, no engine."""

    name = "sqlite3"
    batch = True

    def __init__(self, sync: str = "NORMAL") -> None:
        self.sync = sync
        self.name = "sqlite3" + ("" if sync == "NORMAL" else f"-{sync.lower()}")
        self.durability = f"WAL, synchronous={sync}"
        self.produce_only = sync != "NORMAL"

    def open(self, workdir: Path, cell: str) -> None:
        self.dir = workdir
        self.raw = engine_bench.Raw(workdir / "raw.db")
        self.con = self.raw.con
        self.con.execute(f"PRAGMA synchronous={self.sync}")
        self.extra: list[sqlite3.Connection] = []

    def close(self) -> None:
        for con in self.extra:
            con.close()
        self.raw.close()

    def data_paths(self) -> list[Path]:
        return [self.dir]

    def _one(self, body: bytes) -> None:
        t = engine_bench.now_ms()
        self.con.execute("BEGIN IMMEDIATE")
        self.con.execute(engine_bench.INSERT_SQL, (Q, t, t, body))
        self.con.execute("COMMIT")

    def produce_1(self, n: int, body: bytes) -> list[float]:
        return timed_each(n, lambda: self._one(body))

    def produce_64(self, n: int, body: bytes) -> None:
        self.produce_batch(n, body, 64)

    def produce_batch(self, n: int, body: bytes, size: int) -> None:
        for _ in range(n // size):
            t = engine_bench.now_ms()
            self.con.execute("BEGIN IMMEDIATE")
            self.con.executemany(engine_bench.INSERT_SQL, [(Q, t, t, body)] * size)
            self.con.execute("COMMIT")

    def _connect(self) -> sqlite3.Connection:
        """Another connection to the same file, as another producer thread would open."""
        con = sqlite3.connect(str(self.dir / "raw.db"), isolation_level=None,
                              check_same_thread=False)  # fmt: skip
        for pragma in ("busy_timeout=5000", f"synchronous={self.sync}"):
            con.execute(f"PRAGMA {pragma}")
        self.extra.append(con)
        return con

    def produce_p4(self, n: int, body: bytes) -> list[float]:
        def send_for() -> Any:
            con = self._connect()

            def send() -> None:
                t = engine_bench.now_ms()
                con.execute("BEGIN IMMEDIATE")
                con.execute(engine_bench.INSERT_SQL, (Q, t, t, body))
                con.execute("COMMIT")

            return send

        return workloads.producers(send_for, n)

    def drain(self, n: int) -> None:
        done = 0
        while done < n:
            pairs = self.raw.claim(64)
            if not pairs:
                raise RuntimeError(f"sqlite3: empty after {done} of {n}")
            self.raw.complete(pairs)
            done += len(pairs)

    def e2e(self, n: int, body: bytes) -> None:
        def produce() -> None:
            con = self._connect()
            for _ in range(n):
                t = engine_bench.now_ms()
                con.execute("BEGIN IMMEDIATE")
                con.execute(engine_bench.INSERT_SQL, (Q, t, t, body))
                con.execute("COMMIT")

        def consume_some() -> int:
            pairs = self.raw.claim(64)
            if pairs:
                self.raw.complete(pairs)
            else:
                time.sleep(IDLE_S)
            return len(pairs)

        pair(n, produce, consume_some)


class Huey(Side):
    """huey's SqliteStorage: the storage layer under its task queue (enqueue / dequeue;
    a dequeue deletes the row in the same transaction, so it is an at-most-once get)."""

    name = "huey"
    batch = False
    durability = "WAL, synchronous=NORMAL (set by the suite); dequeue deletes (no ack)"

    def open(self, workdir: Path, cell: str) -> None:
        from huey.storage import SqliteStorage

        self.dir = workdir
        self.st = SqliteStorage(name=Q, filename=str(workdir / "huey.db"))
        self.st.conn.execute("PRAGMA synchronous=NORMAL")

    def close(self) -> None:
        self.st.close()

    def data_paths(self) -> list[Path]:
        return [self.dir]

    def produce_1(self, n: int, body: bytes) -> list[float]:
        return timed_each(n, lambda: self.st.enqueue(body))

    def drain(self, n: int) -> None:
        for i in range(n):
            if self.st.dequeue() is None:
                raise RuntimeError(f"huey: empty after {i} of {n}")

    def e2e(self, n: int, body: bytes) -> None:
        def produce() -> None:  # huey's connections are per thread
            self.st.conn.execute("PRAGMA synchronous=NORMAL")
            self.produce_1(n, body)

        def consume_some() -> int:
            if self.st.dequeue() is None:
                time.sleep(IDLE_S)
                return 0
            return 1

        pair(n, produce, consume_some)


class PersistQueue(Side):
    """persist-queue's SQLiteAckQueue: put, get (marks the row unacked), ack (marks it
    acked; acked rows are deleted lazily by the library)."""

    name = "persist-queue"
    batch = False
    durability = "WAL, synchronous=NORMAL (set by the suite); get + ack per message"

    def open(self, workdir: Path, cell: str) -> None:
        import persistqueue

        self.dir = workdir
        # multithreading: the e2e cell's producer shares it (the library then locks).
        self.q = persistqueue.SQLiteAckQueue(
            str(workdir / "pq"), auto_commit=True, multithreading=True
        )
        for con in {id(c): c for c in (self.q._conn, self.q._putter)}.values():
            con.execute("PRAGMA synchronous=NORMAL")

    def close(self) -> None:
        self.q.close()

    def data_paths(self) -> list[Path]:
        return [self.dir]

    def produce_1(self, n: int, body: bytes) -> list[float]:
        return timed_each(n, lambda: self.q.put(body))

    def drain(self, n: int) -> None:
        for _ in range(n):
            item = self.q.get(block=False)
            self.q.ack(item)

    def e2e(self, n: int, body: bytes) -> None:
        import persistqueue

        def consume_some() -> int:
            try:
                item = self.q.get(block=False)
            except persistqueue.Empty:
                time.sleep(IDLE_S)
                return 0
            self.q.ack(item)
            return 1

        pair(n, lambda: self.produce_1(n, body), consume_some)


class LiteQueue(Side):
    """litequeue: put, pop (locks the row), done (marks it done; rows stay until prune)."""

    name = "litequeue"
    batch = False
    durability = "WAL, synchronous=NORMAL (the library's own setting); pop + done"

    def open(self, workdir: Path, cell: str) -> None:
        from litequeue import LiteQueue as LQ

        self.dir = workdir
        self.q = LQ(str(workdir / "lq.db"))

    def close(self) -> None:
        self.q.close()

    def data_paths(self) -> list[Path]:
        return [self.dir]

    def produce_1(self, n: int, body: bytes) -> list[float]:
        text = body.hex()  # litequeue stores text
        return timed_each(n, lambda: self.q.put(text))

    def drain(self, n: int) -> None:
        for i in range(n):
            msg = self.q.pop()
            if msg is None:
                raise RuntimeError(f"litequeue: empty after {i} of {n}")
            self.q.done(msg.message_id)

    def e2e(self, n: int, body: bytes) -> None:
        from litequeue import LiteQueue as LQ

        def produce() -> None:  # its own connection, on its own thread
            q = LQ(str(self.dir / "lq.db"))
            text = body.hex()
            for _ in range(n):
                q.put(text)
            q.close()

        def consume_some() -> int:
            msg = self.q.pop()
            if msg is None:
                time.sleep(IDLE_S)
                return 0
            self.q.done(msg.message_id)
            return 1

        pair(n, produce, consume_some)


class MqliteHttpSdk(ManyMixin, ServerSide):
    """mqlite over HTTP as a user drives it: ``mqlite.connect(...)`` (the sync SDK)
    against the ``mqlite serve`` the runner started."""

    name = "mqlite-http-sdk"
    batch = True
    durability = "WAL, synchronous=NORMAL (mqlite serve's default)"

    def open(self, workdir: Path, cell: str) -> None:
        self.queue = f"{cell}-{secrets.token_hex(4)}"
        self.client = self.client_for()
        self.client.create_queue(self.queue, _config(cell))
        self.extra: list[Any] = []

    def connect(self) -> Any:
        return mqlite.connect(f"http://127.0.0.1:{self.server.port}", self.server.token)

    def client_for(self) -> Any:
        """A new client (its own keep-alive connection) per thread that asks."""
        client = self.connect()
        if hasattr(self, "extra"):
            self.extra.append(client)
        return client

    def close(self) -> None:
        # A queue that holds messages cannot be deleted: empty it first (not measured).
        while self.client.receive(self.queue, max_messages=256, mode="receive_and_delete"):
            pass
        self.client.delete_queue(self.queue)
        for client in [self.client, *self.extra]:
            client.close()

    def produce_1(self, n: int, body: bytes) -> list[float]:
        msg = OutMessage(body=body)
        return timed_each(n, lambda: self.client.send_one(self.queue, msg))

    def produce_64(self, n: int, body: bytes) -> None:
        self.produce_batch(n, body, 64)

    def produce_batch(self, n: int, body: bytes, size: int) -> None:
        batch = [OutMessage(body=body)] * size
        for _ in range(n // size):
            self.client.send(self.queue, batch)

    def produce_p4(self, n: int, body: bytes) -> list[float]:
        msg = OutMessage(body=body)

        def send_for() -> Any:
            client = self.client_for()  # its own connection per producer thread
            return lambda: client.send_one(self.queue, msg)

        return workloads.producers(send_for, n)

    def drain(self, n: int) -> None:
        done, deadline = 0, time.monotonic() + 300
        while done < n and time.monotonic() < deadline:
            got = self.client.receive(self.queue, max_messages=256)
            if got:
                pairs = [(m.seq_number, m.lock_token) for m in got]
                self.client.complete_batch(self.queue, pairs)
                done += len(got)
        if done < n:
            raise RuntimeError(f"mqlite-http: drained {done} of {n}")

    def e2e(self, n: int, body: bytes) -> None:
        def produce() -> None:  # its own client (connection), as a separate producer has
            client = self.connect()
            msg = OutMessage(body=body)
            for _ in range(n):
                client.send_one(self.queue, msg)
            client.close()

        def consume_some() -> int:
            got = self.client.receive(self.queue, max_messages=64, wait_ms=50)
            if got:
                self.client.complete_batch(self.queue, [(m.seq_number, m.lock_token) for m in got])
            return len(got)

        pair(n, produce, consume_some)


LOCAL = {
    "mqlite": lambda: MqliteEmbedded(),
    "mqlite-full": lambda: MqliteEmbedded("FULL"),
    "mqlite-props": lambda: MqliteEmbedded(props=True),
    "sqlite3": lambda: RawSqlite(),
    "sqlite3-full": lambda: RawSqlite("FULL"),
    "huey": Huey,
    "persist-queue": PersistQueue,
    "litequeue": LiteQueue,
}
# The import each library side needs (absent: reported "not installed", not skipped silently).
NEEDS_MODULE = {"huey": "huey", "persist-queue": "persistqueue", "litequeue": "litequeue"}
