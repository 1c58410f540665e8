"""Conformance §15: crash recovery after process death. A real child process (this
interpreter, the repo's app/ on PYTHONPATH) works on the database and is killed with
SIGKILL; the parent reopens and checks the outbox bijection, that every acknowledged
commit survived, and that orphaned locks were reset. Every wait on a child is bounded."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from conformance_support import peek_all

from mqlite import OutMessage, QueueConfig, defaults
from mqlite.clock import FakeClock

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")

APP_DIR = Path(__file__).resolve().parents[2] / "app"
QUEUE = "crash"
CHILD_DEADLINE_S = 60.0

CHILD = r"""
import itertools
import os
import sys

import mqlite
from mqlite import OutMessage, QueueConfig
from mqlite.clock import FakeClock

role, dsn, start_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
mq = mqlite.open_embedded(dsn, clock=FakeClock(start_ms), background=False)
mq.create_queue("crash", QueueConfig(lock_duration_ms=3_600_000, max_delivery_count=1000))

if role in ("producer", "producer-hold"):
    with mq.tx() as tx:
        tx.execute("CREATE TABLE IF NOT EXISTS orders(nonce TEXT PRIMARY KEY)")
    print("READY", flush=True)
    for i in itertools.count():
        nonce = "%d-%d" % (os.getpid(), i)
        if role == "producer-hold" and i == 40:
            with mq.tx() as tx:
                tx.execute("INSERT INTO orders(nonce) VALUES (?)", (nonce,))
                tx.send_one("crash", OutMessage(body=nonce.encode()))
                print("INTX", nonce, flush=True)
                sys.stdin.readline()  # hold the transaction open until killed
            sys.exit("not killed while holding the transaction")
        with mq.tx() as tx:
            tx.execute("INSERT INTO orders(nonce) VALUES (?)", (nonce,))
            tx.send_one("crash", OutMessage(body=nonce.encode()))
        print("ACK", nonce, flush=True)
elif role == "locker":
    print("READY", flush=True)
    held = 0
    while held < 250:
        for m in mq.receive("crash", max_messages=256, wait_ms=0):
            if m.seq_number % 13 == 0:
                m.abandon()
            else:
                held += 1
        print("HELD", held, flush=True)
    print("LOCKED", held, flush=True)
    sys.stdin.readline()  # hold the locks until killed
    sys.exit("not killed while holding locks")
else:
    sys.exit("unknown role " + role)
"""


class Child:
    """A worker process whose stdout lines are pumped into a queue by a reader thread."""

    def __init__(self, script: Path, role: str, dsn: str, log: Path, start_ms: int) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(APP_DIR), env.get("PYTHONPATH", "")) if p
        )
        self.log = log
        self._stderr = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-u", str(script), role, dsn, str(start_ms)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, predicate, what: str) -> str:
        deadline = time.monotonic() + CHILD_DEADLINE_S
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                pytest.fail(f"child: timed out waiting for {what}; stderr:\n{self.stderr()}")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self.proc.wait(timeout=CHILD_DEADLINE_S)
                pytest.fail(
                    f"child exited ({self.proc.returncode}) before {what}; stderr:\n{self.stderr()}"
                )
            self.seen.append(line)
            if predicate(line):
                return line

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=CHILD_DEADLINE_S)
        self._reader.join(timeout=CHILD_DEADLINE_S)
        while True:  # lines already written before the kill still count
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.seen.append(line)
        self._stderr.close()
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def stderr(self) -> str:
        self._stderr.flush()
        return self.log.read_text()


@pytest.fixture
def child_script(tmp_path: Path) -> Path:
    script = tmp_path / "crash_child.py"
    script.write_text(CHILD)
    return script


def _acks(child: Child) -> list[str]:
    return [line.split()[1] for line in child.seen if line.startswith("ACK ")]


def _orders(mq) -> list[str]:
    with mq.tx() as tx:
        return [row[0] for row in tx.execute("SELECT nonce FROM orders").fetchall()]


def _kill_by_sigkill(child: Child, clock: FakeClock) -> None:
    """SIGKILL, then move the test's clock one lease on: a file's lock went with the
    process, a remote store's lease row stays until it expires (engine/lease.py)."""
    child.kill()
    assert child.proc.returncode == -signal.SIGKILL, (child.proc.returncode, child.stderr())
    clock.advance(defaults.LEASE_TTL_MS)


def test_15_1_outbox_is_atomic_across_sigkill(child_script, dsn, open_mq, tmp_path, clock):
    acked: list[str] = []
    held_back: list[str] = []
    for cycle, (role, after_acks) in enumerate(
        [("producer", 5), ("producer-hold", 0), ("producer", 37), ("producer-hold", 0)]
    ):
        child = Child(child_script, role, dsn, tmp_path / f"producer-{cycle}.log", clock.now_ms())
        child.wait_for(lambda line: line == "READY", "READY")
        if role == "producer":
            count = 0

            def enough(line: str, target: int = after_acks) -> bool:
                nonlocal count
                count += line.startswith("ACK ")
                return count >= target

            child.wait_for(enough, f"{after_acks} ACKs")
        else:
            line = child.wait_for(lambda line: line.startswith("INTX "), "INTX")
            held_back.append(line.split()[1])
        _kill_by_sigkill(child, clock)  # mid-loop: at an arbitrary point of a transaction
        acked.extend(_acks(child))

    mq = open_mq()
    orders = _orders(mq)
    bodies = [m.body.decode() for m in peek_all(mq, QUEUE)]
    assert len(orders) == len(set(orders))
    assert Counter(bodies) == Counter(orders), "orders and messages are not in bijection"
    assert set(acked) <= set(orders), "an acknowledged commit was lost"
    assert not set(held_back) & set(orders), "an uncommitted transaction survived"
    assert mq.stats(QUEUE).total == len(orders)


def test_15_2_reopen_after_sigkill_resets_orphaned_locks(
    child_script, dsn, open_mq, tmp_path, clock
):
    seed = open_mq()
    seed.create_queue(QUEUE, QueueConfig(lock_duration_ms=3_600_000, max_delivery_count=1000))
    for start in range(0, 400, 100):
        seed.send(QUEUE, [OutMessage(body=b"seed-%d" % i) for i in range(start, start + 100)])
    seed.close()

    for cycle in range(3):
        child = Child(child_script, "locker", dsn, tmp_path / f"locker-{cycle}.log", clock.now_ms())
        line = child.wait_for(lambda line: line.startswith("LOCKED "), "≥250 held locks")
        assert int(line.split()[1]) >= 250
        _kill_by_sigkill(child, clock)

        mq = open_mq()
        st = mq.stats(QUEUE)
        assert st.locked == 0
        assert st.total == 400
        assert st.active == 400
        mq.close()

    mq = open_mq()
    drained: list[bytes] = []
    while True:
        got = mq.receive(QUEUE, max_messages=256, mode="receive_and_delete")
        if not got:
            break
        drained.extend(m.body for m in got)
    assert sorted(drained) == sorted(b"seed-%d" % i for i in range(400))


def test_15_3_every_acknowledged_commit_survives(child_script, dsn, open_mq, tmp_path, clock):
    child = Child(child_script, "producer", dsn, tmp_path / "producer.log", clock.now_ms())
    child.wait_for(lambda line: line == "READY", "READY")
    child.wait_for(lambda line: line.startswith("ACK ") and line.endswith("-60"), "61 ACKs")
    _kill_by_sigkill(child, clock)
    acked = _acks(child)
    assert len(acked) >= 61

    mq = open_mq()
    orders = set(_orders(mq))
    bodies = {m.body.decode() for m in peek_all(mq, QUEUE)}
    assert set(acked) <= orders
    assert set(acked) <= bodies
    assert orders == bodies
