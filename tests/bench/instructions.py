"""Engine cost in CPU instructions (valgrind's callgrind), this tree against a git revision.

Run from the repository root (not collected by pytest)::

    .venv/bin/python tests/bench/instructions.py --against HEAD~1 [--messages 400]

Wall-clock benchmarks on a shared 2-core machine swing by 2x between runs; instruction
counts do not (the same binary and inputs give the same total, whatever else runs). Each
side runs the same fixed workload on a fresh file database -- ``send_one`` N times,
``send`` in batches of 64, then a drain by ``receive(64)`` + ``complete_batch`` -- once per
figure under ``valgrind --tool=callgrind``, the other side's code checked out in a temporary
git worktree. It prints instructions per message and the ratio this tree / the revision.
Start-up (interpreter, imports, opening) is measured with an empty workload and subtracted.
It prints; it asserts nothing. Needs valgrind (Debian's package).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

WORKLOAD = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import mqlite
from mqlite import OutMessage, QueueConfig
figure, n, db = sys.argv[2], int(sys.argv[3]), sys.argv[4]
mq = mqlite.open_embedded("file:" + db, background=False)
mq.create_queue("q", QueueConfig(lock_duration_ms=3_600_000))
body = bytes(range(256))
if figure == "send_one":
    for _ in range(n):
        mq.send_one("q", OutMessage(body=body))
elif figure == "batch64":
    for _ in range(n // 64):
        mq.send("q", [OutMessage(body=body)] * 64)
elif figure == "drain":
    for _ in range(n // 64):
        mq.send("q", [OutMessage(body=body)] * 64)
    os.environ["MQLITE_MARK"] = "1"
    while got := mq.receive("q", max_messages=64):
        mq.complete_batch("q", [(m.seq_number, m.lock_token) for m in got])
mq.close()
"""

FIGURES = ("send_one", "batch64", "drain")

# All three figures in ONE callgrind run (the suite's use: valgrind takes ~30 s to start
# the interpreter alone): os.getppid() is a marker, and --dump-before=getppid writes the
# cost accumulated since the previous marker, so each dump between two markers is one
# figure exactly, start-up and the drain's prefill falling into dumps of their own.
ONE_RUN = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import mqlite
from mqlite import OutMessage, QueueConfig
n, db = int(sys.argv[2]), sys.argv[3]
mq = mqlite.open_embedded("file:" + db, background=False)
for q in ("one", "batch", "drain"):
    mq.create_queue(q, QueueConfig(lock_duration_ms=3_600_000))
body = bytes(range(256))
os.getppid()
for _ in range(n):
    mq.send_one("one", OutMessage(body=body))
os.getppid()
for _ in range(n // 64):
    mq.send("batch", [OutMessage(body=body)] * 64)
os.getppid()
for _ in range(n // 64):
    mq.send("drain", [OutMessage(body=body)] * 64)
os.getppid()
while got := mq.receive("drain", max_messages=64):
    mq.complete_batch("drain", [(m.seq_number, m.lock_token) for m in got])
os.getppid()
mq.close()
"""
SEGMENTS = {"send_one": 2, "batch64": 3, "drain": 5}  # dump number -> figure


def this_tree(n: int, work: Path) -> dict[str, object]:
    """Instructions per message of each figure for this tree, from one callgrind run."""
    work.mkdir(parents=True, exist_ok=True)
    n = max(64, n // 64 * 64)
    script, out = work / "one_run.py", work / "cg.out"
    script.write_text(ONE_RUN)
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--dump-before=getppid",
         f"--callgrind-out-file={out}", sys.executable, str(script), str(REPO / "app"),
         str(n), str(work / "instr.db")],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"callgrind failed ({done.returncode}):\n{done.stderr[-2000:]}")
    totals = {}
    for dump in work.glob("cg.out.*"):
        match = re.search(r"^(?:summary|totals): (\d+)", dump.read_text(), re.M)
        if match and dump.suffix[1:].isdigit():
            totals[int(dump.suffix[1:])] = int(match.group(1))
    figures = {f: round(totals[k] / n) for f, k in SEGMENTS.items() if k in totals}
    if len(figures) != len(SEGMENTS):
        raise RuntimeError(
            f"callgrind dumps: expected {sorted(SEGMENTS.values())}, got {sorted(totals)}"
        )
    return {"messages": n, "per_message": figures, "startup": totals.get(1)}


def instructions(app_dir: Path, figure: str, n: int, work: Path) -> int:
    script = work / "workload.py"
    script.write_text(WORKLOAD)
    out = work / f"cg.{os.getpid()}.{figure}.{n}"
    db = work / f"{figure}-{n}.db"
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
         str(script), str(app_dir), figure, str(n), str(db)],
        capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    match = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or match is None:
        raise RuntimeError(f"callgrind failed ({done.returncode}):\n{done.stderr[-2000:]}")
    out.unlink(missing_ok=True)
    return int(match.group(1))


def per_message(app_dir: Path, figure: str, n: int, work: Path) -> float:
    base = instructions(app_dir, figure, 0, work)
    return (instructions(app_dir, figure, n, work) - base) / n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="a git revision to compare with")
    parser.add_argument("--messages", type=int, default=384)
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (apt-get install valgrind)")
    work = Path(tempfile.mkdtemp(prefix="mqlite-instr-"))
    old = work / "old"
    try:
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(old),
                        args.against], check=True)  # fmt: skip
        print(f"| figure (instructions per message, N={args.messages}) | {args.against} "
              "| this tree | ratio |")  # fmt: skip
        print("|---|---:|---:|---:|")
        for figure in FIGURES:
            before = per_message(old / "app", figure, args.messages, work)
            after = per_message(REPO / "app", figure, args.messages, work)
            print(f"| {figure} | {before:,.0f} | {after:,.0f} | {after / before:.3f}x |")
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)],
                       check=False, capture_output=True)  # fmt: skip
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
