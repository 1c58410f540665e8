"""``MQLITE_TEST_CPU=FILE`` (tests/cpu_profile.py) charges each test the CPU of the
processes it started, not just the pytest process's own, and ranks modules by it (issue
25: under load the suite's wall time follows its CPU). Structure only: a test whose child
burns CPU ranks above one that sleeps, whatever the machine's speed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

SAMPLE = """
import subprocess, sys, time

# 0.2 s of CPU however fast the machine: the child's own CPU clock decides.
BURN = "import time\\nwhile time.thread_time() < 0.2:\\n    pass"


def test_a_child_burns() -> None:
    subprocess.run([sys.executable, "-c", BURN], check=True)


def test_a_live_child_burns(tmp_path) -> None:
    # Still running at the test's end: counted from /proc, not from RUSAGE_CHILDREN. It
    # says when its burn is over (none of it spills into the next test), then idles.
    done = tmp_path / "burnt"
    code = BURN + f"\\nopen({str(done)!r}, 'w').close()\\ntime.sleep(60)"
    CHILDREN.append(subprocess.Popen([sys.executable, "-c", code]))
    deadline = time.monotonic() + 120
    while not done.exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_sleep() -> None:
    time.sleep(0.3)


CHILDREN: list = []


def teardown_module() -> None:
    for child in CHILDREN:
        child.kill()
        child.wait()
"""


def test_the_report_charges_each_test_its_children_and_ranks_modules(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    (tmp_path / "conftest.py").write_text(
        "from cpu_profile import register\n\n\n"
        "def pytest_configure(config):\n    register(config)\n"
    )
    report = tmp_path / "cpu.txt"
    env = {**os.environ, "MQLITE_TEST_CPU": str(report), "PYTHONPATH": str(TESTS)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_sample.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = report.read_text()
    assert text.startswith("total: "), text
    assert "modules by CPU" in text and "test_sample.py\n" in text, text
    cpu = {}
    for line in text.split("tests by CPU (cpu_s wall_s):\n", 1)[1].splitlines():
        fields = line.split()
        cpu[fields[2].rsplit("::", 1)[1]] = float(fields[0])
    assert set(cpu) == {"test_a_child_burns", "test_a_live_child_burns", "test_a_sleep"}
    assert cpu["test_a_child_burns"] > cpu["test_a_sleep"], text
    # The live child had burnt its 0.2 s of CPU when its test ended.
    assert cpu["test_a_live_child_burns"] >= 0.15 > cpu["test_a_sleep"], text
    # One line per test as the run goes (a long run can be read midway).
    running = report.with_name("cpu.txt.tests").read_text().splitlines()
    assert len(running) == 3 and all(len(line.split()) == 3 for line in running), running
