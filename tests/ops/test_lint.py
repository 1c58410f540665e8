"""The ops files as code: yamllint over ops/ (ops/.yamllint.yml), shellcheck over
ops/ci/install-deps.sh, each shown to reject a broken copy; the install script is
idempotent and keeps its one-package-per-line list (merges of it are unions)."""

from __future__ import annotations

import re
import shutil
import sys
import time
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


def test_install_script_is_idempotent(debian_tools: dict[str, str]) -> None:
    started = time.monotonic()
    r = run(["bash", str(INSTALL_DEPS)])
    assert r.returncode == 0 and r.stdout == r.stderr == "", r.stdout + r.stderr
    assert time.monotonic() - started < 5  # nothing to install: no apt-get at all
