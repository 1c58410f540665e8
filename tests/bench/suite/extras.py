"""The experiments that run once per run, after the interleaved repetitions, because each
is one long shape rather than a figure to repeat: the deep-backlog drain with bloat and
reclaim (``backlog.py``, embedded mqlite), the soak with ramp-down and consumer churn
(``soak.py``, against the ``mqlite serve`` the runner started) and the engine's
instruction counts (``instructions``, valgrind's callgrind; full mode or asked for, as
valgrind needs ~30 s just to start the interpreter).

Each is skipped, with the reason recorded, when what it needs is not in this run.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import backlog
import soak

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # instructions.py

import instructions

NAMES = ("backlog", "soak", "instructions")
BODY = bytes(range(256))


def run(
    mode: dict[str, Any],
    systems: list[str],
    started: list[Any],
    tmp: Path,
    wanted: set[str] | None,
    with_instructions: bool,
) -> tuple[dict[str, Any], dict[str, str]]:
    """(results by experiment, why each one not run was not run)."""
    out: dict[str, Any] = {}
    absent: dict[str, str] = {}

    def want(name: str) -> bool:
        return wanted is None or name in wanted

    if want("backlog"):
        if "mqlite" in systems:
            print(f"bench: backlog of {mode['backlog']:,} on mqlite", file=sys.stderr)
            out["backlog"] = backlog.run(tmp / "backlog", mode["backlog"], BODY)
        else:
            absent["backlog"] = "system mqlite not in this run"
    if want("soak"):
        server = next((s for s in started if s.name == "mqlite-http"), None)
        if server is not None:
            print(f"bench: soak of mqlite serve, 4 phases of {mode['soak_s']} s", file=sys.stderr)
            out["soak"] = soak.run(server, mode["soak_s"], mode["churn_s"], BODY)
        else:
            absent["soak"] = "no mqlite serve in this run (systems mqlite-http-*)"
    if want("instructions"):
        if not with_instructions:
            absent["instructions"] = "only in the full run or with --instructions (valgrind)"
        elif shutil.which("valgrind") is None:
            absent["instructions"] = "Debian package valgrind is not installed"
        else:
            print("bench: instruction counts under callgrind", file=sys.stderr)
            out["instructions"] = instructions.this_tree(mode["instr_msgs"], tmp / "instr")
    return out, absent
