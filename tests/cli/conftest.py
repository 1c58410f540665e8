"""CLI fixtures: an embedded DB per test, one real broker per session, both modes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import (
    ADMIN_TOKEN,
    Broker,
    Cli,
    base_env,
    start_broker,
    stop_broker,
)

import mqlite


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    b = start_broker(tmp_path_factory.mktemp("broker"))
    try:
        yield b
    finally:
        stop_broker(b)


@pytest.fixture
def no_db_cli(tmp_path: Path) -> Cli:
    """Embedded on a database file that does not exist yet."""
    db = tmp_path / "mq.db"
    return Cli("embedded", base_env(MQLITE_DB=f"file:{db}"), db)


@pytest.fixture
def embedded_cli(no_db_cli: Cli) -> Cli:
    """An existing (empty) database: read-only commands never create one (issue 31)."""
    mqlite.open_embedded(f"file:{no_db_cli.db_path}", background=False).close()
    return no_db_cli


@pytest.fixture
def client_cli(broker: Broker, tmp_path: Path) -> Cli:
    env = base_env(
        MQLITE_ENDPOINT=broker.endpoint,
        MQLITE_TOKEN=ADMIN_TOKEN,
        MQLITE_DB=f"file:{tmp_path / 'unused.db'}",
    )
    return Cli("client", env, broker.db_path, broker.endpoint)


@pytest.fixture(params=["embedded", "client"])
def cli(request: pytest.FixtureRequest) -> Cli:
    """Each test using this runs in both modes."""
    name = "embedded_cli" if request.param == "embedded" else "client_cli"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


@pytest.fixture
def queue() -> str:
    """A queue name unique to the test (the session broker is shared)."""
    return "q-" + uuid.uuid4().hex[:12]
