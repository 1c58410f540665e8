"""The cost gate (issue 29): instructions and system calls per message against a baseline.

Run from the repository root; ``tests/repo/test_cost_gate.py`` runs it in ``make test``::

    .venv/bin/python tests/bench/gate.py            # measure, compare, exit 1 above +8 %
    .venv/bin/python tests/bench/gate.py --update   # rewrite the baseline (commit says why)

Wall-clock figures on a shared machine swing by 2x; these do not. One fixed workload on a
fresh file database -- ``send_one`` N times, ``send`` in batches of 64, a drain by
``receive(64)`` + ``complete_batch``, and the same receive + complete over HTTP against
a real ASGI app on a real socket (uvicorn in a thread of the same process) -- runs once
under valgrind's callgrind (CPU instructions, user space: Python, SQLite, the app) and
once under strace (every system call of every thread: WAL writes, lock calls, random
reads, socket traffic; not ``futex``, whose count is how often threads happened to meet
on a lock, not work done). ``os.getppid()`` is the marker between figures: callgrind dumps
at it, and in the strace log it separates the figures' calls. Per message = the figure's
total / N. Start-up and the drain's prefill fall between markers of their own.

The baseline (``tests/bench/baseline-cost.json``) is the figures of the commit that wrote
it, with the Python and SQLite versions they were measured on: a different interpreter or
SQLite is a different baseline (the check says so when they differ). It changes only
with ``--update``, in a commit whose message says why the cost moved.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BASELINE = REPO / "tests" / "bench" / "baseline-cost.json"
TOLERANCE = 0.08  # fail above +8 %
MESSAGES = 128  # per figure: small, the counts are exact whatever the size

WORKLOAD = r"""
import os, sys, threading, time, socket, http.client, json
sys.path.insert(0, sys.argv[1])
n, work = int(sys.argv[2]), sys.argv[3]
import mqlite
from mqlite import OutMessage, QueueConfig
mq = mqlite.open_embedded("file:" + work + "/gate.db", background=False, sync="NORMAL")
for q in ("one", "batch", "drain", "http"):
    mq.create_queue(q, QueueConfig(lock_duration_ms=3_600_000))
body = bytes(range(256))
for _ in range(4):  # warm the statement cache and the code paths
    mq.send_one("one", OutMessage(body=body))
mq.send("drain", [OutMessage(body=body)])
got = mq.receive("drain", max_messages=64)
mq.complete_batch("drain", [(m.seq_number, m.lock_token) for m in got])
os.getppid()  # 1: start-up
for _ in range(n):
    mq.send_one("one", OutMessage(body=body))
os.getppid()  # 2: send_one
for _ in range(n // 64):
    mq.send("batch", [OutMessage(body=body) for _ in range(64)])
os.getppid()  # 3: send 64
for _ in range(n // 64):
    mq.send("drain", [OutMessage(body=body) for _ in range(64)])
os.getppid()  # 4: prefill
while got := mq.receive("drain", max_messages=64):
    mq.complete_batch("drain", [(m.seq_number, m.lock_token) for m in got])
os.getppid()  # 5: drain 64
mq.close()
import uvicorn
from mqlite.config import Settings
from mqlite.server.app import BrokerApp
token = "mqk_gate_" + "a" * 24
app = BrokerApp(Settings.from_env({"MQLITE_DB": "file:" + work + "/http.db",
                                   "MQLITE_TOKENS": token, "MQLITE_ACCESS_LOG": "errors"}))
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); port = sock.getsockname()[1]
config = uvicorn.Config(app, log_level="error", lifespan="on", access_log=False)
server = uvicorn.Server(config)
thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
thread.start()
while not server.started:
    time.sleep(0.01)
conn = http.client.HTTPConnection("127.0.0.1", port)
def rpc(verb, payload):
    conn.request("POST", "/mqlite.v1." + verb, json.dumps(payload),
                 {"Content-Type": "application/json", "Authorization": "Bearer " + token})
    answer = conn.getresponse(); data = answer.read()
    if answer.status != 200:
        raise SystemExit(f"{verb}: {answer.status} {data[:300]!r}")
    return json.loads(data)
rpc("AdminService/CreateQueue", {"name": "http", "config": {"lock_duration_ms": 3600000}})
import base64
b64 = base64.b64encode(body).decode()
def fill():
    for _ in range(n // 64):
        rpc("QueueService/Send", {"queue": "http", "messages": [{"body": b64}] * 64})
def drain():
    while True:
        answer = rpc("QueueService/Receive", {"queue": "http", "max_messages": 64})
        got = answer.get("messages") or []
        if not got:
            return
        rpc("QueueService/CompleteBatch", {"queue": "http", "messages": [
            {"seq_number": m["seq_number"], "lock_token": m["lock_token"]} for m in got]})
fill(); drain()  # warm
fill()
os.getppid()  # 6: HTTP prefill
drain()
os.getppid()  # 7: HTTP receive 64 + complete_batch
conn.close()
server.should_exit = True
thread.join()
"""

FIGURES = {"send_one": 2, "send_64": 3, "drain_64": 5, "http_receive_complete_64": 7}


def _run_callgrind(work: Path, n: int) -> dict[str, int]:
    out = work / "cg.out"
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--dump-before=getppid",
         f"--callgrind-out-file={out}", sys.executable, str(work / "workload.py"),
         str(REPO / "app"), str(n), str(work)],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"callgrind failed ({done.returncode}):\n{done.stderr[-3000:]}")
    totals: dict[int, int] = {}
    for dump in work.glob("cg.out.*"):
        match = re.search(r"^(?:summary|totals): (\d+)", dump.read_text(), re.M)
        if match and dump.suffix[1:].isdigit():
            totals[int(dump.suffix[1:])] = int(match.group(1))
    missing = [f for f, k in FIGURES.items() if k not in totals]
    if missing:
        raise RuntimeError(f"callgrind: no dump for {missing} (got {sorted(totals)})")
    return {f: round(totals[k] / n) for f, k in FIGURES.items()}


def _run_strace(work: Path, n: int) -> dict[str, float]:
    for leftover in work.glob("*.db*"):
        leftover.unlink()
    log = work / "strace.log"
    done = subprocess.run(
        ["strace", "-f", "-qq", "-o", str(log), sys.executable, str(work / "workload.py"),
         str(REPO / "app"), str(n), str(work)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"strace failed ({done.returncode}):\n{done.stderr[-3000:]}")
    segment, counts = 1, {1: 0}
    for line in log.read_text().splitlines():
        if re.match(r"^\d+\s+getppid\(", line):
            segment += 1  # calls after marker k-1, up to marker k: figure k (as callgrind)
            counts[segment] = 0
        elif re.match(r"^\d+\s+\w+\(", line) and not re.match(r"^\d+\s+futex\(", line):
            counts[segment] += 1  # (a resumed call was counted unfinished; futex: below)
    return {f: round(counts.get(k, 0) / n, 2) for f, k in FIGURES.items()}


def measure(n: int = MESSAGES) -> dict[str, object]:
    for tool in ("valgrind", "strace"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not installed (ops/ci/install-deps.sh installs it)")
    n = max(64, n // 64 * 64)
    work = Path(tempfile.mkdtemp(prefix="mqlite-gate-"))
    try:
        (work / "workload.py").write_text(WORKLOAD)
        syscalls = _run_strace(work, n)
        for leftover in work.glob("*.db*"):
            leftover.unlink()
        instructions = _run_callgrind(work, n)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "messages": n,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "instructions_per_message": instructions,
        "syscalls_per_message": syscalls,
    }


def compare(now: dict[str, object], base: dict[str, object]) -> tuple[list[str], list[str]]:
    """(the report's lines, the figures over the tolerance)."""
    lines = ["| figure | baseline | now | change |", "|---|---:|---:|---:|"]
    over: list[str] = []
    for kind in ("instructions_per_message", "syscalls_per_message"):
        was: dict[str, float] = base[kind]  # type: ignore[assignment]
        is_: dict[str, float] = now[kind]  # type: ignore[assignment]
        for figure in FIGURES:
            old, new = was.get(figure), is_[figure]
            if old is None:
                lines.append(f"| {kind} {figure} | (none) | {new:,} | new |")
                over.append(f"{kind} {figure}: not in the baseline")
                continue
            change = (new - old) / old if old else 0.0
            lines.append(f"| {kind} {figure} | {old:,} | {new:,} | {change:+.1%} |")
            if new > old * (1 + TOLERANCE) and new - old > 0.5:
                over.append(f"{kind} {figure}: {old:,} -> {new:,} ({change:+.1%})")
    for key in ("python", "sqlite"):
        if now[key] != base[key]:
            lines.append(
                f"note: baseline measured on {key} {base[key]}, this run on {now[key]}: "
                "instruction counts differ across versions (--update in a commit saying so)"
            )
    return lines, over


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="rewrite the baseline file")
    ap.add_argument("--messages", type=int, default=MESSAGES)
    args = ap.parse_args(argv)
    now = measure(args.messages)
    if args.update:
        BASELINE.write_text(json.dumps(now, indent=2) + "\n")
        print(f"baseline written: {BASELINE.relative_to(REPO)}\n{json.dumps(now, indent=2)}")
        return 0
    lines, over = compare(now, json.loads(BASELINE.read_text()))
    print("\n".join(lines))
    if over:
        print(f"over +{TOLERANCE:.0%}: " + "; ".join(over))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
