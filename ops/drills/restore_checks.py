"""What a restored broker must show for the restore drill's populated source (over HTTP,
plus the outbox table read from the file)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import drillkit
import restore_populate as pop
from crash_http import peek_all

import mqlite


def run(report: drillkit.Report, client: mqlite.HttpClient, db: Path, exp: pop.Expected) -> None:
    stored = {m.seq_number: m for m in peek_all(client, pop.Q)}
    wrong_identity = [
        seq
        for seq, (mid, sha, _) in exp.messages.items()
        if seq not in stored or stored[seq].message_id != mid or pop.digest(stored[seq].body) != sha
    ]
    report.check(
        "every message identity and body hash",
        not wrong_identity,
        f"{len(wrong_identity)} of {len(exp.messages)} missing or different"
        + (f", e.g. seq {wrong_identity[:3]}" if wrong_identity else ""),
    )
    extra = sorted(set(stored) - set(exp.messages))
    report.check("no message the source did not hold", not extra, f"{len(extra)} extra")
    wrong_state = [
        seq
        for seq, (_, _, state) in exp.messages.items()
        if seq in stored and stored[seq].state != state
    ]
    report.check(
        "every state (active, deferred, scheduled, dead-lettered) as in the source",
        not wrong_state,
        f"{len(wrong_state)} in another state"
        + (f", e.g. seq {wrong_state[0]} is {stored[wrong_state[0]].state}" if wrong_state else ""),
    )
    to_active = [
        s
        for s in exp.recovered_active
        if stored.get(s) is None or stored[s].state != "active" or stored[s].delivery_count != 1
    ]
    to_dlq = [
        s
        for s in exp.recovered_dlq
        if stored.get(s) is None
        or stored[s].state != "dead_lettered"
        or stored[s].dead_letter_reason != "MaxDeliveryCountExceeded"
    ]
    report.check(
        "orphaned locks recovered: to active below the bound, to the DLQ at it",
        not to_active and not to_dlq,
        f"{len(exp.recovered_active) - len(to_active)} active, "
        f"{len(exp.recovered_dlq) - len(to_dlq)} dead-lettered (MaxDeliveryCountExceeded); "
        f"{len(to_active) + len(to_dlq)} wrong",
    )
    reasons = {
        stored[s].dead_letter_reason
        for s, v in exp.messages.items()
        if v[0].startswith("dead-") and s in stored
    }
    report.check("dead-letter reasons kept", reasons == {"drill-poison"}, f"{sorted(reasons)}")
    seq, token = exp.receipt
    try:
        client.complete(pop.Q, seq, token)
        receipt = "the completion replays from its receipt"
    except mqlite.errors.MQLiteError as exc:
        receipt = ""
        detail = f"seq {seq}: {exc}"
    report.check("settlement receipts replay", bool(receipt), receipt or detail)
    attempt_id, seqs = exp.attempt
    replay = [m.seq_number for m in client.receive(pop.Q, max_messages=2, attempt_id=attempt_id)]
    report.check("receive attempts replay", sorted(replay) == sorted(seqs), f"{replay} vs {seqs}")
    mid, dseq = exp.dedup
    again = client.send_one(pop.DEDUP_Q, mqlite.OutMessage(body=b"once", message_id=mid))
    report.check(
        "dedup entries hold (a resend returns the first seq)", again == dseq, f"{again} vs {dseq}"
    )
    subs = {s.name: s.expr for s in client.list_subscriptions() if s.topic == pop.TOPIC}
    report.check("topics with their filters", subs == exp.subscriptions, f"{subs}")
    keys = {k.id for k in client.list_keys(limit=100)[0]}
    report.check("managed keys", exp.keys <= keys, f"{len(exp.keys & keys)} of {len(exp.keys)}")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        invoices = [r[0] for r in conn.execute("SELECT msg FROM drill_invoices")]
    finally:
        conn.close()
    ids = {m.message_id for m in stored.values()}
    report.check(
        "the outbox business table, each row with its message",
        len(invoices) == exp.invoices and all(i in ids for i in invoices),
        f"{len(invoices)} rows of {exp.invoices}",
    )
