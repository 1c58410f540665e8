"""Layering that holds at run time, not only in import-linter's static graph."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mqlite import defaults
from mqlite.types import QueueConfig

HEAVY = ("mqlite.engine", "sqlite3", "_sqlite3", "re2", "simpleeval", "apscheduler")


def loaded_after(code: str) -> list[str]:
    """The heavy modules present in ``sys.modules`` after ``code`` runs in a fresh
    interpreter (no site customisation can pre-load them for us)."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    modules = json.loads(out.strip().splitlines()[-1])
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_import_mqlite_loads_no_engine_sqlite_re2_simpleeval_or_apscheduler() -> None:
    assert loaded_after("import mqlite") == []


def test_a_remote_client_loads_no_engine() -> None:
    code = (
        "import mqlite\n"
        "c = mqlite.connect('http://127.0.0.1:9', 'tok')\n"
        "c.close()\n"
        "import mqlite.aio\n"
        "r = mqlite.Receiver\n"
    )
    assert loaded_after(code) == []


def test_open_embedded_is_resolved_on_first_use() -> None:
    loaded = loaded_after("import mqlite\nmqlite.open_embedded\n")
    assert "mqlite.engine" in loaded and "sqlite3" in loaded


def test_queue_config_defaults_equal_the_single_source() -> None:
    """types.py (a leaf) spells two defaults as literals so it imports nothing of ours."""
    assert QueueConfig().lock_duration_ms == defaults.LOCK_DURATION_MS
    assert QueueConfig().max_delivery_count == defaults.MAX_DELIVERY_COUNT
    assert QueueConfig().retry_multiplier == defaults.RETRY_MULTIPLIER
    assert QueueConfig().retry_max_delay_ms == defaults.RETRY_MAX_DELAY_MS


def test_property_tests_are_reproducible_by_default() -> None:
    """CI runs the derandomized profile: a failing example replays on any machine."""
    code = "import conftest\nfrom hypothesis import settings\nprint(settings.default.derandomize)"
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_PROFILE"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=Path(__file__).parent.parent,
        env=env,
    ).stdout
    assert out.strip() == "True"
