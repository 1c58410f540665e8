"""The crash drill's HTTP phase: producers over HTTP while the service is SIGKILLed.

Each producer sends messages with unique ``message_id``s to a queue with duplicate
detection on and records the seq every acknowledged send returned. A send whose answer
was lost (the kill landed between COMMIT and the response) is retried with the same id
until the broker answers, so the dedup record must give back the same seq. The service
dies at random (SIGKILL of its whole process group, or ``--kill-cmd``) or at a kill
point (the worker SIGKILLs itself after COMMIT, before answering; gunicorn forks a new
one). At the end, every acknowledged seq must hold its message exactly once and no
message id may appear twice.
"""

from __future__ import annotations

import argparse
import random
import shlex
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import drill_container
import drillkit
import httpx

import mqlite
from mqlite.sdk.retry import RetryPolicy

QUEUE = "drill-crash-http"
PRODUCERS = 3
POINTS = ["commit.after", "batch.call", "commit.before"]


class Producers:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.acked: dict[str, int] = {}
        self.retried = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(PRODUCERS)
        ]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def join(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)

    def run(self, n: int) -> None:
        client = mqlite.connect(self.url, self.token, timeout=5, retry=RetryPolicy(attempts=1))
        i = 0
        while not self.stop.is_set():
            i += 1
            mid = f"p{n}-{i}"
            while True:  # until acknowledged: the same id, so a lost answer is deduplicated
                try:
                    seq = client.send_one(
                        QUEUE, mqlite.OutMessage(body=mid.encode(), message_id=mid)
                    )
                    break
                except (mqlite.ConnectionFailed, mqlite.errors.MQLiteError, httpx.HTTPError):
                    if self.stop.is_set():  # the drill ends (the broker may never return)
                        client.close()
                        return
                    with self.lock:
                        self.retried += 1
                    time.sleep(0.05)
            with self.lock:
                self.acked[mid] = seq
        client.close()


def wait_healthy(url: str, deadline_s: float = 60.0) -> float:
    began = time.monotonic()
    while time.monotonic() - began < deadline_s:
        if drillkit.healthy(url):
            return time.monotonic() - began
        time.sleep(0.05)
    raise drillkit.DrillError(f"{url} did not come back within {deadline_s} s")


def http_phase(
    report: drillkit.Report, args: argparse.Namespace, work: Path, rng: random.Random
) -> None:
    if args.endpoint and not args.kill_cmd:
        raise drillkit.DrillError("--endpoint needs --kill-cmd (how to SIGKILL the broker)")
    broker, url, token = drill_container.endpoint_or_broker(
        report, args, work / "serve.db", work, "http_broker"
    )
    with mqlite.connect(url, token) as admin:
        if QUEUE not in {q.name for q in admin.list_queues()}:
            admin.create_queue(QUEUE, mqlite.QueueConfig(dedup_window_ms=3_600_000))
    producers = Producers(url, token)
    producers.start()
    fired, misses, restart_s = 0, [], []
    try:
        for cycle in range(1, args.serve_cycles + 1):
            time.sleep(rng.uniform(0.5, 1.5))
            if broker is None:
                subprocess.run(shlex.split(args.kill_cmd), check=True, timeout=60)
                restart_s.append(wait_healthy(url))
                what = "kill-cmd"
            elif isinstance(broker, drill_container.ContainerBroker) and cycle % 3 == 0:
                restart_s.append(broker.crash_main_process())
                what = "SIGKILL of the container's main process, restarted by its policy"
            elif cycle % 2:
                evidence = work / f"fired-{cycle}"
                spec = (
                    f"{rng.choice(POINTS)}@{rng.randint(3, 30)},once={broker.path_inside(evidence)}"
                )
                broker.kill()
                restart_s.append(
                    broker.start({"MQLITE_TEST_HOOKS": "on", "MQLITE_TEST_KILL_POINT": spec})
                )
                deadline = time.monotonic() + 20
                while not evidence.exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
                if evidence.exists():
                    fired += 1
                else:
                    misses.append(spec)
                what = f"kill point {spec.split(',')[0]}"
            else:
                broker.kill()
                restart_s.append(broker.start())
                what = "SIGKILL of the service"
            report.progress(
                f"serve cycle {cycle}/{args.serve_cycles} {what}: "
                f"{len(producers.acked)} sends acknowledged, {producers.retried} retried"
            )
        time.sleep(0.3)
    finally:
        producers.join()
    if broker is not None:
        broker.kill()
        restart_s.append(broker.start())
        url = broker.url
    with mqlite.connect(url, token) as client:
        messages = peek_all(client, QUEUE)
    if broker is not None:
        broker.stop()
    verify_http(report, producers.acked, [(m.message_id, m.seq_number) for m in messages])
    report.check(
        "HTTP kill points fired",
        not misses,
        f"{fired} fired" + (f", missed {misses}" if misses else ""),
    )
    report.figure("http_sends_acknowledged", len(producers.acked))
    report.figure("http_sends_retried", producers.retried)
    report.figure("broker_restart_s_max", round(max(restart_s), 2) if restart_s else 0)


def peek_all(client: mqlite.HttpClient, queue: str) -> list[mqlite.Message]:
    """Every message of ``queue``, page by page (a Peek answers at most 1,000)."""
    out: list[mqlite.Message] = []
    while page := client.peek(queue, from_seq=out[-1].seq_number + 1 if out else 0, max=1000):
        out += page
    return out


def verify_http(
    report: drillkit.Report, acked: dict[str, int], stored: list[tuple[str, int]]
) -> None:
    """None lost (each acknowledged seq holds its id), none duplicated (an id once)."""
    by_seq = dict((seq, mid) for mid, seq in stored)
    lost = [mid for mid, seq in acked.items() if by_seq.get(seq) != mid]
    twice = [mid for mid, n in Counter(mid for mid, _ in stored).items() if n > 1]
    report.check(
        "HTTP: every acknowledged send survives",
        not lost,
        f"{len(lost)} lost of {len(acked)}" + (f", e.g. {lost[:3]}" if lost else ""),
    )
    report.check(
        "HTTP: no message stored twice",
        not twice,
        f"{len(twice)} duplicated of {len(stored)}" + (f", e.g. {twice[:3]}" if twice else ""),
    )
