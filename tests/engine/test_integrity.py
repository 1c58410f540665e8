"""Message integrity under concurrent consumers (conformance §3.4, §1.2, §14.1, §14.3-4).

Port of the original's TestMessageIntegrity (original-behaviour.md §11): N messages
(``MQLITE_INTEGRITY_N``, default 1000) with random 64-255 byte bodies from a PRNG seeded
with 42, each carrying properties ``seq`` and ``sha256``; queue lock 600 s and max delivery
1e6; four consumer threads Receive(max 64, wait 0) concurrently and abandon ~3% of the
healthy messages. Asserts: zero corrupt bodies, every seq completed exactly once, no
message held by two consumers at once (the lease never expires during the run), and an
empty queue at the end.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, errors
from mqlite.clock import FakeClock

N = int(os.environ.get("MQLITE_INTEGRITY_N", "1000"))
CONSUMERS = 4
ABANDON_RATE = 0.03
SEND_BATCH = 250
DEADLINE_S = max(120.0, N / 200.0)
Q = "integrity"


@pytest.mark.parametrize("storage", ["memory", "file"])
def test_message_integrity(tmp_path: Path, storage: str) -> None:
    dsn = ":memory:" if storage == "memory" else "file:" + str(tmp_path / "integrity.db")
    mq = mqlite.open_embedded(dsn, clock=FakeClock(), background=False)
    try:
        _run(mq)
    finally:
        mq.close()


def _run(mq: Any) -> None:
    mq.create_queue(Q, QueueConfig(lock_duration_ms=600_000, max_delivery_count=1_000_000))

    rng = random.Random(42)
    bodies: dict[int, bytes] = {}
    index_of_seq: dict[int, int] = {}
    batch: list[OutMessage] = []
    for i in range(1, N + 1):
        body = rng.randbytes(rng.randint(64, 255))
        bodies[i] = body
        props = {"seq": str(i), "sha256": hashlib.sha256(body).hexdigest()}
        batch.append(OutMessage(body=body, properties=props))
        if len(batch) == SEND_BATCH or i == N:
            first = i - len(batch) + 1
            seqs = mq.send(Q, batch)
            assert len(seqs) == len(batch) and all(s > 0 for s in seqs)
            index_of_seq.update({s: first + k for k, s in enumerate(seqs)})
            batch = []
    assert len(set(index_of_seq)) == N
    assert mq.stats(Q).active == N

    # One condition guards the shared tallies; ``progress`` counts consumer rounds that
    # settled something, so a consumer that found the queue empty waits for the next one
    # (an abandon makes a message available again; a completion may be the last).
    guard = threading.Condition()
    progress = [0]
    completed: Counter[int] = Counter()
    corrupt: list[str] = []
    shared: list[str] = []  # messages delivered while another consumer held them
    inflight: dict[int, int] = {}
    failures: list[BaseException] = []
    tally = {"received": 0, "abandoned": 0}
    stop = threading.Event()
    deadline = time.monotonic() + DEADLINE_S

    def check(m: Any) -> int | None:
        """Return the message's index if it is intact; record corruption otherwise."""
        idx = index_of_seq.get(m.seq_number)
        prop = m.properties.get("seq", "")
        digest = hashlib.sha256(m.body).hexdigest()
        if (
            idx is None
            or prop != str(idx)
            or digest != m.properties.get("sha256")
            or m.body != bodies[idx]
        ):
            corrupt.append(f"seq_number={m.seq_number} seq={prop!r} len={len(m.body)}")
            return None
        return idx

    def moved(since: int) -> Callable[[], bool]:
        return lambda: progress[0] != since or stop.is_set()

    def consumer(worker: int) -> None:
        local = random.Random(42 + 1_000 * (worker + 1))
        use_batch = worker % 2 == 1
        try:
            while not stop.is_set():
                if time.monotonic() > deadline:
                    raise AssertionError(f"drain did not finish in {DEADLINE_S:.0f} s")
                with guard:
                    seen = progress[0]
                msgs = mq.receive(Q, max_messages=64, wait_ms=0)
                if not msgs:
                    with guard:
                        if sum(completed.values()) >= N:
                            return
                        # The rest is in flight with other consumers: wait for one to settle.
                        guard.wait_for(
                            moved(seen),
                            max(deadline - time.monotonic(), 0),
                        )
                    continue
                keep = []
                with guard:
                    tally["received"] += len(msgs)
                    for m in msgs:
                        holder = inflight.get(m.seq_number)
                        if holder is not None:
                            shared.append(f"{m.seq_number} held by {holder} and {worker}")
                        inflight[m.seq_number] = worker
                for m in msgs:
                    idx = check(m)
                    if idx is not None and local.random() < ABANDON_RATE:
                        with guard:
                            inflight.pop(m.seq_number, None)
                            tally["abandoned"] += 1
                        m.abandon()
                        continue
                    keep.append(m)
                with guard:
                    for m in keep:
                        inflight.pop(m.seq_number, None)
                done: list[int] = []
                if use_batch:
                    results = mq.complete_batch(Q, [(m.seq_number, m.lock_token) for m in keep])
                    assert [r.seq_number for r in results] == [m.seq_number for m in keep]
                    done = [r.seq_number for r in results if r.ok]
                else:
                    for m in keep:
                        try:
                            m.complete()
                        except errors.LockLost:
                            continue
                        done.append(m.seq_number)
                with guard:
                    for s in done:
                        completed[index_of_seq.get(s, -s)] += 1
                    progress[0] += 1
                    guard.notify_all()
        except BaseException as exc:
            failures.append(exc)
            stop.set()
            with guard:
                guard.notify_all()

    threads = [threading.Thread(target=consumer, args=(w,), daemon=True) for w in range(CONSUMERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S + 30)
    stop.set()
    assert not any(t.is_alive() for t in threads), "a consumer thread hung"
    if failures:
        raise failures[0]

    missing = [i for i in range(1, N + 1) if completed[i] == 0]
    doubled = {i: c for i, c in completed.items() if c > 1}
    unknown = [i for i in completed if i < 1 or i > N]
    assert not corrupt, f"{len(corrupt)} corrupt bodies, e.g. {corrupt[:5]}"
    assert not shared, f"messages delivered to two consumers at once: {shared[:5]}"
    assert not missing, f"{len(missing)} seqs never completed, e.g. {missing[:10]}"
    assert not doubled, f"seqs completed more than once: {dict(list(doubled.items())[:10])}"
    assert not unknown, f"completed unknown seq numbers: {unknown[:10]}"
    stats = mq.stats(Q)
    assert (stats.total, stats.locked, stats.active) == (0, 0, 0), stats
    redelivered = tally["received"] - N
    print(
        f"integrity N={N}: received={tally['received']} abandoned={tally['abandoned']} "
        f"redelivery={100.0 * redelivered / N:.2f}%"
    )
    assert redelivered == tally["abandoned"], "every redelivery must come from an abandon"
