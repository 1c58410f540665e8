"""Shared fixtures: a fake clock and an embedded engine on a real SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import mqlite
from mqlite.clock import FakeClock

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
