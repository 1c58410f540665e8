"""Engine-tier fixtures: a fresh schema-only database for the pure SQL passes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_sqldb import open_db


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    db = open_db(tmp_path / "mq.db")
    yield db
    db.close()
