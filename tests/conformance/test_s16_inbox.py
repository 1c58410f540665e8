"""Conformance §16: the transactional inbox. Settling a received message inside
``mq.tx()`` commits with the block's business writes and sends, or not at all; a refused
settlement rolls the whole block back; a real process SIGKILLed at random points inside
the block leaves every message processed exactly once in effect (docs/embedded.md,
"The transactional inbox")."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conformance_support import peek_all, send_bodies

from mqlite import DeadLetter, OutMessage, QueueConfig, Receiver, defaults, errors
from mqlite.testing import run_maintenance_once
from waiting import wait_for_receiver

APP_DIR = Path(__file__).resolve().parents[2] / "app"
DEADLINE_S = 60.0
# A consumer draining thousands of messages, each a transaction of several round trips to
# sqld, needs more of a hang guard than one on a local file (it ran out under CI's load).
REMOTE_DRAIN_DEADLINE_S = 180.0


def business(mq: Any) -> list[tuple[int, bytes]]:
    with mq.tx() as tx:
        return [(r[0], r[1]) for r in tx.execute("SELECT src, body FROM done ORDER BY id")]


@pytest.fixture
def inbox(mq: Any, make_queue: Any) -> tuple[Any, str]:
    q = make_queue(lock_duration_ms=30_000, max_delivery_count=100)
    with mq.tx() as tx:
        tx.execute("CREATE TABLE done (id INTEGER PRIMARY KEY, src INTEGER, body BLOB)")
    return mq, q


def test_16_1_business_row_and_completion_commit_together(inbox: tuple[Any, str]) -> None:
    mq, q = inbox
    make_out = mq.create_queue("out").name
    (seq,) = send_bodies(mq, q, [b"order-1"])
    (m,) = mq.receive(q)
    with mq.tx() as tx:
        tx.execute("INSERT INTO done (src, body) VALUES (?, ?)", (m.seq_number, m.body))
        tx.send_one(make_out, OutMessage(b"shipped-1"))
        tx.complete(m)
    assert business(mq) == [(seq, b"order-1")]
    assert peek_all(mq, q) == []
    assert [x.body for x in peek_all(mq, make_out)] == [b"shipped-1"]


def test_16_1_raise_inside_the_block_leaves_the_message_locked_and_no_row(
    inbox: tuple[Any, str],
) -> None:
    mq, q = inbox
    (seq,) = send_bodies(mq, q, [b"order-1"])
    (m,) = mq.receive(q)
    with pytest.raises(RuntimeError), mq.tx() as tx:
        tx.execute("INSERT INTO done (src, body) VALUES (?, ?)", (m.seq_number, m.body))
        tx.complete(m)
        raise RuntimeError("the handler failed after completing")
    assert business(mq) == []
    (still,) = peek_all(mq, q)
    assert (still.seq_number, still.state) == (seq, "locked")
    m.complete()  # the lease is intact: the same consumer can still settle it


def test_16_2_a_settle_with_an_expired_lease_rolls_back_the_business_write(
    inbox: tuple[Any, str], clock: Any
) -> None:
    mq, q = inbox
    send_bodies(mq, q, [b"order-1"])
    (m,) = mq.receive(q)
    clock.advance(30_000)  # the lease has expired (locked_until == now is expired)
    with pytest.raises(errors.LockLost), mq.tx() as tx:
        tx.execute("INSERT INTO done (src, body) VALUES (?, ?)", (m.seq_number, m.body))
        tx.complete(m)
    assert business(mq) == []
    run_maintenance_once(mq)
    (again,) = mq.receive(q)
    assert (again.seq_number, again.delivery_count) == (m.seq_number, 2)


def test_16_2_a_caught_lock_lost_still_rolls_back_the_whole_block(
    inbox: tuple[Any, str],
) -> None:
    mq, q = inbox
    send_bodies(mq, q, [b"a"])
    (m,) = mq.receive(q)
    forged = dataclasses.replace(m, lock_token="f" * 32)
    with pytest.raises(errors.LockLost), mq.tx() as tx:
        tx.execute("INSERT INTO done (src, body) VALUES (1, x'00')")
        with contextlib.suppress(errors.LockLost):  # swallowed by the caller ...
            tx.complete(forged)  # a foreign lease: the block still must not commit
    assert business(mq) == []
    assert peek_all(mq, q)[0].state == "locked"


def test_16_3_a_committed_settlement_replays_from_its_receipt(inbox: tuple[Any, str]) -> None:
    """A retry after a crash that lost the answer (not the commit) is recognised."""
    mq, q = inbox
    send_bodies(mq, q, [b"a"])
    (m,) = mq.receive(q)
    with mq.tx() as tx:
        tx.complete(m)
    with mq.tx() as tx:  # the same request again: its receipt says it already happened
        tx.complete(m)
    with pytest.raises(errors.LockLost), mq.tx() as tx:
        tx.abandon(m)  # another verb on the settled lease is refused
    assert peek_all(mq, q) == []


@pytest.mark.parametrize(
    ("verb", "state"),
    [("abandon", "active"), ("reject", "dead_lettered"), ("defer", "deferred")],
)
def test_16_4_other_settlements_take_effect_only_on_commit(
    inbox: tuple[Any, str], verb: str, state: str
) -> None:
    mq, q = inbox
    send_bodies(mq, q, [b"a"])
    (m,) = mq.receive(q)
    with pytest.raises(RuntimeError), mq.tx() as tx:
        getattr(tx, verb)(m)
        raise RuntimeError("roll back")
    assert peek_all(mq, q)[0].state == "locked"
    with mq.tx() as tx:
        getattr(tx, verb)(m)
    assert peek_all(mq, q)[0].state == state


def test_16_4_complete_batch_in_a_transaction_is_all_or_nothing(inbox: tuple[Any, str]) -> None:
    mq, q = inbox
    send_bodies(mq, q, [b"a", b"b"])
    a, b = mq.receive(q, max_messages=2)
    foreign = dataclasses.replace(b, lock_token="f" * 32)  # a lease this consumer lacks
    with pytest.raises(errors.LockLost), mq.tx() as tx:
        tx.complete_batch([a, foreign])
    assert [x.state for x in peek_all(mq, q)] == ["locked", "locked"]  # a was not completed


def test_16_5_transactional_receiver_completes_with_the_handlers_writes(
    inbox: tuple[Any, str],
) -> None:
    mq, q = inbox
    out = mq.create_queue("out").name
    seqs = send_bodies(mq, q, [b"ok", b"boom", b"poison"])
    seen: list[bytes] = []

    def handler(m: Any, tx: Any) -> None:
        tx.execute("INSERT INTO done (src, body) VALUES (?, ?)", (m.seq_number, m.body))
        tx.send_one(out, OutMessage(b"derived-" + m.body))
        seen.append(m.body)
        if m.body == b"boom":
            raise RuntimeError("transient")
        if m.body == b"poison":
            raise DeadLetter("BadInput", "cannot parse")

    r = Receiver(mq, q, handler, transactional=True, wait_ms=50, on_error=lambda e, m: None)
    with r:
        wait_for_receiver(
            r, lambda st: st.dead_lettered >= 1 and st.completed >= 1, "ok and poison", DEADLINE_S
        )
    assert business(mq) == [(seqs[0], b"ok")]  # boom's and poison's writes rolled back
    assert [x.body for x in peek_all(mq, out)] == [b"derived-ok"]
    poison = [x for x in peek_all(mq, q) if x.seq_number == seqs[2]]
    assert poison and poison[0].state == "dead_lettered"
    assert poison[0].dead_letter_reason == "BadInput"


def test_16_5_the_transactional_mode_needs_the_embedded_client() -> None:
    import mqlite

    remote = mqlite.connect("http://127.0.0.1:9", "t")
    with pytest.raises(TypeError, match="embedded client"):
        Receiver(remote, "q", lambda m, tx: None, transactional=True)
    remote.close()


# -- real processes killed inside the block --------------------------------------------

CHILD = r"""
import random, sys, time
import mqlite
from mqlite import OutMessage, Receiver
from mqlite.clock import SystemClock
dsn, stages, offset_ms = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])

class Later(SystemClock):  # past the leases of the children killed before this one
    def now_ms(self):
        return super().now_ms() + offset_ms

mq = mqlite.open_embedded(dsn, clock=Later(), background=False)
rng = random.Random()

def stage(src, dst):
    def handler(m, tx):
        tx.execute("INSERT INTO done (stage, src_body) VALUES (?, ?)", (src, m.body))
        time.sleep(rng.random() * 0.002)  # widen the window: kills land inside the block
        if dst:
            tx.send_one(dst, OutMessage(body=m.body))
    return handler

receivers = []
for i, src in enumerate(stages):
    dst = stages[i + 1] if i + 1 < len(stages) else ""
    receivers.append(Receiver(mq, src, stage(src, dst), transactional=True, wait_ms=20).start())
print("READY", flush=True)
while any(mq.stats(q).total for q in stages):
    time.sleep(0.02)
print("DRAINED", flush=True)
for r in receivers:
    r.stop()
mq.close()
"""


def run_child(
    script: Path, dsn: str, stages: list[str], kill_after_s: float | None, offset_ms: int = 0
) -> bool:
    """Run the consumer (its wall clock ``offset_ms`` ahead); SIGKILL it after
    ``kill_after_s`` (None: let it drain). True when it drained everything."""
    env = {**os.environ, "PYTHONPATH": str(APP_DIR)}
    out, err = script.with_suffix(".out"), script.with_suffix(".err")
    deadline_s = REMOTE_DRAIN_DEADLINE_S if dsn.startswith("http") else DEADLINE_S
    with out.open("w") as fo, err.open("w") as fe:
        proc = subprocess.Popen(
            [sys.executable, str(script), dsn, ",".join(stages), str(offset_ms)],
            stdout=fo,
            stderr=fe,
            stdin=subprocess.DEVNULL,
            env=env,
        )
        try:
            proc.wait(timeout=deadline_s if kill_after_s is None else kill_after_s)
        except subprocess.TimeoutExpired:
            if kill_after_s is None:
                raise
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait(timeout=deadline_s)
    if kill_after_s is None:
        assert proc.returncode == 0, err.read_text()
    return proc.returncode == 0 and "DRAINED" in out.read_text()


def seed(open_mq: Any, stages: list[str], n: int) -> list[bytes]:
    mq = open_mq()
    for q in stages:
        mq.create_queue(q, QueueConfig(lock_duration_ms=60_000, max_delivery_count=1000))
    with mq.tx() as tx:
        tx.execute("CREATE TABLE done (id INTEGER PRIMARY KEY, stage TEXT, src_body BLOB)")
    bodies = [b"m-%04d" % i for i in range(n)]
    mq.send(stages[0], [OutMessage(body=b) for b in bodies])
    mq.close()
    return bodies


def kill_cycles(script: Path, dsn: str, stages: list[str], cycles: int, refill: Any = None) -> int:
    """SIGKILL the consumer at random moments ``cycles`` times, then let it drain. A child
    that drained before its kill left nothing to interrupt: ``refill()`` (if given) sends
    more input so the cycles go on however fast the machine is. A killed consumer leaves
    its lease on a remote store (engine/lease.py): each next one runs one lease later on
    the wall clock, as a restart after the expiry would."""
    rng = random.Random(16)
    killed = 0
    while killed < cycles:
        later = killed * defaults.LEASE_TTL_MS
        if run_child(script, dsn, stages, kill_after_s=rng.uniform(0.3, 0.7), offset_ms=later):
            if refill is None:
                break
            refill()
            continue
        killed += 1
    later = killed * defaults.LEASE_TTL_MS
    assert run_child(script, dsn, stages, kill_after_s=None, offset_ms=later)
    return killed


def done_rows(open_mq: Any) -> list[tuple[str, bytes]]:
    mq = open_mq()
    with mq.tx() as tx:
        rows = [(r[0], r[1]) for r in tx.execute("SELECT stage, src_body FROM done")]
    stats = {q: mq.stats(q).total for q in {s for s, _ in rows}}
    mq.close()
    assert all(v == 0 for v in stats.values()), stats  # nothing pending anywhere
    return rows


def test_16_6_sigkill_inside_the_block_processes_every_message_exactly_once(
    tmp_path: Path, dsn: str, open_mq: Any
) -> None:
    script = tmp_path / "inbox_child.py"
    script.write_text(CHILD)
    # Enough input that the kills land mid-stream: on a file the consumer drains thousands
    # a second; on sqld (a few round trips a message) 600 outlast the 30 kills, and the
    # 3,000 seeded before left some 2,500 to the final drain, 139 s on a loaded CI machine
    # (issue 25). A consumer that drains early gets ``refill()``: the cycles go on anyway.
    batch = 600 if dsn.startswith("http") else 3000
    bodies = seed(open_mq, ["in"], batch)

    def refill() -> None:
        more = [b"m-%04d" % i for i in range(len(bodies), len(bodies) + batch // 3)]
        mq = open_mq()
        mq.send("in", [OutMessage(body=b) for b in more])
        mq.close()
        bodies.extend(more)

    killed = kill_cycles(script, dsn, ["in"], cycles=30, refill=refill)
    assert killed >= 30
    rows = done_rows(open_mq)
    assert Counter(b for _, b in rows) == Counter(bodies)  # each row exactly once, all there


def test_16_6_a_chain_of_three_queues_under_kills_yields_one_output_per_input(
    tmp_path: Path, dsn: str, open_mq: Any
) -> None:
    script = tmp_path / "inbox_child.py"
    script.write_text(CHILD)
    stages = ["q1", "q2", "q3"]
    bodies = seed(open_mq, stages, 150)
    kill_cycles(script, dsn, stages, cycles=15)
    rows = done_rows(open_mq)
    per_stage = Counter(s for s, _ in rows)
    assert per_stage == {q: len(bodies) for q in stages}
    for q in stages:  # each stage consumed each input exactly once and produced one output
        assert Counter(b for s, b in rows if s == q) == Counter(bodies)
