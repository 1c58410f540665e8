"""Push tier fixtures: a real HTTP receiver on 127.0.0.1 (``receiver``), embedded brokers
with the loops running and loopback allow-listed (``pushing``), and real ``serve``
processes (``broker_factory``, from tests/e2e)."""

from __future__ import annotations

import gc
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from e2e_support import BrokerFactory, broker_factory_fixture  # noqa: F401 (a fixture)
from push_support import Receiver

import mqlite
from mqlite.clock import FakeClock

START_MS = 1_700_000_000_000


@pytest.fixture(autouse=True)
def _collect_receiver_sockets() -> Iterator[None]:
    """The test receivers' accepted sockets (server side) that a daemon handler thread
    still held when its server closed are collected here, inside the push test, rather
    than warned about during whatever test the garbage collector next runs in."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.close()


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock(START_MS)


@pytest.fixture
def pushing(tmp_path: Path) -> Iterator[mqlite.EmbeddedClient]:
    """An embedded broker on a real file, loops running, 127.0.0.0/8 allow-listed."""
    mq = mqlite.open_embedded(f"file:{tmp_path / 'mq.db'}", push_allow_networks="127.0.0.0/8")
    try:
        yield mq
    finally:
        mq.close()
