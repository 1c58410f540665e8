"""MCP test support: the REAL ``mqlite-mcp`` process, driven by the MCP SDK's own client.

``stdio_session`` launches the console script the package installs (next to this
interpreter) as an MCP host would, talking over its stdin/stdout, and captures its
stderr in a file (the tests read it for secrets). ``http_listener`` starts
``mqlite-mcp --http`` and waits (bounded) for its port; ``http_session`` connects to it
with a bearer token. The broker is a real ``mqlite serve`` from tests/e2e's support.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from e2e_support import (
    ADMIN_TOKEN,
    Broker,
    BrokerFactory,
    _nofile_limit,
    base_env,
    broker_factory_fixture,
    free_port,
    kill_group,
    now_ms,
    unique,
)

from waiting import poll_real_process

MCP_COMMAND = str(Path(sys.executable).with_name("mqlite-mcp"))
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "mcp_tools.json"
STARTUP_DEADLINE_S = 20.0
MONITOR_TOKEN = "mqk_mcp_monitor_" + "b" * 24  # in the module broker's MQLITE_MONITOR_TOKENS

__all__ = [
    "ADMIN_TOKEN",
    "GOLDEN",
    "MCP_COMMAND",
    "MONITOR_TOKEN",
    "Broker",
    "BrokerFactory",
    "broker_factory_fixture",
    "free_port",
    "now_ms",
    "unique",
]


# A host's first JSON-RPC request, for the tests that speak the protocol at byte level.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}


def modules_loaded_by(code: str) -> list[str]:
    """Every module a fresh interpreter holds after running ``code`` (what an import
    path really loads, lazy attributes included)."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return list(json.loads(out.strip().splitlines()[-1]))


def mcp_env(broker: Broker, token: str | None = ADMIN_TOKEN, **extra: str) -> dict[str, str]:
    """What a host's config puts in the server entry's ``env`` (nothing else leaks in:
    the SDK's stdio client passes only a default environment plus these)."""
    env = {"MQLITE_ENDPOINT": broker.base_url, **extra}
    if token is not None:
        env["MQLITE_TOKEN"] = token
    return env


@contextlib.asynccontextmanager
async def stdio_session(
    env: Mapping[str, str], errlog: Path, *, mode: str = "auto"
) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=MCP_COMMAND, env=dict(env))
    with errlog.open("a", encoding="utf-8") as err:
        async with Client(stdio_client(params, errlog=err), mode=mode) as client:
            yield client


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30.0) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def run_mcp(
    env: Mapping[str, str], args: Sequence[str] = (), timeout: float = 30.0
) -> subprocess.CompletedProcess[str]:
    """Run ``mqlite-mcp`` to completion (startup failures) with only ``env`` set."""
    full = base_env(Path("/nonexistent.db"), {})
    full.pop("MQLITE_DB", None)
    full.update(env)
    return subprocess.run(
        [MCP_COMMAND, *args],
        env=full,
        input="",
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextlib.contextmanager
def http_listener(
    env: Mapping[str, str], stderr: Path, port: int | None = None, nofile: int | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``mqlite-mcp --http 127.0.0.1:PORT`` running; yields it and its ``/mcp`` URL.
    ``nofile`` sets its descriptor limit (soft and hard)."""
    port = port or free_port()
    full = base_env(Path("/nonexistent.db"), {})
    full.pop("MQLITE_DB", None)
    full.update(env)
    with stderr.open("ab") as err:
        proc = subprocess.Popen(
            [MCP_COMMAND, "--http", f"127.0.0.1:{port}"],
            env=full,
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            start_new_session=True,
            preexec_fn=None if nofile is None else _nofile_limit(nofile),
        )
    try:

        def listening() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"mqlite-mcp --http exited: {stderr.read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                return True
            return False

        poll_real_process("mqlite-mcp --http to listen", listening, deadline_s=STARTUP_DEADLINE_S)
        yield proc, f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.wait(timeout=5)


def ok(result: CallToolResult) -> Any:
    """The structured result of a successful call (its text block says the same)."""
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def tool_error(result: CallToolResult) -> dict[str, str]:
    """The ``{code, message}`` of a tool error (its text block starts with the code)."""
    assert result.is_error, result.structured_content
    error = result.structured_content["error"]
    assert result.content[0].text == f"{error['code']}: {error['message']}"
    return dict(error)
