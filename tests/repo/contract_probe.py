"""Proving an import-linter contract can fail: run one contract on a temporary copy of the
package, then plant a probe import in the copy and run it again (tests/repo/test_*_seam.py).
The copy, never the installed package, is what the contract reads."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "app" / "mqlite"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def copy_of_package(root: Path) -> Path:
    """``app/mqlite`` and ``pyproject.toml`` (the contracts) copied under ``root``."""
    shutil.copytree(APP, root / "app" / "mqlite", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def lint_contract(root: Path, contract: str) -> subprocess.CompletedProcess[str]:
    """``contract`` on the package under ``root/app``."""
    env = {**os.environ, "PYTHONPATH": str(root / "app")}
    command = [str(LINT_IMPORTS), "--no-cache", "--config", "pyproject.toml"]
    return subprocess.run(
        [*command, "--contract", contract],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def plant(root: Path, module: str, probe: str) -> None:
    """Append ``import probe`` to ``module`` (a path under ``app/mqlite``) of the copy."""
    path = root / "app" / "mqlite" / module
    path.write_text(
        path.read_text(encoding="utf-8") + f"\nimport {probe}  # the probe\n", encoding="utf-8"
    )


def assert_contract_catches(root: Path, contract: str, module: str, probe: str) -> None:
    """``contract`` holds on the copy under ``root``, then fails once ``module`` (a path
    under ``app/mqlite``) imports ``probe``, naming that import."""
    clean = lint_contract(root, contract)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    plant(root, module, probe)
    probed = lint_contract(root, contract)
    assert probed.returncode != 0
    importer = "mqlite." + module.removesuffix(".py").replace("/", ".")
    assert f"{importer} -> {probe}" in probed.stdout
