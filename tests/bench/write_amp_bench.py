"""Bytes written per delivery, by body size: what a claim and a completion cost on disk.

Run from the repository root (not collected by pytest)::

    .venv/bin/python tests/bench/write_amp_bench.py [--messages 200] [--dir /some/disk]

For each body size (1 KiB, 64 KiB, 1 MiB) a fresh file database receives ``--messages``
messages; then every message is claimed (``receive``) and completed one at a time. The
bytes this process handed to ``write(2)``/``pwrite(2)`` (``wchar`` in ``/proc/self/io``:
WAL frames and checkpoints, before any page cache) are counted around the claims and
around the completions, and printed per message. A state change that rewrites the body
costs at least the body size per claim; one that does not costs a few pages. It prints;
it asserts nothing. The same run also reports the WAL bytes of the send itself.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "app"))

import mqlite  # the repo's app/ first
from mqlite import OutMessage, QueueConfig

SIZES = (1 << 10, 64 << 10, 1 << 20)


def written() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise RuntimeError("no wchar in /proc/self/io")


def measure(directory: Path, size: int, n: int) -> dict[str, float]:
    db = directory / f"amp-{size}.db"
    mq = mqlite.open_embedded(f"file:{db}", background=False)
    try:
        mq.create_queue("q", QueueConfig(lock_duration_ms=3_600_000))
        body = bytes(range(256)) * (size // 256)
        before = written()
        for _ in range(n):
            mq.send_one("q", OutMessage(body=body))
        sent = written() - before
        held = []
        before = written()
        for _ in range(n):
            held.extend(mq.receive("q"))
        claimed = written() - before
        before = written()
        for m in held:
            m.complete()
        completed = written() - before
        assert mq.stats("q").total == 0
    finally:
        mq.close()
    return {"send": sent / n, "claim": claimed / n, "complete": completed / n}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mqlite-amp-", dir=args.dir))
    try:
        print("| body | send (bytes/msg) | claim (bytes/msg) | complete (bytes/msg) |")
        print("|---:|---:|---:|---:|")
        for size in SIZES:
            r = measure(work, size, args.messages if size < (1 << 20) else args.messages // 4)
            label = f"{size >> 10} KiB" if size < (1 << 20) else "1 MiB"
            print(f"| {label} | {r['send']:,.0f} | {r['claim']:,.0f} | {r['complete']:,.0f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
