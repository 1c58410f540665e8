"""The cost gate (issue 29, ``tests/bench/gate.py``): instructions and system calls per
message of send_one, send 64, a drain of 64 and Receive + CompleteBatch over HTTP, against
the baseline committed in ``tests/bench/baseline-cost.json``. The wave before this gate
made send_one cost a third more while every issue's own check stayed within a few
percent: this one compares with a fixed baseline, not with the previous commit, so small
steps add up to a failure. The baseline moves only with ``gate.py --update``."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GATE = REPO / "tests" / "bench" / "gate.py"

spec = importlib.util.spec_from_file_location("cost_gate", GATE)
assert spec is not None and spec.loader is not None
gate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gate)


def test_instructions_and_system_calls_per_message_within_8_percent_of_the_baseline() -> None:
    done = subprocess.run([sys.executable, str(GATE)], capture_output=True, text=True,
                          timeout=900, cwd=REPO)  # fmt: skip
    print(done.stdout)  # the figures, shown by pytest on a failure
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    for figure in gate.FIGURES:
        assert f"| instructions_per_message {figure} |" in done.stdout
        assert f"| syscalls_per_message {figure} |" in done.stdout


def test_the_gate_fails_above_8_percent_and_names_the_figure() -> None:
    base = json.loads((REPO / "tests" / "bench" / "baseline-cost.json").read_text())
    assert set(base["instructions_per_message"]) == set(gate.FIGURES)
    assert set(base["syscalls_per_message"]) == set(gate.FIGURES)
    within = json.loads(json.dumps(base))
    within["instructions_per_message"]["send_one"] *= 1.07
    assert gate.compare(within, base)[1] == []
    over = json.loads(json.dumps(base))
    over["instructions_per_message"]["send_one"] *= 1.09
    over["syscalls_per_message"]["drain_64"] = base["syscalls_per_message"]["drain_64"] * 1.2 + 1
    failures = gate.compare(over, base)[1]
    assert len(failures) == 2
    assert failures[0].startswith("instructions_per_message send_one")
    assert failures[1].startswith("syscalls_per_message drain_64")
