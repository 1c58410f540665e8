"""The restore drill's source database: every state a snapshot must carry, and what the
restored copy must show for it (``Expected``).

Leases are long (10 min) and schedules a day out, so at snapshot time the locks are live
and the scheduled messages are still scheduled; the queue's delivery bound is 2, so one
set of leased messages is at its limit (recovered to the DLQ) and one below it
(recovered to active).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field

import mqlite

Q, DEDUP_Q, TOPIC = "drill-restore", "drill-restore-dedup", "drill-restore-topic"
SUBS = {"drill-restore-sub-a": "subject == 'a'", "drill-restore-sub-all": ""}
BIZ_DDL = "CREATE TABLE drill_invoices (id INTEGER PRIMARY KEY, msg TEXT NOT NULL) STRICT"
LEASE_MS, DAY_MS = 600_000, 86_400_000


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


@dataclass
class Expected:
    """What the restored database must hold (seq -> identity, body hash, state)."""

    messages: dict[int, tuple[str, str, str]] = field(default_factory=dict)
    recovered_active: set[int] = field(default_factory=set)  # leased below the bound
    recovered_dlq: set[int] = field(default_factory=set)  # leased at the bound
    receipt: tuple[int, str] = (0, "")  # a completion whose receipt must replay
    attempt: tuple[str, list[int]] = ("", [])  # a receive attempt id and its seqs
    dedup: tuple[str, int] = ("", 0)  # message id -> seq in the dedup queue
    invoices: int = 0
    keys: set[str] = field(default_factory=set)
    subscriptions: dict[str, str] = field(default_factory=dict)


def out(label: str, i: int, **kw: str) -> mqlite.OutMessage:
    body = secrets.token_bytes(64 + i % 512)
    return mqlite.OutMessage(
        body=body, message_id=f"{label}-{i}", properties={"drill": label}, **kw
    )


def claim(mq: mqlite.EmbeddedClient, n: int) -> list[mqlite.Message]:
    """``n`` messages (a Receive returns at most 256)."""
    got: list[mqlite.Message] = []
    while len(got) < n and (page := mq.receive(Q, max_messages=min(256, n - len(got)))):
        got += page
    return got


def populate(mq: mqlite.EmbeddedClient, n: int) -> Expected:
    """``n`` messages per state (and as many outbox rows)."""
    exp = Expected()
    mq.create_queue(Q, mqlite.QueueConfig(lock_duration_ms=LEASE_MS, max_delivery_count=2))
    mq.create_queue(DEDUP_Q, mqlite.QueueConfig(dedup_window_ms=DAY_MS))
    for name, expr in SUBS.items():
        mq.subscribe(TOPIC, name, expr)
        exp.subscriptions[name] = expr

    def sent(label: str, state: str, count: int) -> list[int]:
        msgs = [out(label, i) for i in range(count)]
        seqs = mq.send(Q, msgs)
        for seq, m in zip(seqs, msgs, strict=True):
            exp.messages[seq] = (m.message_id, digest(m.body), state)
        return seqs

    # Claims take the oldest active first, so each state is built before the next is sent.
    sent("deferred", "deferred", n)
    for m in claim(mq, n):
        mq.defer(Q, m.seq_number, m.lock_token)
    sent("dead", "dead_lettered", n)
    for m in claim(mq, n):
        mq.reject(Q, m.seq_number, m.lock_token, "drill-poison", "rejected by the restore drill")
    sent("at-bound", "dead_lettered", n)
    for m in claim(mq, n):
        mq.abandon(Q, m.seq_number, m.lock_token)
    exp.recovered_dlq = {m.seq_number for m in claim(mq, n)}  # 2nd delivery
    sent("leased", "active", n)
    exp.recovered_active = {m.seq_number for m in claim(mq, n)}
    done = sent("completed", "completed", 1)
    m = mq.receive(Q, max_messages=1)[0]
    assert m.seq_number == done[0]
    mq.complete(Q, m.seq_number, m.lock_token)
    exp.receipt = (m.seq_number, m.lock_token)
    exp.messages.pop(m.seq_number)  # completed: gone
    attempt_id = "drill-restore-attempt"
    attempt_seqs = sent("attempt", "active", 2)
    got = mq.receive(Q, max_messages=2, attempt_id=attempt_id)
    exp.attempt = (attempt_id, [g.seq_number for g in got])
    for g in got:  # released again, so the attempt's replay is all that remains of it
        mq.abandon(Q, g.seq_number, g.lock_token)
    assert sorted(exp.attempt[1]) == sorted(attempt_seqs)
    sent("active", "active", n)
    msgs = [out("scheduled", i) for i in range(n)]
    for seq, msg in zip(mq.schedule(Q, msgs, mq.clock.now_ms() + DAY_MS), msgs, strict=True):
        exp.messages[seq] = (msg.message_id, digest(msg.body), "scheduled")
    dedup_seq = mq.send_one(DEDUP_Q, mqlite.OutMessage(body=b"once", message_id="drill-dedup"))
    exp.dedup = ("drill-dedup", dedup_seq)
    with mq.tx() as tx:  # the outbox: business rows and their messages, one transaction
        tx.execute(BIZ_DDL)
        for i in range(n):
            msg = out("invoice", i)
            seq = tx.send_one(Q, msg)
            tx.execute("INSERT INTO drill_invoices (id, msg) VALUES (?, ?)", (i, msg.message_id))
            exp.messages[seq] = (msg.message_id, digest(msg.body), "active")
    exp.invoices = n
    for i in range(2):
        key, _ = mq.create_key(mqlite.generate_key_id(), f"drill-key-{i}", ["send"])
        exp.keys.add(key.id)
    return exp
