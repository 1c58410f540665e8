"""Push delivery throughput (docs/push.md), printed, not asserted: a real ``mqlite serve``
POSTs N messages to a local receiver answering 204, at max_in_flight 1, 8 and 64, next to
the same N messages drained over HTTP by the SDK's ``Receiver`` (a no-op handler) at the
same concurrency -- in ONE run, with the ratio push / Receiver.

The receiver is a minimal asyncio HTTP/1.1 server in its own process (keep-alive, reads
the body, answers 204), so neither side's Python shares a GIL with the broker. Each push
run creates its target paused, sends the N messages, then resumes it and times until the
queue is empty (Stats); each Receiver run times from start until it is empty.

    .venv/bin/python tests/bench/push_bench.py              # 3,000 messages per run
    .venv/bin/python tests/bench/push_bench.py --messages 500
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ADMIN = "mqk_bench_admin_" + "a" * 24
BODY = base64.b64encode(b"x" * 256).decode()
RPC = "/mqlite.v1."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _serve(port: int) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def start_receiver(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, __file__, "--receiver", str(port)])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.05)
    raise SystemExit("receiver did not start")


def start_broker(db: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    env.update(
        MQLITE_DB=f"file:{db}",
        MQLITE_TOKENS=ADMIN,
        MQLITE_LOG_LEVEL="WARNING",
        MQLITE_PUSH_ALLOW_NETWORKS="127.0.0.0/8",
    )
    cmd = [sys.executable, "-m", "mqlite.cli.main", "serve", "--addr", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).text == "ok":
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("broker did not start")


def rpc(c: httpx.Client, method: str, body: dict[str, object]) -> dict[str, object]:
    r = c.post(RPC + method, json=body)
    r.raise_for_status()
    return r.json()  # type: ignore[no-any-return]


def fill(c: httpx.Client, queue: str, n: int) -> None:
    rpc(c, "AdminService/CreateQueue", {"name": queue})
    for start in range(0, n, 100):
        batch = [{"body": BODY} for _ in range(min(100, n - start))]
        rpc(c, "QueueService/Send", {"queue": queue, "messages": batch})


def wait_empty(c: httpx.Client, queue: str, started: float) -> float:
    while rpc(c, "QueueService/Stats", {"queue": queue}).get("total", 0):
        time.sleep(0.02)
        if time.monotonic() - started > 600:
            raise SystemExit(f"{queue} did not drain")
    return time.monotonic() - started


def push_run(c: httpx.Client, hook: str, n: int, in_flight: int) -> float:
    queue = f"push-{in_flight}"
    fill(c, queue, n)
    target = {"queue": queue, "url": hook, "max_in_flight": in_flight}
    rpc(c, "AdminService/CreatePush", {**target, "paused": True})
    started = time.monotonic()
    rpc(c, "AdminService/CreatePush", {**target, "paused": False})
    return n / wait_empty(c, queue, started)


def receiver_run(c: httpx.Client, url: str, n: int, concurrency: int) -> float:
    import mqlite

    queue = f"pull-{concurrency}"
    fill(c, queue, n)
    client = mqlite.connect(url, ADMIN)
    try:
        receiver = mqlite.Receiver(client, queue, lambda m: None, concurrency=concurrency)
        started = time.monotonic()
        receiver.start()
        took = wait_empty(c, queue, started)
        receiver.stop(10)
    finally:
        client.close()
    return n / took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--receiver", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.receiver:
        asyncio.run(_serve(args.receiver))
        return 0
    hook_port, port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as d:
        receiver = start_receiver(hook_port)
        broker = start_broker(Path(d) / "mq.db", port)
        url = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}) as c:
                rows = []
                for k in (1, 8, 64):
                    pushed = push_run(c, f"http://127.0.0.1:{hook_port}/hook", args.messages, k)
                    pulled = receiver_run(c, url, args.messages, k)
                    rows.append((k, pushed, pulled))
        finally:
            os.killpg(broker.pid, signal.SIGTERM)
            broker.wait(30)
            receiver.terminate()
            receiver.wait(10)
    print(f"\n{args.messages} messages of 256 B per run, one run ({os.cpu_count()} cores)\n")
    print("| concurrency | push msgs/s | HTTP SDK Receiver msgs/s | push / Receiver |")
    print("|---:|---:|---:|---:|")
    for k, pushed, pulled in rows:
        print(f"| {k} | {pushed:,.0f} | {pulled:,.0f} | {pushed / pulled:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
