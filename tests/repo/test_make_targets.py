"""``make run`` installs the runtime only; test and lint tools come with their targets
(issue 9: the first ``make run`` should take as little time as possible). Read from
``make -n`` in a copy of the Makefile with no virtualenv, so every recipe is listed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def dry_run(target: str, where: Path) -> list[str]:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, where / name)
    # Not as a sub-make of `make test`: its MAKEFLAGS/MAKELEVEL would change the output.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", target],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def installs(lines: list[str]) -> list[str]:
    return [line for line in lines if " pip install" in line]


def test_run_installs_the_runtime_and_nothing_else(tmp_path: Path) -> None:
    lines = dry_run("run", tmp_path)
    assert [line.split()[-1] for line in installs(lines)] == ["."]  # no [test], no [lint]
    assert not any("--upgrade" in line for line in lines)
    assert lines[-1].endswith("/bin/mqlite serve")


@pytest.mark.parametrize(("target", "extra"), [("test", "'.[test]'"), ("lint", "'.[lint]'")])
def test_test_and_lint_bring_their_own_tools(tmp_path: Path, target: str, extra: str) -> None:
    assert [line.split()[-1] for line in installs(dry_run(target, tmp_path))] == [".", extra]


def test_venv_has_every_tool_for_a_developer(tmp_path: Path) -> None:
    got = sorted(line.split()[-1] for line in installs(dry_run("venv", tmp_path)))
    assert got == sorted([".", "'.[test]'", "'.[lint]'"])


def test_bench_installs_its_peers_then_runs_the_suite_and_test_does_not(tmp_path: Path) -> None:
    lines = dry_run("bench", tmp_path)
    assert lines[-3] == "tests/bench/suite/deps.sh .venv"
    assert lines[-2].endswith("/bin/python tests/bench/suite/run.py ")  # BENCH_ARGS empty
    # then the focused scripts' tables (issue 29: no hand-kept figure in benchmarks.md)
    assert lines[-1].endswith("/bin/python tests/bench/suite/focused.py")
    assert not any("bench/suite" in line for line in dry_run("test", tmp_path))


@pytest.mark.parametrize("failing", ["core", "service", "remote", "none"])
def test_make_test_fails_when_any_pytest_process_fails(tmp_path: Path, failing: str) -> None:
    """ops/ci/run-tests.sh runs the service tiers and the remote-store runs beside the core
    tiers: each tier in exactly one process per store, and the run fails when any fails
    (its log is printed)."""
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$MQLITE_E2E_STORE/$MQLITE_CONFORMANCE_REMOTE/$*" in\n'
        "  libsql/only/*) kind=remote ;;\n"
        "  */*--ignore=tests/appliance*) kind=core ;;\n"
        "  *) kind=service ;;\n"
        "esac\n"
        'echo "ran $kind: $*"\n'
        f'[ "$kind" != "{failing}" ]\n'
    )
    fake.chmod(0o755)
    script = REPO / "ops" / "ci" / "run-tests.sh"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MQLITE_")}
    proc = subprocess.run(
        [str(script), "-x"], env={**env, "PY": str(fake)}, capture_output=True, text=True
    )
    assert proc.returncode == (0 if failing == "none" else 1), proc.stdout + proc.stderr
    runs = [line for line in proc.stdout.splitlines() if line.startswith("ran ")]
    assert len(runs) == 3, proc.stdout
    core = next(r for r in runs if r.startswith("ran core"))
    service = next(r for r in runs if r.startswith("ran service"))
    remote = next(r for r in runs if r.startswith("ran remote"))
    for tier in ("appliance", "ops", "replication", "browser", "drills"):
        assert f"--ignore=tests/{tier}" in core and f" tests/{tier}" in service
        assert f"tests/{tier}" not in remote
    for tier in ("mcp", "docs"):  # no containers: in the core's worker pool
        assert f"tests/{tier}" not in core + service + remote
    # The e2e tier and the conformance suite once more on sqld (issue 16); the e2e modules
    # that start their own sqld run once, in the core process.
    assert remote.endswith(" tests/e2e tests/conformance"), remote
    for own in ("test_remote_faults.py", "test_remote_lease_serve.py"):
        assert f"--ignore=tests/e2e/{own}" in remote and own not in core
    assert all("-x" in run for run in runs)
    # The core tiers on two xdist workers, whole modules each (issue 25); the service and
    # remote processes keep their session fixtures (one image, one Chromium) in one process.
    assert " -n 2 --dist loadfile --no-loadscope-reorder " in core, core
    # Tests marked same_on_any_store run once, in the core process.
    assert "-m not same_on_any_store" in remote and "same_on_any_store" not in core
    assert " -n " not in service and " -n " not in remote
