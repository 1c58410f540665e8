"""Helpers of the drills tier: run a drill as an operator does, read its JSON report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

DRILLS = Path(__file__).resolve().parents[2] / "ops" / "drills"


def drill(name: str, *args: str, timeout: float = 300) -> tuple[int, dict[str, Any], str]:
    """(exit status, the JSON report, stderr's progress lines)."""
    done = subprocess.run(
        [sys.executable, str(DRILLS / name), "--json", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def checks(report: dict[str, Any]) -> dict[str, bool]:
    return {c["name"]: c["ok"] for c in report["checks"]}
