"""``receive`` and ``receive-deferred``: auto-ack never acknowledges output nobody saw.

Auto-ack (the default) refuses up front when stdout cannot deliver; otherwise it claims,
keeps the leases alive with a background renewer, writes and flushes every message, and
only then settles them all with ONE CompleteBatch. If the output fails nothing is
settled: the messages stay locked and are redelivered when their leases lapse.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any

from mqlite import defaults, errors
from mqlite.cli import args as a
from mqlite.cli.context import Client, Context, Failure, UsageError
from mqlite.cli.output import dumps, message_text, ms_text, received_json
from mqlite.clock import SYSTEM_CLOCK
from mqlite.types import Message


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("receive", parents=[common], help="consume (Peek-Lock, auto-ack)")
    p.add_argument("queue")
    p.add_argument("--max", type=a.non_negative, default=1, help="max messages (1)")
    p.add_argument(
        "--wait", type=a.duration, metavar="DURATION", default=0, help="long-poll wait (e.g. 5s)"
    )
    p.add_argument("--no-ack", action="store_true", help="leave locked; print lock tokens")
    p.add_argument("--delete", action="store_true", help="receive-and-delete (at-most-once)")
    p.set_defaults(handler=receive)

    p = sub.add_parser("receive-deferred", parents=[common], help="lock deferred messages")
    p.add_argument("queue")
    p.add_argument("--seq", type=a.seq_list, required=True, help="e.g. 42,57")
    p.set_defaults(handler=receive_deferred)


def receive(ctx: Context) -> int:
    g = ctx.args
    if g.no_ack and g.delete:
        raise UsageError("--no-ack and --delete are mutually exclusive")
    auto_ack = not (g.no_ack or g.delete)
    if auto_ack and ctx.stdout_undeliverable:
        raise Failure(
            "stdout is closed or /dev/null: refusing to auto-complete output nobody can read "
            "(nothing was received; use --delete to drain or --no-ack to keep the locks)"
        )
    mode = "receive_and_delete" if g.delete else "peek_lock"
    client = ctx.client
    msgs: list[Message] = list(
        client.receive(g.queue, max_messages=max(g.max, 1), wait_ms=g.wait, mode=mode)
    )
    if not auto_ack:
        _write(ctx, msgs, with_token=g.no_ack, waited_ms=g.wait)
        return 0
    if not msgs:
        _write(ctx, msgs, with_token=False, waited_ms=g.wait)
        return 0
    renewer = Renewer(client, g.queue, msgs)
    renewer.start()
    try:
        _write(ctx, msgs, with_token=False)
        try:
            results = client.complete_batch(g.queue, [(m.seq_number, m.lock_token) for m in msgs])
        except errors.MQLiteError as exc:
            seqs = ",".join(str(m.seq_number) for m in msgs)
            raise Failure(
                f"output written but CompleteBatch failed ({exc.message}); seqs {seqs} "
                "may be redelivered"
            ) from None
    finally:
        renewer.stop()
    failed = [r.seq_number for r in results if not r.ok]
    if failed:
        raise Failure(
            f"{len(failed)} message(s) printed but not completed (lock lost), will redeliver: "
            + ",".join(str(s) for s in failed)
        )
    return 0


def receive_deferred(ctx: Context) -> int:
    msgs = list(ctx.client.receive_deferred(ctx.args.queue, ctx.args.seq))
    _write(ctx, msgs, with_token=True)
    return 0


def _write(ctx: Context, msgs: Sequence[Message], *, with_token: bool, waited_ms: int = 0) -> None:
    """Write everything and flush; a failure leaves stdout on /dev/null and raises.

    Nothing received prints nothing, for scripts, except on a terminal: a person who
    typed the command is told so (``no messages``) instead of getting a blank prompt.
    """
    try:
        sys.stdout.flush()
        out = sys.stdout.buffer
        if ctx.out.json:
            out.write(dumps([received_json(m, with_token=with_token) for m in msgs]).encode())
            out.write(b"\n")
        elif not msgs and sys.stdout.isatty():
            waited = f" (waited {ms_text(waited_ms)})" if waited_ms else ""
            out.write(f"no messages{waited}\n".encode())
        else:
            for m in msgs:
                out.write(message_text(m, with_token=with_token))
        out.flush()
    except OSError as exc:
        # Keep the interpreter's final flush from failing again on the dead pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        left = ",".join(str(m.seq_number) for m in msgs)
        what = "left locked, will redeliver" if msgs and msgs[0].lock_token else "lost"
        raise Failure(
            f"writing output failed ({exc.strerror or exc}); seqs {left} {what}"
        ) from None


class Renewer:
    """Keeps the claimed leases alive until stopped (RenewBatch, ≤512 per call).

    Renews every 1/3 of the tightest remaining lease (floor 50 ms, never half or more of
    what remains; at once when under 1 ms); retries after 1 s when no deadline is known.
    If the broker has no RenewBatch route it falls back to per-message Renew.
    """

    def __init__(self, client: Client, queue: str, msgs: Sequence[Message]) -> None:
        self._client, self._queue = client, queue
        self._leases = {m.seq_number: (m.lock_token, m.locked_until_ms) for m in msgs}
        self._stop = threading.Event()
        self._single = False
        self._thread = threading.Thread(target=self._run, name="mqlite-renewer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _delay_ms(self) -> float:
        deadlines = [until for _, until in self._leases.values() if until > 0]
        if not deadlines:
            return 1000.0
        remaining = min(deadlines) - SYSTEM_CLOCK.now_ms()
        if remaining < 1:
            return 0.0
        return min(max(50.0, remaining / 3), remaining / 2)

    def _run(self) -> None:
        while self._leases and not self._stop.wait(self._delay_ms() / 1000.0):
            try:
                self._renew()
            except (errors.Unauthenticated, errors.PermissionDenied, errors.Closed):
                return
            except Exception:  # a transient failure: try again in a second
                if self._stop.wait(1.0):
                    return

    def _renew(self) -> None:
        items = [(seq, token) for seq, (token, _) in self._leases.items()]
        for start in range(0, len(items), defaults.RENEW_BATCH_MAX):
            chunk = items[start : start + defaults.RENEW_BATCH_MAX]
            if not self._single:
                try:
                    results = self._client.renew_batch(self._queue, chunk)
                except errors.NotFound as exc:
                    if isinstance(exc, errors.QueueNotFound):
                        raise
                    self._single = True  # an older broker: no RenewBatch route
                else:
                    for r in results:
                        self._settled(r.seq_number, r.ok, r.locked_until_ms)
                    continue
            for seq, token in chunk:
                try:
                    until = self._client.renew(self._queue, seq, token)
                except errors.LockLost:
                    self._settled(seq, False, 0)
                else:
                    self._settled(seq, True, until if isinstance(until, int) else 0)

    def _settled(self, seq: int, ok: bool, until: int) -> None:
        if not ok:
            self._leases.pop(seq, None)
        elif seq in self._leases:
            self._leases[seq] = (self._leases[seq][0], until)
