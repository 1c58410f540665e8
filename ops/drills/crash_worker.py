"""The crash drill's worker process: real work on the drill's file until it is killed.

``python crash_worker.py DB ROLE [KILL_POINT]`` opens the database embedded, arms the kill
point (test-only, ``mqlite.engine.killpoints``) and runs until SIGKILLed, printing on
stdout, AFTER each call returned (so a printed line is an acknowledged commit):

- ``ACK key seq``  an outbox transaction (business row + its message) committed;
- ``PLAIN seq``    a plain send committed (concurrent senders: group-commit batches);
- ``DONE key``     a message consumed: its business effect and its completion committed
  together (the transactional inbox);
- ``LOCKED n``     (role ``locks``) n messages are held under live leases.

Roles: ``mixed`` (outbox + inbox + plain senders + checkpoints), ``locks``.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid

import mqlite
from mqlite.engine import killpoints

QUEUE, PLAIN = "drill-crash", "drill-crash-plain"
BIZ_DDL = (
    "CREATE TABLE IF NOT EXISTS drill_orders "
    "(key TEXT PRIMARY KEY, consumed INTEGER NOT NULL DEFAULT 0) STRICT"
)
_out = threading.Lock()


def say(*words: object) -> None:
    with _out:
        sys.stdout.write(" ".join(map(str, words)) + "\n")
        sys.stdout.flush()


def setup(mq: mqlite.EmbeddedClient) -> None:
    names = {q.name for q in mq.list_queues()}
    for name in (QUEUE, PLAIN):
        if name not in names:
            mq.create_queue(
                name, mqlite.QueueConfig(lock_duration_ms=600_000, max_delivery_count=3)
            )
    with mq.tx() as tx:
        tx.execute(BIZ_DDL)


def outbox(mq: mqlite.EmbeddedClient) -> None:
    while True:
        key = uuid.uuid4().hex
        with mq.tx() as tx:
            tx.execute("INSERT INTO drill_orders (key) VALUES (?)", (key,))
            time.sleep(0.001)  # the transaction stays open a while: random kills land in it
            seq = tx.send_one(QUEUE, mqlite.OutMessage(body=key.encode(), message_id=key))
        say("ACK", key, seq)


def inbox(mq: mqlite.EmbeddedClient) -> None:
    while True:
        for m in mq.receive(QUEUE, max_messages=8, wait_ms=200):
            key = m.body.decode()
            with mq.tx() as tx:
                tx.execute("UPDATE drill_orders SET consumed = consumed + 1 WHERE key = ?", (key,))
                tx.complete(m)
            say("DONE", key)


def plain(mq: mqlite.EmbeddedClient) -> None:
    while True:
        say("PLAIN", mq.send_one(PLAIN, mqlite.OutMessage(body=b"p")))


def checkpoints(mq: mqlite.EmbeddedClient) -> None:
    while True:
        time.sleep(0.05)
        mq.vacuum()  # a WAL checkpoint first (the ``checkpoint`` kill point)


def locks(mq: mqlite.EmbeddedClient, want: int) -> None:
    held = 0
    while held < want:
        got = mq.receive(QUEUE, max_messages=min(256, want - held), wait_ms=0)
        if not got:  # seed the rest through the outbox (each message has its business row)
            keys = [uuid.uuid4().hex for _ in range(want - held)]
            with mq.tx() as tx:
                tx.executemany("INSERT INTO drill_orders (key) VALUES (?)", [(k,) for k in keys])
                out = [mqlite.OutMessage(body=k.encode(), message_id=k) for k in keys]
                seqs = tx.send(QUEUE, out)
            for seq, key in zip(seqs, keys, strict=True):
                say("ACK", key, seq)
            continue
        held += len(got)
    say("LOCKED", held)
    time.sleep(3600)


def main() -> None:
    db, role = sys.argv[1], sys.argv[2]
    mq = mqlite.open_embedded(f"file:{db}", background=False)
    setup(mq)
    if len(sys.argv) > 3 and sys.argv[3]:
        killpoints.arm(killpoints.parse(sys.argv[3]))
    if role == "locks":
        locks(mq, int(sys.argv[4]) if len(sys.argv) > 4 else 300)
        return
    jobs = [outbox, outbox, inbox, plain, plain, plain, checkpoints]
    for job in jobs:
        threading.Thread(target=job, args=(mq,), daemon=True).start()
    time.sleep(3600)


if __name__ == "__main__":
    main()
