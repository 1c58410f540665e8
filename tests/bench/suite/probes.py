"""What the suite reads about a process from /proc: CPU seconds, bytes handed to storage,
peak RSS (reset before each cell), and the size of a data directory.

Every probe takes a list of pids, so "the broker" can be a process tree (RabbitMQ's
``beam.smp`` under its start script, gunicorn's master and worker). A pid that has gone
reads as zero rather than failing the cell.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()  # fields from 3 (state) on


def cpu_seconds(pids: Iterable[int]) -> float:
    """utime + stime of every thread of each process (its children not included)."""
    total = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields:
            total += int(fields[11]) + int(fields[12])  # proc(5) fields 14 and 15
    return total / CLK_TCK


def io_counters(pid: int) -> dict[str, int]:
    try:
        lines = Path(f"/proc/{pid}/io").read_text().splitlines()
    except OSError:
        return {}
    return {k: int(v) for k, v in (line.split(": ") for line in lines)}


def write_bytes(pids: Iterable[int]) -> int:
    """Bytes these processes caused to be sent to the storage layer (``write_bytes``: page
    cache pages they dirtied, WAL and journal included; socket traffic is not counted)."""
    return sum(io_counters(p).get("write_bytes", 0) for p in pids)


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kb(pids: Iterable[int]) -> int:
    return sum(_status_kb(p, "VmRSS") for p in pids)


def peak_rss_kb(pids: Iterable[int]) -> int:
    """VmHWM summed over the processes: each one's peak since its last reset."""
    return sum(_status_kb(p, "VmHWM") for p in pids)


def reset_peak_rss(pids: Iterable[int]) -> None:
    """Writing 5 to clear_refs sets VmHWM to the current RSS (Linux >= 4.0), so a
    long-running broker's peak is measured per cell, not over its lifetime."""
    for pid in pids:
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/clear_refs").write_text("5")


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (any thread's)."""
    kids: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                kids += [
                    int(x) for x in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()
                ]
    return kids


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children(p))
    return out


def disk_bytes(paths: Iterable[Path]) -> int:
    """Allocated bytes (st_blocks) of every file under the paths: what the data occupies on
    disk, sparse holes and preallocation as the filesystem reports them."""
    total = 0
    for root in paths:
        if root.is_file():
            total += root.stat().st_blocks * 512
            continue
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


@dataclass
class RssSampler:
    """RSS of some processes every ``every_s`` seconds on a thread: the soak's series."""

    groups: dict[str, list[int]]
    every_s: float = 0.25
    series: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> RssSampler:
        t0 = time.monotonic()

        def run() -> None:
            while not self._stop.is_set():
                now = round(time.monotonic() - t0, 3)
                for name, pids in self.groups.items():
                    self.series.setdefault(name, []).append((now, rss_kb(pids)))
                self._stop.wait(self.every_s)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, list[tuple[float, int]]]:
        self._stop.set()
        if self._thread:
            self._thread.join()
        return self.series
