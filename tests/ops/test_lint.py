"""The ops files as code: yamllint over ops/ (ops/.yamllint.yml), shellcheck over
ops/ci/install-deps.sh, each shown to reject a broken copy; the install script is
idempotent and keeps its one-package-per-line list (merges of it are unions)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

from ops_support import INSTALL_DEPS, OPS, fails, ok, run

BIN = Path(sys.executable).parent


def test_yaml_is_clean() -> None:
    ok([str(BIN / "yamllint"), "-s", "-c", ".yamllint.yml", "."], cwd=OPS)


def test_yamllint_rejects_a_duplicate_key(tmp_path: Path) -> None:
    shutil.copy(OPS / ".yamllint.yml", tmp_path)
    bad = (OPS / "alertmanager" / "alertmanager.yml").read_text() + "route: {}\n"
    (tmp_path / "am.yml").write_text(bad)
    out = fails([str(BIN / "yamllint"), "-s", "-c", ".yamllint.yml", "."], cwd=tmp_path)
    assert "key-duplicates" in out, out


def test_install_script_is_clean(tmp_path: Path) -> None:
    ok([str(BIN / "shellcheck"), str(INSTALL_DEPS), str(INSTALL_DEPS.with_name("run-tests.sh")),
        str(INSTALL_DEPS.with_name("fresh-check.sh"))])  # fmt: skip
    bad = tmp_path / "bad.sh"
    bad.write_text(INSTALL_DEPS.read_text().replace('"${missing[@]}"', "${missing[@]}"))
    out = fails([str(BIN / "shellcheck"), str(bad)])
    assert "SC2068" in out, out  # unquoted array expansion


def test_install_script_lists_one_package_per_line() -> None:
    text = INSTALL_DEPS.read_text()
    block = re.search(r"# --- apt packages: begin.*?\n(.*?)# --- apt packages: end", text, re.S)
    assert block, "the delimited package list is missing"
    lines = [
        ln.strip()
        for ln in block.group(1).splitlines()
        if ln.strip() and not ln.strip().startswith("#")  # a comment says who needs it
    ]
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", ln) for ln in lines), lines
    assert {"prometheus", "prometheus-alertmanager"} <= set(lines)
    assert "--no-install-recommends" in text


def test_install_script_is_idempotent(debian_tools: dict[str, str], tmp_path: Path) -> None:
    # Nothing to install: no apt-get at all. Shown by an apt-get earlier on PATH that
    # records any call, not by a wall-time bound (which failed at load 16: issue 25).
    calls = tmp_path / "apt-calls"
    shim = tmp_path / "bin" / "apt-get"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 1\n')
    shim.chmod(0o755)
    path = f"{shim.parent}:{os.environ.get('PATH', '')}"
    r = run(["env", f"PATH={path}", "bash", str(INSTALL_DEPS)])
    assert r.returncode == 0 and r.stdout == r.stderr == "", r.stdout + r.stderr
    assert not calls.exists(), calls.read_text()
