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

BURN = "n = 0\\nfor i in range(3_000_000):\\n    n += i"


def test_a_child_burns() -> None:
    subprocess.run([sys.executable, "-c", BURN], check=True)


def test_a_live_child_burns() -> None:
    # Still running at the test's end: counted from /proc, not from RUSAGE_CHILDREN.
    child = subprocess.Popen([sys.executable, "-c", BURN + "\\nimport time; time.sleep(30)"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(f"/proc/{child.pid}/stat") as f:
            ticks = sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
        if ticks >= 10:  # 0.1 s of CPU: past the burn's start at least
            break
        time.sleep(0.01)
    CHILDREN.append(child)


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
    # The live child had used 0.1 s of CPU (10 ticks) when its test ended.
    assert cpu["test_a_live_child_burns"] >= 0.1 > cpu["test_a_sleep"], text
    # One line per test as the run goes (a long run can be read midway).
    running = report.with_name("cpu.txt.tests").read_text().splitlines()
    assert len(running) == 3 and all(len(line.split()) == 3 for line in running), running
