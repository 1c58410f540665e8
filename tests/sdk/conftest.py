"""Fixtures of the SDK suite: a real ``mqlite serve`` subprocess on a free loopback port
(one per session, temp database), and the ``mq`` fixture that runs a test once against an
embedded client (FakeClock, background off) and once against ``mqlite.connect`` to that
broker. Queue names are unique per test (``names``) because the broker is shared.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sdk_support import Broker, start_broker

import mqlite
from mqlite.clock import FakeClock

START_MS = 1_700_000_000_000


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    b = start_broker(tmp_path_factory.mktemp("broker"))
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START_MS)


@pytest.fixture
def embedded(tmp_path: Path, clock: FakeClock) -> Iterator[mqlite.EmbeddedClient]:
    mq = mqlite.open_embedded(f"file:{tmp_path / 'mq.db'}", clock=clock, background=False)
    try:
        yield mq
    finally:
        mq.close()


@pytest.fixture
def remote(broker: Broker) -> Iterator[mqlite.HttpClient]:
    with mqlite.connect(broker.url, broker.token) as mq:
        yield mq


@pytest.fixture(params=["embedded", "http"])
def mq(request: pytest.FixtureRequest) -> Any:
    """The client under test: embedded or remote (same assertions for both)."""
    return request.getfixturevalue("embedded" if request.param == "embedded" else "remote")


@pytest.fixture
def names() -> Callable[[str], str]:
    """``names("orders")`` → a queue name unique to this test (the broker is shared)."""
    tag = uuid.uuid4().hex[:8]
    return lambda base="q": f"{base}-{tag}"
