"""A soak of ``mqlite serve`` with a ramp-down and consumer churn, RSS sampled throughout:
the original's ``rampdown_4x4`` and ``churn_consumers`` in one run, against the server the
runner started, after the repetitions.

Phases of ``phase_s`` seconds with 4, 2, 1 and then 0 producers (each an SDK client
sending single 256 B messages), while 2 consumer threads churn: each opens a new client
(a new connection), receives up to 64 with a 100 ms wait and completes them for
``churn_s``, closes the client and starts over. After the last phase the consumers keep
going until the backlog is gone. The broker's and the harness's RSS are sampled every
250 ms; a leak shows as RSS that keeps rising although the load falls.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from typing import Any

import probes

import mqlite
from mqlite import OutMessage, QueueConfig

PRODUCERS_BY_PHASE = (4, 2, 1, 0)
CONSUMERS = 2


def run(server: Any, phase_s: float, churn_s: float, body: bytes) -> dict[str, Any]:
    url, token = f"http://127.0.0.1:{server.port}", server.token
    queue = f"soak-{secrets.token_hex(4)}"
    admin = mqlite.connect(url, token)
    admin.create_queue(queue, QueueConfig(lock_duration_ms=60_000))
    counts = {"sent": 0, "completed": 0, "consumer_sessions": 0}
    lock, errors = threading.Lock(), []
    stop_producers, producers_done = threading.Event(), threading.Event()
    active = [0]

    def producer(rank: int) -> None:
        client = mqlite.connect(url, token)
        try:
            while not stop_producers.is_set():
                if rank >= active[0]:  # ramped down: this producer is idle
                    time.sleep(0.01)
                    continue
                client.send_one(queue, OutMessage(body=body))
                with lock:
                    counts["sent"] += 1
        except BaseException as exc:  # re-raised on the runner's thread
            errors.append(exc)
        finally:
            client.close()

    def consumer() -> None:
        try:
            while True:
                client = mqlite.connect(url, token)
                with lock:
                    counts["consumer_sessions"] += 1
                until = time.monotonic() + churn_s
                try:
                    while time.monotonic() < until:
                        got = client.receive(queue, max_messages=64, wait_ms=100)
                        if got:
                            client.complete_batch(
                                queue, [(m.seq_number, m.lock_token) for m in got]
                            )
                            with lock:
                                counts["completed"] += len(got)
                        elif producers_done.is_set():
                            with lock:
                                if counts["completed"] >= counts["sent"]:
                                    return
                finally:
                    client.close()
        except BaseException as exc:
            errors.append(exc)

    groups = {"broker": server.pids(), "harness": [os.getpid()]}
    sampler = probes.RssSampler(groups, every_s=0.25).start()
    t0 = time.monotonic()
    prods = [threading.Thread(target=producer, args=(r,), daemon=True)
             for r in range(max(PRODUCERS_BY_PHASE))]  # fmt: skip
    threads = prods + [threading.Thread(target=consumer, daemon=True) for _ in range(CONSUMERS)]
    phases = []
    try:
        for t in threads:
            t.start()
        for producers in PRODUCERS_BY_PHASE:
            active[0] = producers
            start, sent0 = time.monotonic() - t0, counts["sent"]
            time.sleep(phase_s)
            phases.append({"producers": producers, "start_s": round(start, 2),
                           "sent": counts["sent"] - sent0,
                           "broker_rss_kb": probes.rss_kb(server.pids())})  # fmt: skip
        stop_producers.set()
        for t in prods:  # a send in flight is counted before the consumers may stop
            t.join(60)
        producers_done.set()
        for t in threads:
            t.join(60)
        if errors:
            raise errors[0]
        if any(t.is_alive() for t in threads):
            raise RuntimeError("soak: consumers did not drain the backlog in 60 s")
    finally:
        stop_producers.set()
        producers_done.set()
        series = sampler.stop()
        admin.delete_queue(queue)
        admin.close()
    broker = [kb for _t, kb in series["broker"]]
    return {
        "phase_s": phase_s,
        "churn_s": churn_s,
        "duration_s": round(time.monotonic() - t0, 2),
        **counts,
        "phases": phases,
        "broker_rss_kb": {"first": broker[0], "peak": max(broker), "last": broker[-1]},
        "rss_kb": series,
    }
