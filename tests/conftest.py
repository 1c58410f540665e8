"""Shared fixtures: a fake clock and an embedded engine on a real SQLite file."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

import mqlite
from mqlite.clock import FakeClock

# Property tests are reproducible: the default profile derandomizes (the same examples on
# every run and machine, so a CI failure replays locally). HYPOTHESIS_PROFILE=explore
# draws fresh examples and prints the seed of a failure.
settings.register_profile("reproducible", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "reproducible"))

START_MS = 1_700_000_000_000


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
