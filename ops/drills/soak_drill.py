"""The soak drill: consumer processes over HTTP under kills, bounded in time and count.

A producer sends ``--messages`` at ``--rate`` to ONE standard queue, as issue 13 asks:
every other message carries a ``group_id`` (50 groups: FIFO within each, parallel across
them) and the ungrouped half holds the 5 % poison messages (the handler raises: abandoned
with a fixed backoff, dead-lettered at the delivery bound). ``--consumers`` processes
(8 by default; soak_consumer.py: the SDK's Receiver) all receive from that queue; one is
SIGKILLed and restarted every ``--kill-every`` seconds, and the broker is SIGKILLed at a
third of the run and SIGTERMed at two thirds (both restarted on the same file; with
``--image`` the broker is that container, drill_container.py). Loopback only: the
broker is the drill's own, or ``--endpoint`` (token in MQLITE_TOKEN; broker kills are
then skipped).

Checks: nothing left pending; every message completed (gone) or, the poison ones only,
dead-lettered at the bound; no delivery handed out twice (a (seq, delivery count) pair
handled once); the poison backoff respected; within a group, no message handled after a
later one. Figures: throughput, redelivery rate, p50/p99 end-to-end latency, broker RSS
over time (and its growth after warm-up).
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import drill_container
import drillkit
from crash_http import peek_all

import mqlite

CONSUMER = str(Path(__file__).with_name("soak_consumer.py"))
STD = "drill-soak"  # the one queue every consumer receives from (issue 13)
GROUPS = 50
POISON_RATE = 0.10  # of the ungrouped half: 5 % of all messages
BOUND, LEASE_MS, POISON_DELAY_MS = 4, 3000, 150
RSS_GROWTH_LIMIT_MIB = 25.0


@dataclass
class Sent:
    queue: dict[int, str] = field(default_factory=dict)  # seq -> queue
    at: dict[int, float] = field(default_factory=dict)  # seq -> acknowledged (monotonic)
    poison: set[int] = field(default_factory=set)
    group: dict[int, str] = field(default_factory=dict)


def produce(client: mqlite.HttpClient, n: int, rate: float, sent: Sent, rng: random.Random) -> None:
    batch, i, began = 20, 0, time.monotonic()
    while i < n:
        msgs, kinds = [], []
        for _ in range(batch):
            group = f"g{(i // 2) % GROUPS}" if i % 2 else ""
            poison = not group and rng.random() < POISON_RATE
            msgs.append(
                mqlite.OutMessage(
                    body=b"%d" % i,
                    group_id=group,
                    properties={"poison": "1" if poison else "0"},
                )
            )
            kinds.append((poison, group))
            i += 1
        while True:
            try:
                seqs = client.send(STD, msgs)
                break
            except (mqlite.ConnectionFailed, mqlite.errors.MQLiteError):
                time.sleep(0.1)  # the broker is being killed: the drill's own doing
        now = time.monotonic()
        for seq, (poison, group) in zip(seqs, kinds, strict=True):
            sent.queue[seq], sent.at[seq] = STD, now
            if poison:
                sent.poison.add(seq)
            if group:
                sent.group[seq] = group
        ahead = i / rate - (time.monotonic() - began)
        if ahead > 0:
            time.sleep(ahead)


def rss_mib(pgid: int) -> float:
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.getpgid(int(pid)) != pgid:
                continue
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except (OSError, ProcessLookupError):
            continue
    return total / 1024


def read_logs(logs: list[Path]) -> list[tuple[int, int, float]]:
    out = []
    for path in logs:
        if path.exists():
            for line in path.read_text().splitlines():
                parts = line.split()
                if len(parts) == 4 and parts[0] == "H":
                    out.append((int(parts[1]), int(parts[2]), float(parts[3])))
    return out


def verify(
    report: drillkit.Report,
    sent: Sent,
    handled: list[tuple[int, int, float]],
    left: dict[str, mqlite.Stats],
    dead: list[mqlite.Message],
) -> None:
    pending = {q: s.active + s.locked + s.scheduled + s.deferred for q, s in left.items()}
    report.check("none left pending", not any(pending.values()), f"{pending}")
    dead_seqs = {m.seq_number for m in dead}
    report.check(
        "poison messages, and only they, dead-lettered at the bound",
        dead_seqs == sent.poison
        and all(
            m.delivery_count == BOUND and m.dead_letter_reason == "MaxDeliveryCountExceeded"
            for m in dead
        ),
        f"{len(dead_seqs)} dead-lettered, {len(sent.poison)} poison, "
        f"{len(dead_seqs - sent.poison)} wrongly, {len(sent.poison - dead_seqs)} missing",
    )
    by_seq: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for seq, dc, at in handled:
        by_seq[seq].append((dc, at))
    unhandled = [s for s in sent.queue if s not in by_seq]
    twice = [s for s, hs in by_seq.items() if len({dc for dc, _ in hs}) != len(hs)]
    report.check(
        "every message completed exactly once or dead-lettered",
        not unhandled and not twice and not any(pending.values()),
        f"{len(sent.queue) - len(unhandled)} of {len(sent.queue)} handled, "
        f"{len(twice)} delivery(ies) handed out twice",
    )
    early = []
    for seq in sent.poison:
        hs = sorted(by_seq.get(seq, []))
        for (dc, at), (_, nxt) in itertools.pairwise(hs):
            if (nxt - at) * 1000 < POISON_DELAY_MS * dc - 50:
                early.append((seq, dc, round((nxt - at) * 1000)))
    report.check(
        "poison backoff respected",
        not early,
        f"{len(early)} redelivered early" + (f", e.g. {early[:2]}" if early else ""),
    )
    overtaken = []
    by_group: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for seq, _, at in handled:
        if seq in sent.group:
            by_group[sent.group[seq]].append((at, seq))
    for group, hs in by_group.items():
        top = 0
        for _, seq in sorted(hs):
            if seq < top:
                overtaken.append((group, seq, top))
            top = max(top, seq)
    report.check(
        "group order held (none overtakes an earlier one)",
        not overtaken,
        f"{len(by_group)} groups"
        + (f", {len(overtaken)} overtaken, e.g. {overtaken[:2]}" if overtaken else ""),
    )
    firsts = [min(at for _, at in hs) - sent.at[s] for s, hs in by_seq.items() if s in sent.at]
    firsts.sort()
    if firsts:
        report.figure("latency_ms_p50", round(firsts[len(firsts) // 2] * 1000, 1))
        report.figure("latency_ms_p99", round(firsts[int(len(firsts) * 0.99)] * 1000, 1))
    good = [s for s in by_seq if s not in sent.poison]
    # deliveries past the first (a claim lost with a killed consumer counts, even when its
    # handler never ran: the later delivery's count says so)
    extra = sum(max(dc for dc, _ in by_seq[s]) - 1 for s in good)
    report.figure("redelivery_rate", round(extra / max(len(good), 1), 4))


def run(report: drillkit.Report, args: argparse.Namespace) -> None:
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    report.figure("seed", seed)
    work = drillkit.workdir(args, "soak")
    broker, url, token = drill_container.endpoint_or_broker(
        report, args, work / "soak.db", work, "broker"
    )
    admin = mqlite.connect(url, token or None)
    names = {q.name for q in admin.list_queues()}
    if STD not in names:  # standard: per-group FIFO, ungrouped messages unordered
        admin.create_queue(
            STD,
            mqlite.QueueConfig(
                lock_duration_ms=LEASE_MS, max_delivery_count=BOUND, ordering_mode="standard"
            ),
        )
    sent = Sent()
    producer = threading.Thread(target=produce, args=(admin, args.messages, args.rate, sent, rng))
    env = drillkit.clean_env({"MQLITE_TOKEN": token})
    logs: list[Path] = []
    procs: list[subprocess.Popen[bytes]] = []

    def spawn(k: int) -> subprocess.Popen[bytes]:
        logs.append(work / f"consumer-{k}-{len(logs)}.log")
        return subprocess.Popen(
            [sys.executable, CONSUMER, url, STD, str(logs[-1])],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    procs = [spawn(k) for k in range(args.consumers)]
    producer.start()
    began = time.monotonic()
    deadline = began + args.max_seconds
    next_kill = began + args.kill_every
    broker_kills = [signal.SIGKILL, signal.SIGTERM] if broker else []
    rss: list[tuple[float, float]] = []
    consumer_kills = 0
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = time.monotonic()
        if now >= next_kill:
            k = rng.randrange(len(procs))
            procs[k].kill()
            procs[k].wait()
            procs[k] = spawn(k)
            consumer_kills += 1
            next_kill = now + args.kill_every
        if (
            broker_kills
            and broker
            and len(sent.queue) >= args.messages * (3 - len(broker_kills)) / 3
        ):
            sig = broker_kills.pop(0)
            report.progress(f"broker {sig.name} at {len(sent.queue)} sent")
            broker.kill(sig)
            broker.start()
            rss.clear()  # a new process: its warm-up starts again
        if broker and (pid := broker.main_pid):
            rss.append((now - began, rss_mib(pid)))
        handled = read_logs(logs)
        report.progress(
            f"{len(sent.queue)}/{args.messages} sent, {len(handled)} handled, "
            f"{consumer_kills} consumer kill(s)"
            + (f", broker RSS {rss[-1][1]:.0f} MiB" if rss else "")
        )
        if not producer.is_alive() and len(sent.queue) >= args.messages:
            stats = {STD: admin.stats(STD)}
            if all(s.active + s.locked + s.scheduled == 0 for s in stats.values()):
                break
    elapsed = time.monotonic() - began
    admin.close()
    admin = mqlite.connect(url, token or None)  # a fresh pool (the broker restarted)
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
    producer.join(timeout=30)
    left = {STD: admin.stats(STD)}
    dead = [m for m in peek_all(admin, STD) if m.state == "dead_lettered"]
    verify(report, sent, read_logs(logs), left, dead)
    report.figure("messages", len(sent.queue))
    report.figure("elapsed_s", round(elapsed, 1))
    report.figure("throughput_msg_per_s", round(len(sent.queue) / elapsed, 1))
    report.figure("consumer_kills", consumer_kills)
    if rss:
        warm = rss[len(rss) // 4][1]
        growth = max(v for _, v in rss[len(rss) * 3 // 4 :]) - warm
        report.figure(
            "broker_rss_mib_over_time", [round(v) for _, v in rss[:: max(len(rss) // 10, 1)]]
        )
        report.figure("broker_rss_growth_after_warmup_mib", round(growth, 1))
        report.check(
            "broker RSS does not grow after warm-up",
            growth < RSS_GROWTH_LIMIT_MIB,
            f"{growth:+.1f} MiB (limit {RSS_GROWTH_LIMIT_MIB})",
        )
    admin.close()
    if broker:
        broker.stop()


def main(argv: list[str] | None = None) -> int:
    p = drillkit.arguments("soak", __doc__.split("\n\n")[0] if __doc__ else "")
    p.add_argument("--endpoint", default="", help="a running broker (token: MQLITE_TOKEN)")
    p.add_argument("--messages", type=int, default=20_000)
    p.add_argument("--rate", type=float, default=100.0, help="messages sent per second")
    p.add_argument("--consumers", type=int, default=8)
    p.add_argument("--kill-every", type=float, default=5.0, help="seconds between consumer kills")
    p.add_argument("--max-seconds", type=float, default=570.0, help="hard bound of the run")
    args = p.parse_args(argv)
    if args.quick:
        args.messages, args.consumers, args.rate = min(args.messages, 600), 4, 150.0
        args.kill_every, args.max_seconds = 2.0, min(args.max_seconds, 90.0)
    return drillkit.run_drill("soak", run, args)


if __name__ == "__main__":
    sys.exit(main())
