"""Where the suite's CPU goes: per-test and per-module CPU seconds, children included.

Enabled by ``MQLITE_TEST_CPU=FILE`` (tests/conftest.py registers it): the suite must stay
under its time budget on a loaded 2-core CI machine (issue 25), where wall time follows
CPU, not the sleeps. Wall durations (``--durations``) hide a broker subprocess burning a
core behind a test that waits on it; CPU seconds do not.

A test's CPU is the change, from before its setup to after its teardown, of
  the pytest process's own CPU (every thread)
  + its reaped children (``RUSAGE_CHILDREN``: a broker stopped in the test's teardown)
  + every live descendant's CPU read from ``/proc`` (a module-scoped broker, sqld,
    Chromium: still running, so not yet in ``RUSAGE_CHILDREN``).
A descendant that dies between two samples moves from the third term to the second when
it is reaped, so the sum only grows; the CPU of a process whose parent died before it is
lost (rare: daemonising tools such as podman's conmon). Module fixtures land on the
module's first and last tests; the module totals are the figures to rank.

The report (FILE): the total, then every module and the slowest tests by CPU seconds,
each with its wall seconds; ``FILE.tests`` gets one line per test as the run goes.
Under pytest-xdist each worker writes its own ``FILE-gwN`` (and ``FILE-gwN.tests``); the
controller's FILE then has no tests, and its total is the whole run's CPU (the workers
are its children).
"""

from __future__ import annotations

import os
import resource
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_TICK = os.sysconf("SC_CLK_TCK")


def _descendants_cpu(root: int) -> float:
    """CPU seconds of every live descendant of ``root`` (utime+stime+cutime+cstime)."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            raw = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        fields = raw[raw.rindex(b")") + 2 :].split()
        # After the command: state ppid ... utime(12) stime(13) cutime(14) cstime(15).
        parent[int(name)] = int(fields[1])
        cpu[int(name)] = sum(int(f) for f in fields[11:15]) / _TICK
    total = 0.0
    for pid in cpu:
        up = parent.get(pid)
        seen = 0
        while up is not None and up > 1 and seen < 64:
            if up == root:
                total += cpu[pid]
                break
            up = parent.get(up)
            seen += 1
    return total


def _cpu_now() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    return own + _descendants_cpu(os.getpid())


class CpuProfile:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.running = out.with_name(out.name + ".tests")
        self.running.write_text("")
        self.tests: dict[str, tuple[float, float]] = {}
        self.start_cpu = _cpu_now()
        self.start_wall = time.monotonic()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, None]:
        cpu0, wall0 = _cpu_now(), time.monotonic()
        yield
        cpu, wall = _cpu_now() - cpu0, time.monotonic() - wall0
        self.tests[item.nodeid] = (cpu, wall)
        with self.running.open("a") as f:  # as it goes: a long run can be read midway
            f.write(f"{cpu:.3f} {wall:.3f} {item.nodeid}\n")

    def pytest_sessionfinish(self) -> None:
        # The session fixtures' teardown (sqld, Chromium) runs before this hook.
        total_cpu = _cpu_now() - self.start_cpu
        total_wall = time.monotonic() - self.start_wall
        modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        for nodeid, (cpu, wall) in self.tests.items():
            row = modules[nodeid.split("::", 1)[0]]
            row[0] += cpu
            row[1] += wall
            row[2] += 1
        lines = [
            f"total: {total_cpu:.1f} s CPU, {total_wall:.1f} s wall, {len(self.tests)} tests "
            f"(outside tests: {total_cpu - sum(c for c, _ in self.tests.values()):.1f} s CPU)",
            "",
            "modules by CPU (cpu_s wall_s tests):",
        ]
        for mod, (cpu, wall, n) in sorted(modules.items(), key=lambda kv: -kv[1][0]):
            lines.append(f"{cpu:8.1f} {wall:8.1f} {int(n):5d}  {mod}")
        lines += ["", "tests by CPU (cpu_s wall_s):"]
        for nodeid, (cpu, wall) in sorted(self.tests.items(), key=lambda kv: -kv[1][0])[:60]:
            lines.append(f"{cpu:8.2f} {wall:8.2f}  {nodeid}")
        self.out.write_text("\n".join(lines) + "\n")


def register(config: pytest.Config) -> None:
    out = os.environ.get("MQLITE_TEST_CPU")
    worker = getattr(config, "workerinput", {}).get("workerid")  # an xdist worker
    if out and worker:
        out = f"{out}-{worker}"
    if out:
        config.pluginmanager.register(CpuProfile(Path(out)), "mqlite-cpu-profile")
