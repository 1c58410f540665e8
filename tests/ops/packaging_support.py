"""Shared paths and a runner for the static checks of the packaging files (Dockerfile,
compose, fly.toml, systemd units, Caddyfile); ops_support.py serves the monitoring files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent  # hadolint, check-jsonschema, mqlite live here


def run(*cmd: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run a tool to completion (never raises on a non-zero exit; callers assert)."""
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [str(c) for c in cmd], capture_output=True, text=True, timeout=120, **kwargs
    )
