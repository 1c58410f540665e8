"""Shared fixtures: a fake clock and an embedded engine on a real SQLite file."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

import mqlite
from cpu_profile import register as register_cpu_profile
from mqlite.clock import FakeClock
from mqlite.filters import runtime as filter_runtime
from sqld_harness import Sqld, reset_database, sqld_binary

# Property tests are reproducible: the default profile derandomizes (the same examples on
# every run and machine, so a CI failure replays locally). HYPOTHESIS_PROFILE=explore
# draws fresh examples and prints the seed of a failure.
settings.register_profile("reproducible", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "reproducible"))

START_MS = 1_700_000_000_000


def pytest_configure(config: pytest.Config) -> None:
    # MQLITE_TEST_CPU=FILE writes where the CPU goes (tests/cpu_profile.py).
    register_cpu_profile(config)


# Under pytest-xdist (make test's core tiers, ``--dist loadfile --no-loadscope-reorder``) a
# module is one unit of work, handed out in collection order (xdist's own reorder, by
# number of tests, put the two-test cost gate last). In alphabetical order the two-minute
# modules came last too (the cost gate, tests/repo): one worker ran it alone for 2 min
# while the other had nothing left (the fresh loaded run of issue 25). The longest go
# first, so that the short ones fill the gaps at the end. Wall seconds of each module
# measured per worker at load 16 (MQLITE_TEST_CPU); modules not named keep their order
# after these. Stale figures only cost balance, never a test.
LONGEST_FIRST = (
    "tests/cli/test_cli_commands.py",  # 723 s
    "tests/cli/test_cli_first_hour_two.py",  # 243 s
    "tests/push/test_push_delivery.py",  # 208 s
    "tests/e2e/test_schemathesis.py",  # 190 s
    "tests/docs/test_docs_examples.py",  # ~150 s (was in the service process)
    "tests/engine/test_model.py",  # 185 s
    "tests/repo/test_cost_gate.py",  # 175 s
    "tests/e2e/test_lifecycle.py",  # 137 s
    "tests/e2e/test_celery_worker.py",  # 137 s
    "tests/e2e/test_hostile_http.py",  # 131 s
    "tests/push/test_push_verbs.py",  # 128 s
    "tests/cli/test_cli_usage.py",  # 121 s
    "tests/cli/test_cli_first_hour.py",  # 114 s
    "tests/filters/test_fuzz.py",  # 102 s
    "tests/cli/test_cli_backup.py",  # 98 s
    "tests/e2e/test_auth.py",  # 84 s
    "tests/cli/test_cli_cron.py",  # 84 s
    "tests/repo/test_bench_suite.py",  # 68 s
    "tests/docs/test_add_a_verb.py",  # 40 s (lint of a copy of the repo)
    "tests/mcp/test_mcp_http_limits.py",  # 40 s
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # one process runs everything anyway: keep the plain order
    rank = {module: i for i, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture(autouse=True)
def _filter_time_at_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Filters run in this process without their wall-clock budgets (50 ms an evaluation,
    one per publish: filters/runtime.py, engine/send.py): on a loaded machine a test
    descheduled mid-evaluation failed a correct filter (issue 25). The budgets themselves
    are pinned with substituted clocks (tests/filters/test_budgets.py, which patch this
    again); brokers in their own processes keep the real clock."""
    monkeypatch.setattr(filter_runtime, "elapsed_clock", lambda: 0.0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START_MS)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "mq.db"


@pytest.fixture
def engine(db_path: Path, clock: FakeClock) -> Iterator[mqlite.EmbeddedClient]:
    mq = mqlite.open_embedded(f"file:{db_path}", clock=clock, background=False)
    try:
        yield mq
    finally:
        mq.close()


@pytest.fixture(scope="session")
def sqld_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sqld]:
    """One real libSQL server (sqld) for the session; ``remote_dsn`` empties it per test."""
    server = Sqld(sqld_binary(), tmp_path_factory.mktemp("sqld") / "data").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def remote_dsn(sqld_server: Sqld) -> str:
    """The DSN of an empty database on the session's sqld (``http://``: self-hosted)."""
    reset_database(sqld_server.url)
    return sqld_server.url


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 24 MiB tmpfs, a disk that fills in a test (the CI machine runs the tests as root)."""
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
