"""Remote SDK benchmark: single-message sends per second against a local ``mqlite serve``,
with the client's CPU per request (``time.process_time`` of this process / requests).

A script, not a test (pytest ignores tests/bench)::

    .venv/bin/python tests/bench/sdk_bench.py              # SDK figures (sync and asyncio)
    .venv/bin/python tests/bench/sdk_bench.py --libs       # + http.client vs urllib3 vs httpx
    .venv/bin/python tests/bench/sdk_bench.py --check      # exit 1 below 2,000 msg/s
    .venv/bin/python tests/bench/sdk_bench.py --endpoint http://127.0.0.1:6754 --token T
    .venv/bin/python tests/bench/sdk_bench.py --against REV  # instructions: REV and now

Without ``--endpoint`` it starts a broker on a free loopback port with a temp database
(``MQLITE_SYNC`` as in the environment, default NORMAL). Figures: one ``HttpClient``
sending sequentially from one thread, and the same client shared by ``--threads``
threads (it is thread-safe; each thread borrows its own keep-alive connection). The
asyncio figures are the same sends through ``mqlite.aio`` (one client, 1 and
``--threads`` tasks on one event loop). The ``--libs`` table sends the same pre-encoded
Send body with each library's keep-alive client, so it isolates the HTTP library's cost
from the SDK's encoding.

First, the clients' own cost per Send next to the floor of a minimal client in the same
run (``sdk_cost.py``): thread CPU of the calling thread, and, with valgrind installed,
instructions per Send under callgrind (load-independent; ``--against REV`` adds REV's
figures, measured in the same run). ``--no-instructions`` skips callgrind.
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "app"))

import sdk_cost  # noqa: E402

import mqlite  # noqa: E402
from mqlite import OutMessage, wire  # noqa: E402

TARGET = 2_000
TOKEN = "mqk_" + "b" * 64
BODY = b"x" * 64


def start_broker(directory: str) -> tuple[str, subprocess.Popen[bytes]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MQLITE_DB=f"file:{directory}/mq.db", MQLITE_TOKENS=TOKEN)
    env["MQLITE_LOG_LEVEL"] = "WARNING"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqlite.cli.main", "serve", "--addr", f"127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1):
                return url, proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("broker did not start")


def measure(fn: Callable[[], object], n: int, threads: int = 1) -> tuple[float, float]:
    """(requests per second, client CPU microseconds per request)."""
    for _ in range(min(200, n // 10)):
        fn()
    per = n // threads

    def run() -> None:
        for _ in range(per):
            fn()

    workers = [threading.Thread(target=run) for _ in range(threads)]
    cpu0, t0 = time.process_time(), time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    total = per * threads
    return total / wall, cpu / total * 1e6


def measure_aio(url: str, token: str, queue: str, n: int, tasks: int = 1) -> tuple[float, float]:
    """(requests per second, client CPU microseconds per request) of ``mqlite.aio``:
    ``tasks`` coroutines sharing one ``AsyncClient``, each sending sequentially."""
    import asyncio

    import mqlite.aio

    msg = OutMessage(BODY)

    async def run() -> tuple[float, float]:
        async with mqlite.aio.connect(url, token) as client:
            for _ in range(min(200, n // 10)):
                await client.send_one(queue, msg)
            per = n // tasks

            async def worker() -> None:
                for _ in range(per):
                    await client.send_one(queue, msg)

            cpu0, t0 = time.process_time(), time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(tasks)))
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            return per * tasks / wall, cpu / (per * tasks) * 1e6

    return asyncio.run(run())


def lib_table(url: str, queue: str, n: int) -> list[tuple[str, float, float]]:
    import httpx
    import urllib3

    host, port = url.removeprefix("http://").split(":")
    path = wire.SEND.path
    body = wire.encode_request(
        wire.SEND, wire.SendRequest(queue, (wire.MessageJSON.of(OutMessage(BODY)),))
    )
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

    conn = http.client.HTTPConnection(host, int(port))

    def stdlib() -> None:
        conn.request("POST", path, body, headers)
        r = conn.getresponse()
        r.read()
        assert r.status == 200

    pool = urllib3.HTTPConnectionPool(host, int(port), maxsize=1)

    def u3() -> None:
        r = pool.urlopen("POST", path, body=body, headers=headers, retries=False)
        assert r.status == 200

    hx = httpx.Client(base_url=url)

    def hxc() -> None:
        r = hx.post(path, content=body, headers=headers)
        assert r.status_code == 200

    rows = []
    for name, fn in (("http.client", stdlib), ("urllib3", u3), ("httpx", hxc)):
        rows.append((name, *measure(fn, n)))
    hx.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoint")
    ap.add_argument("--token", default=TOKEN)
    ap.add_argument("-n", type=int, default=5_000, help="sends per figure")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--libs", action="store_true", help="also compare the HTTP libraries")
    ap.add_argument("--check", action="store_true", help=f"exit 1 below {TARGET} msg/s")
    ap.add_argument("--cpu-n", type=int, default=4_000, help="sends per client, thread CPU")
    ap.add_argument("--instr-n", type=int, default=400, help="sends per client, callgrind")
    ap.add_argument("--no-instructions", action="store_true", help="skip callgrind")
    ap.add_argument("--against", metavar="REV", help="instructions of REV's SDK too")
    args = ap.parse_args()

    proc = None
    tmp = tempfile.TemporaryDirectory()
    url = args.endpoint
    if url is None:
        url, proc = start_broker(tmp.name)
    try:
        client = mqlite.connect(url, args.token)
        queue = f"bench-{os.getpid()}"
        client.create_queue(queue)
        msg = OutMessage(BODY)
        print(f"broker {url}, {os.cpu_count()} CPUs, {len(BODY)}-byte bodies, n={args.n}")
        print()
        print("\n".join(sdk_cost.cpu_table(url, args.token, queue, args.cpu_n)))
        if not args.no_instructions:
            print()
            rows = sdk_cost.instruction_table(url, args.token, args.instr_n, args.against)
            print("\n".join(rows))
        if args.libs:
            print("\n| library (raw Send, 1 thread) | msgs/s | client CPU µs/request |")
            print("|---|---:|---:|")
            for name, rate, cpu in lib_table(url, queue, args.n):
                print(f"| {name} | {rate:,.0f} | {cpu:.0f} |")
        print("\n| mqlite.connect(...).send_one | msgs/s | client CPU µs/request |")
        print("|---|---:|---:|")
        best = 0.0
        for threads in sorted({1, args.threads}):
            rate, cpu = measure(lambda: client.send_one(queue, msg), args.n, threads)
            best = max(best, rate)
            print(f"| {threads} thread(s), one client | {rate:,.0f} | {cpu:.0f} |")
        client.close()
        print("\n| mqlite.aio.connect(...).send_one | msgs/s | client CPU µs/request |")
        print("|---|---:|---:|")
        for tasks in sorted({1, args.threads}):
            rate, cpu = measure_aio(url, args.token, queue, args.n, tasks)
            print(f"| {tasks} task(s), one client | {rate:,.0f} | {cpu:.0f} |")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=20)
        tmp.cleanup()
    ok = best >= TARGET
    print(f"\nbest {best:,.0f} msg/s vs target {TARGET:,}: {'ok' if ok else 'BELOW TARGET'}")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    raise SystemExit(main())
