"""Fixtures of the conformance suite: a FakeClock, a file-backed engine with background
loops off (time moves only through ``clock.advance`` + ``run_maintenance_once(mq)``),
and a helper to create queues. Helpers shared by the test modules live in
``conformance_support.py`` beside this file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mqlite
from mqlite import QueueConfig
from mqlite.clock import FakeClock
from mqlite.engine.remote import RemoteConnection, parse_remote

T0 = 1_700_000_000_000


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "mq.db"


# MQLITE_CONFORMANCE_REMOTE=1 also runs every conformance test on a real libSQL server
# (sqld 0.24.32 over Hrana/HTTP); =only runs the libSQL half alone: `make test` runs the
# file half in its core process and the libSQL half in its remote process
# (ops/ci/run-tests.sh), so each store is checked once.
STORES = {"1": ["file", "libsql"], "only": ["libsql"]}.get(
    os.environ.get("MQLITE_CONFORMANCE_REMOTE", ""), ["file"]
)


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> str:
    """The store under test: a local file, and (opt-in above) a real libSQL server with
    the same schema and SQL."""
    return str(request.param)


@pytest.fixture
def dsn(store: str, db_path: Path, request: pytest.FixtureRequest) -> str:
    if store == "libsql":
        return str(request.getfixturevalue("remote_dsn"))
    return "file:" + str(db_path)


@pytest.fixture
def raw_db(store: str, db_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """Factory: a plain SQL connection to the database under test, beside the engine (a
    test that edits or inspects the stored rows directly): ``sqlite3`` on the file, the
    remote store's own connection on the libSQL server. Closed at teardown."""
    remote = str(request.getfixturevalue("remote_dsn")) if store == "libsql" else None
    opened: list[Any] = []

    def _open() -> Any:
        conn: Any = (
            RemoteConnection(parse_remote(remote), "") if remote else sqlite3.connect(db_path)
        )
        opened.append(conn)
        return conn

    yield _open
    for conn in opened:
        conn.close()


@pytest.fixture
def open_mq(dsn: str, clock: FakeClock) -> Iterator[Callable[..., Any]]:
    """Factory: ``open_mq(dsn=None, **options)`` opens an engine (default: the test's file
    DB and clock, background off); every engine it opened is closed at teardown."""
    opened: list[Any] = []

    def _open(target: str | None = None, **options: Any) -> Any:
        options.setdefault("clock", clock)
        options.setdefault("background", False)
        engine = mqlite.open_embedded(target if target is not None else dsn, **options)
        opened.append(engine)
        return engine

    yield _open
    for engine in reversed(opened):
        with contextlib.suppress(Exception):  # already closed, or closed by the test
            engine.close()


@pytest.fixture
def mq(open_mq: Callable[..., Any]) -> Any:
    """The engine under test: a file DB in tmp_path, FakeClock, background loops off."""
    return open_mq()


@pytest.fixture
def make_queue(mq: Any) -> Callable[..., str]:
    """``make_queue(name="q", **config)`` creates (upserts) a queue on ``mq``; returns its name."""

    def _make(name: str = "q", **config: Any) -> str:
        mq.create_queue(name, QueueConfig(**config))
        return name

    return _make
