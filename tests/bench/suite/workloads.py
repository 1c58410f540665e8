"""The workloads with several threads, written once against the client API that the
embedded engine and the HTTP SDK share (``send_one``, ``send``, ``receive``,
``complete_batch``), so ``mqlite`` and ``mqlite-http-sdk`` run exactly the same code:

- ``many``: the original's ``e2e_4x4`` (4 producers sending single messages while 4
  consumers receive up to 16 with a 20 ms wait and complete the batch) and, with
  ``groups=64``, ``sessions_64g`` (the same on a ``group_fifo`` queue, each message in one
  of 64 groups picked at random, so consumers contend for groups, not only rows);
- ``longpoll``: latency from a send to its delivery to a consumer that is already parked
  in a long-poll receive, one message at a time;
- ``producers``: the original's ``produce_p4`` (and, with properties, ``props_p4``): 4
  threads sending n single messages in all, each send timed, no consumer.

``client_for()`` returns the client a thread uses: the one embedded engine for all of them,
or a new HTTP client per thread (a separate connection, as separate processes would have).
"""

from __future__ import annotations

import random
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from mqlite import OutMessage

CONSUMER_MAX, CONSUMER_WAIT_MS = 16, 20  # the original's e2e_4x4 consumer
LONGPOLL_WAIT_MS = 5_000


def _run(threads: list[threading.Thread], errors: list[BaseException], deadline_s: float) -> None:
    for t in threads:
        t.start()
    end = time.monotonic() + deadline_s
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
    if errors:
        raise errors[0]
    if any(t.is_alive() for t in threads):
        raise RuntimeError(f"workload did not finish in {deadline_s} s")


def many(
    client_for: Callable[[], Any],
    queue: str,
    n: int,
    body: bytes,
    producers: int = 4,
    consumers: int = 4,
    groups: int = 0,
    deadline_s: float = 300,
) -> None:
    """``producers`` threads send n messages in all, one at a time, while ``consumers``
    threads receive and complete until n are completed."""
    errors: list[BaseException] = []
    done = [0]
    lock = threading.Lock()

    def guard(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # raised on the caller's thread by _run
                errors.append(exc)

        return run

    def producer(count: int, seed: int) -> Callable[[], None]:
        def run() -> None:
            client, rnd = client_for(), random.Random(seed)
            for _ in range(count):
                group = f"g{rnd.randrange(groups)}" if groups else ""
                client.send_one(queue, OutMessage(body=body, group_id=group))

        return run

    def consumer() -> None:
        client = client_for()
        while not errors:
            with lock:
                if done[0] >= n:
                    return
            got = client.receive(queue, max_messages=CONSUMER_MAX, wait_ms=CONSUMER_WAIT_MS)
            if got:
                client.complete_batch(queue, [(m.seq_number, m.lock_token) for m in got])
                with lock:
                    done[0] += len(got)

    shares = [n // producers + (i < n % producers) for i in range(producers)]
    threads = [threading.Thread(target=guard(producer(k, i)), daemon=True)
               for i, k in enumerate(shares)]  # fmt: skip
    threads += [threading.Thread(target=guard(consumer), daemon=True) for _ in range(consumers)]
    _run(threads, errors, deadline_s)


def producers(send_for: Callable[[], Callable[[], None]], n: int, k: int = 4,
              deadline_s: float = 300) -> list[float]:  # fmt: skip
    """k threads, each with the send function ``send_for()`` gives it (its own connection
    where the system has them), call it n times in all; the latency of every send."""
    errors: list[BaseException] = []
    lat: list[float] = []  # list.extend is atomic under the GIL
    clock = time.perf_counter

    def producer(count: int) -> None:
        try:
            send, mine = send_for(), []
            for _ in range(count):
                t0 = clock()
                send()
                mine.append(clock() - t0)
            lat.extend(mine)
        except BaseException as exc:  # raised on the caller's thread by _run
            errors.append(exc)

    shares = [n // k + (i < n % k) for i in range(k)]
    _run([threading.Thread(target=producer, args=(c,), daemon=True) for c in shares],
         errors, deadline_s)  # fmt: skip
    return lat


def longpoll(
    client_for: Callable[[], Any], queue: str, n: int, pause_s: float = 0.002
) -> list[float]:
    """n times: let the consumer park in ``receive(wait_ms=5000)``, send one message
    carrying its send time, and take the time the consumer holds it; the latencies."""
    errors: list[BaseException] = []
    lat: list[float] = []
    delivered = threading.Semaphore(0)
    clock = time.perf_counter

    def consumer() -> None:
        try:
            client = client_for()
            while len(lat) < n:
                got = client.receive(queue, max_messages=1, wait_ms=LONGPOLL_WAIT_MS)
                now = clock()
                for m in got:
                    lat.append(now - struct.unpack("d", m.body[:8])[0])
                    client.complete_batch(queue, [(m.seq_number, m.lock_token)])
                    delivered.release()
        except BaseException as exc:
            errors.append(exc)
            delivered.release()

    t = threading.Thread(target=consumer, daemon=True)
    t.start()
    sender = client_for()
    for i in range(n):
        time.sleep(pause_s)  # the consumer is back in its long poll (a real e2e: real time)
        sender.send_one(queue, OutMessage(body=struct.pack("d", clock())))
        if not delivered.acquire(timeout=LONGPOLL_WAIT_MS / 1000 * 2) or errors:
            raise errors[0] if errors else RuntimeError(f"longpoll: message {i} not delivered")
    t.join(LONGPOLL_WAIT_MS / 1000 * 2)
    return lat


RECEIVER_CONCURRENCY = 16  # each Receiver's handler slots (and so its receive batch)


def receivers(
    client_for: Callable[[], Any],
    queue: str,
    n: int,
    body: bytes,
    producers: int = 4,
    consumers: int = 4,
    deadline_s: float = 300,
) -> None:
    """e2e_4x4 with ``mqlite.Receiver`` as the consumer, as an application runs it:
    ``producers`` threads send n messages in all, one at a time, while ``consumers``
    Receivers (a client each, ``RECEIVER_CONCURRENCY`` handler threads, long polls)
    complete each message when its handler returns; done when n handlers have run."""
    import mqlite

    errors: list[BaseException] = []
    handled = [0]
    lock = threading.Condition()

    def handler(_m: Any) -> None:
        with lock:
            handled[0] += 1
            if handled[0] >= n:
                lock.notify_all()

    def producer(count: int) -> Callable[[], None]:
        def run() -> None:
            try:
                client = client_for()
                for _ in range(count):
                    client.send_one(queue, OutMessage(body=body))
            except BaseException as exc:
                errors.append(exc)

        return run

    running = [
        mqlite.Receiver(
            client_for(), queue, handler, concurrency=RECEIVER_CONCURRENCY, wait_ms=1000
        ).start()
        for _ in range(consumers)
    ]
    shares = [n // producers + (i < n % producers) for i in range(producers)]
    threads = [threading.Thread(target=producer(k), daemon=True) for k in shares]
    try:
        for t in threads:
            t.start()
        with lock:
            if not lock.wait_for(lambda: handled[0] >= n or bool(errors), deadline_s):
                raise RuntimeError(f"receivers: {handled[0]} of {n} in {deadline_s} s")
        if errors:
            raise errors[0]
        for t in threads:
            t.join()
    finally:
        for r in running:
            r.stop()
