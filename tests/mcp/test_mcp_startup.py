"""Starting ``mqlite-mcp``: a wrong configuration or a broker it cannot use fails at once
with one clear line on stderr; a good one serves, and stdout carries only the protocol."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from mcp_support import (
    ADMIN_TOKEN,
    INITIALIZE,
    MCP_COMMAND,
    Broker,
    free_port,
    mcp_env,
    run_mcp,
)

from mqlite.mcp.settings import Settings


def test_a_bad_endpoint_fails_naming_the_variable() -> None:
    r = run_mcp({"MQLITE_ENDPOINT": "ftp://example"})
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("mqlite-mcp: MQLITE_ENDPOINT:") and "scheme" in r.stderr


def test_no_broker_at_the_endpoint_fails_at_startup() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    r = run_mcp({"MQLITE_ENDPOINT": endpoint, "MQLITE_TOKEN": ADMIN_TOKEN})
    assert r.returncode == 1 and r.stdout == ""
    assert f"no broker answers at {endpoint}" in r.stderr
    assert ADMIN_TOKEN not in r.stderr
    assert time.monotonic() - started < 15


def test_a_refused_or_missing_token_fails_at_startup(broker: Broker) -> None:
    wrong = run_mcp(mcp_env(broker, "mqk_wrong_" + "c" * 30))
    assert wrong.returncode == 1 and "refused the credential" in wrong.stderr
    assert "check MQLITE_TOKEN" in wrong.stderr and "mqk_wrong_" not in wrong.stderr
    missing = run_mcp(mcp_env(broker, None))
    assert missing.returncode == 1 and "set MQLITE_TOKEN" in missing.stderr


def test_something_else_at_the_endpoint_is_not_taken_for_a_broker(broker: Broker) -> None:
    r = run_mcp(mcp_env(broker) | {"MQLITE_ENDPOINT": broker.base_url + "/not-here"})
    assert r.returncode == 1 and "does not answer like an mqlite broker" in r.stderr


def test_the_token_can_come_from_a_file(broker: Broker, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    env = {"MQLITE_ENDPOINT": broker.base_url, "MQLITE_TOKEN_FILE": str(token_file)}
    lines = raw_session(env)
    assert lines[0]["result"]["serverInfo"]["name"] == "mqlite-mcp"
    both = run_mcp(env | {"MQLITE_TOKEN": ADMIN_TOKEN})
    assert both.returncode == 2 and "not both" in both.stderr
    token_file.write_text("one\ntwo\n")
    two = run_mcp(env)
    assert two.returncode == 2 and "exactly one token" in two.stderr and "one" not in two.stdout


def test_the_endpoint_defaults_to_the_local_broker_port() -> None:
    for environ in ({}, {"MQLITE_ENDPOINT": "  "}):
        s = Settings.from_env(environ)
        assert (s.origin, s.token, s.http) == ("http://127.0.0.1:6754", None, None)


def test_settings_never_show_the_token() -> None:
    s = Settings.from_env({"MQLITE_ENDPOINT": "mqlite://sekrit@h", "MQLITE_TOKEN": "sekrit"})
    assert s.token == "sekrit" and s.origin == "http://h:6754"
    assert "sekrit" not in repr(s)


def raw_session(env: dict[str, str]) -> list[dict[str, object]]:
    """A host's view at the byte level: JSON-RPC lines in, and every line that comes out
    on stdout must be a JSON-RPC message (logs go to stderr)."""
    requests = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_queues"}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "no_such_tool"}},
    ]
    out: list[dict[str, object]] = []
    with subprocess.Popen(
        [MCP_COMMAND],
        env={"PATH": "/usr/bin:/bin", **env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            for request in requests:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
                if "id" in request:
                    out.append(json.loads(proc.stdout.readline()))
            proc.stdin.close()
            rest = proc.stdout.read()
            stderr = proc.stderr.read()
            assert proc.wait(timeout=20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    assert rest.strip() == "", rest
    assert all(m["jsonrpc"] == "2.0" for m in out)
    assert [m["id"] for m in out] == [1, 2, 3]
    assert out[0]["result"]["protocolVersion"] == "2025-06-18"  # type: ignore[index]
    assert out[1]["result"]["isError"] is False  # type: ignore[index]
    assert out[2]["error"]["code"] == -32602  # type: ignore[index]
    assert ADMIN_TOKEN not in stderr
    return out


def test_stdout_is_only_the_protocol(broker: Broker) -> None:
    raw_session({"MQLITE_ENDPOINT": broker.base_url, "MQLITE_TOKEN": ADMIN_TOKEN})


def test_a_token_in_an_mqlite_url_serves_and_is_never_shown(broker: Broker) -> None:
    """``mqlite://TOKEN@host`` carries the credential: it works, and neither the startup
    failure nor a session's logs print it (they show the credential-free origin)."""
    raw_session({"MQLITE_ENDPOINT": f"mqlite://{ADMIN_TOKEN}@127.0.0.1:{broker.port}"})
    r = run_mcp({"MQLITE_ENDPOINT": f"mqlite://{ADMIN_TOKEN}@127.0.0.1:{free_port()}"})
    assert r.returncode == 1 and "no broker answers at http://127.0.0.1:" in r.stderr
    assert ADMIN_TOKEN not in r.stderr and r.stdout == ""


def test_without_the_extra_the_command_says_how_to_install_it() -> None:
    code = (
        "import sys\n"
        "sys.modules['mcp'] = None  # as if mqlite[mcp] were not installed\n"
        "from mqlite.mcp.main import main\n"
        "sys.exit(main([]))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip() == "mqlite-mcp: the MCP SDK is not installed: pip install 'mqlite[mcp]'"
