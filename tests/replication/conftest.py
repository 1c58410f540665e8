"""The replication tier: real S3 (moto), real Litestream, real brokers (tests/replication)."""

from __future__ import annotations

import logging


def pytest_configure() -> None:
    # moto's werkzeug logs every S3 request at INFO: thousands of lines per test.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
