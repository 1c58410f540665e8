"""The Receiver's facade seam (issue 27): clients and transports use ``sdk/receiver.py``,
never one of its parts (``receiver_core``, ``claiming``, ``handling``, ``lease_renewal``,
``stopping``), so the parts can be reshaped without touching a caller.

The import-linter contract ``receiver-facade`` is proven able to fail: a probe import of a
part planted in a temporary copy of the package (in the kombu transport, a client of the
SDK) breaks it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "app" / "mqlite"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """The facade contract on the package under ``root/app`` (never the installed one)."""
    env = {**os.environ, "PYTHONPATH": str(root / "app")}
    return subprocess.run(
        [
            str(LINT_IMPORTS),
            "--no-cache",
            "--config",
            "pyproject.toml",
            "--contract",
            "receiver-facade",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(APP, tmp_path / "app" / "mqlite", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_receiver_facade_contract_holds_and_breaks_on_a_probe_import(copy: Path) -> None:
    clean = lint_imports(copy)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    worker = copy / "app" / "mqlite" / "kombu" / "polling.py"
    worker.write_text(
        worker.read_text(encoding="utf-8") + "\nimport mqlite.sdk.claiming  # the probe\n",
        encoding="utf-8",
    )
    probed = lint_imports(copy)
    assert probed.returncode != 0
    assert "mqlite.kombu.polling -> mqlite.sdk.claiming" in probed.stdout
