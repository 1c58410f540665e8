"""The replication tier: real S3 (moto), real Litestream, real brokers (tests/replication)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from replication_support import kill_started


def pytest_configure() -> None:
    # moto's werkzeug logs every S3 request at INFO: thousands of lines per test.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)


@pytest.fixture(autouse=True)
def _no_leftover_processes() -> Iterator[None]:
    yield
    kill_started()
