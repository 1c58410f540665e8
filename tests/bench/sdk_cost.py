"""The SDK clients' own cost per single-message Send, next to the floor: what a minimal
client spends on the same request in the same run (``sdk_bench.py`` prints these tables).

Two figures, both of the client side only (the broker is another process):

- **thread CPU µs per Send** (``time.thread_time`` of the calling thread, user + kernel):
  the raw-socket floor (the request bytes prebuilt, one ``sendall``, ``recv`` until the
  Content-Length is in), ``mqlite.connect(...).send_one``, an asyncio floor (a bare
  ``asyncio.Protocol``: write, one future, the same framing check) and
  ``mqlite.aio.connect(...).send_one``, interleaved in rounds so host noise hits all
  alike. A busy host inflates every row (cold caches after each blocking read), which is
  why the floor is in the table.
- **instructions per Send** under valgrind's callgrind (user space: Python, msgspec,
  llhttp; the kernel is not counted): the same four clients in ONE callgrind run of a
  child process, ``os.getppid()`` as the marker between them (``--dump-before=getppid``),
  so start-up and warm-up fall into dumps of their own. Load does not move these, so
  ``--against REV`` runs the same child on REV's ``app/`` (a temporary git worktree) and
  prints before and after in one table. The broker answers a Send's head and body in two
  writes that a read sometimes catches apart (uvicorn), so each figure carries about one
  extra ``recv`` + parse now and then; N of a few hundred averages it out.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BODY = b"x" * 64
ROWS = ("raw socket (floor)", "mqlite.connect", "asyncio Protocol (floor)", "mqlite.aio.connect")

# The child under callgrind: argv = app_dir url token n. Dumps: 1 start-up and warm-up,
# 2 raw socket, 3 sync SDK, 4 asyncio start-up, 5 asyncio floor, 6 asyncio SDK.
CHILD = r"""
import asyncio, os, socket, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[5])
import mqlite, mqlite.aio
from sdk_cost import RawClient, RawProtocol, request_bytes
url, token, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
msg = mqlite.OutMessage(b"x" * 64)
raw = RawClient(url, request_bytes(url, token, "cg"))
c = mqlite.connect(url, token)
c.create_queue("cg")
for _ in range(20):
    raw.send()
    c.send_one("cg", msg)
os.getppid()
for _ in range(n):
    raw.send()
os.getppid()
for _ in range(n):
    c.send_one("cg", msg)
os.getppid()
async def aio():
    proto = await RawProtocol.open(url, request_bytes(url, token, "cg"))
    async with mqlite.aio.connect(url, token) as a:
        for _ in range(20):
            await proto.send()
            await a.send_one("cg", msg)
        os.getppid()
        for _ in range(n):
            await proto.send()
        os.getppid()
        for _ in range(n):
            await a.send_one("cg", msg)
        os.getppid()
asyncio.run(aio())
"""
SEGMENTS = {ROWS[0]: 2, ROWS[1]: 3, ROWS[2]: 5, ROWS[3]: 6}


def request_bytes(url: str, token: str, queue: str) -> bytes:
    """A Send of one 64-byte message, as the least a client must write."""
    from mqlite import OutMessage, wire

    host_port = url.removeprefix("http://")
    body = wire.encode_request(
        wire.SEND, wire.SendRequest(queue, (wire.MessageJSON.of(OutMessage(BODY)),))
    )
    head = (
        f"POST {wire.SEND.path} HTTP/1.1\r\nHost: {host_port}\r\n"
        f"Content-Type: application/json\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _complete(buf: bytes) -> bool:
    """The answer in ``buf`` is whole (the broker always sends a Content-Length)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return False
    at = buf.lower().find(b"content-length:", 0, end)
    size = int(buf[at + 15 : buf.index(b"\r\n", at)])
    return len(buf) >= end + 4 + size


class RawClient:
    """The floor of a sync client: prebuilt bytes on one blocking keep-alive socket."""

    def __init__(self, url: str, request: bytes) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request = request

    def send(self) -> None:
        self.sock.sendall(self.request)
        buf = self.sock.recv(65536)
        while not _complete(buf):
            buf += self.sock.recv(65536)

    def close(self) -> None:
        self.sock.close()


class RawProtocol(asyncio.Protocol):
    """The floor of an asyncio client: a bare Protocol, one future per request."""

    def __init__(self, request: bytes) -> None:
        self.request = request
        self.buf = b""
        self.waiter: asyncio.Future[None] | None = None
        self.transport: Any = None

    @classmethod
    async def open(cls, url: str, request: bytes) -> RawProtocol:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_connection(lambda: cls(request), host, int(port))
        return proto

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.waiter is not None and _complete(self.buf):
            self.waiter.set_result(None)

    async def send(self) -> None:
        self.buf = b""
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(self.request)
        await self.waiter
        self.waiter = None


def thread_cpu(url: str, token: str, queue: str, n: int, rounds: int = 5) -> dict[str, float]:
    """Thread CPU µs per Send of each client, measured in interleaved rounds."""
    import mqlite
    import mqlite.aio

    msg = mqlite.OutMessage(BODY)
    raw = RawClient(url, request_bytes(url, token, queue))
    client = mqlite.connect(url, token)
    totals = dict.fromkeys(ROWS, 0.0)
    per = max(1, n // rounds)

    def timed(row: str, fn: Callable[[], object]) -> None:
        for _ in range(min(50, per)):
            fn()
        t0 = time.thread_time()
        for _ in range(per):
            fn()
        totals[row] += time.thread_time() - t0

    async def aio_round() -> None:
        proto = await RawProtocol.open(url, request_bytes(url, token, queue))
        async with mqlite.aio.connect(url, token) as a:
            for row, fn in ((ROWS[2], proto.send), (ROWS[3], lambda: a.send_one(queue, msg))):
                for _ in range(min(50, per)):
                    await fn()
                t0 = time.thread_time()
                for _ in range(per):
                    await fn()
                totals[row] += time.thread_time() - t0
        proto.transport.close()

    try:
        for _ in range(rounds):
            timed(ROWS[0], raw.send)
            timed(ROWS[1], lambda: client.send_one(queue, msg))
            asyncio.run(aio_round())
    finally:
        raw.close()
        client.close()
    return {row: total / (per * rounds) * 1e6 for row, total in totals.items()}


def instructions(app: Path, url: str, token: str, n: int, work: Path) -> dict[str, float]:
    """Instructions per Send of each client, one callgrind run of ``CHILD`` on ``app``."""
    work.mkdir(parents=True, exist_ok=True)
    script, out = work / "child.py", work / "cg.out"
    script.write_text(CHILD)
    for old in work.glob("cg.out*"):
        old.unlink()
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--dump-before=getppid",
         f"--callgrind-out-file={out}", sys.executable, str(script), str(app), url, token,
         str(n), str(Path(__file__).resolve().parent)],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"callgrind failed ({done.returncode}):\n{done.stderr[-2000:]}")
    totals: dict[int, int] = {}
    for dump in work.glob("cg.out.*"):
        match = re.search(r"^(?:summary|totals): (\d+)", dump.read_text(), re.M)
        if match and dump.suffix[1:].isdigit():
            totals[int(dump.suffix[1:])] = int(match.group(1))
    missing = [k for k in SEGMENTS.values() if k not in totals]
    if missing:
        raise RuntimeError(
            f"callgrind dumps: expected {sorted(SEGMENTS.values())}, got {sorted(totals)}"
        )
    return {row: totals[k] / n for row, k in SEGMENTS.items()}


def instruction_table(url: str, token: str, n: int, against: str | None) -> list[str]:
    """Markdown rows: instructions per Send, this tree (and ``against``'s, in the same
    run), each client next to its floor."""
    if shutil.which("valgrind") is None:
        return ["(instructions not measured: valgrind is not installed)"]
    work = Path(tempfile.mkdtemp(prefix="mqlite-sdk-cg-"))
    try:
        now = instructions(REPO / "app", url, token, n, work / "now")
        before = None
        if against:
            tree = work / "base"
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach",
                            str(tree), against], check=True, capture_output=True)  # fmt: skip
            try:
                before = instructions(tree / "app", url, token, n, work / "before")
            finally:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(tree)], check=False, capture_output=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    head = f"| client, Send of one 64 B message (N={n}) | instructions per Send |"
    rule = "|---|---:|"
    if before is not None:
        head += f" at {against} | this ÷ {against} |"
        rule += "---:|---:|"
    lines = [head + " × its floor |", rule + "---:|"]
    for row in ROWS:
        floor = now[ROWS[0]] if row in ROWS[:2] else now[ROWS[2]]
        cells = f"| {row} | {now[row]:,.0f} |"
        if before is not None:
            cells += f" {before[row]:,.0f} | {now[row] / before[row]:.2f}× |"
        lines.append(cells + f" {now[row] / floor:.1f}× |")
    return lines


def cpu_table(url: str, token: str, queue: str, n: int) -> list[str]:
    import os

    load0 = os.getloadavg()[0]
    cpu = thread_cpu(url, token, queue, n)
    lines = [
        f"| client, Send of one 64 B message (N={n}, 5 interleaved rounds; load average "
        f"{load0:.1f} → {os.getloadavg()[0]:.1f}) | thread CPU µs per Send | × its floor |",
        "|---|---:|---:|",
    ]
    for row in ROWS:
        floor = cpu[ROWS[0]] if row in ROWS[:2] else cpu[ROWS[2]]
        lines.append(f"| {row} | {cpu[row]:.0f} | {cpu[row] / floor:.1f}× |")
    return lines
