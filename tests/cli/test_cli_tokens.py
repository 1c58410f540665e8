"""Client mode against a real broker: the ambient token only goes to its own endpoint."""

from __future__ import annotations

from cli_support import ADMIN_TOKEN, Cli


def test_same_broker_spelled_differently_keeps_the_token(client_cli: Cli) -> None:
    port = client_cli.endpoint.rsplit(":", 1)[1]
    for spelling in (client_cli.endpoint + "/", f"mqlite://127.0.0.1:{port}"):
        r = client_cli.run("list", "--endpoint", spelling)
        assert r.returncode == 0 and r.stderr == b"", (spelling, r.stderr)


def test_token_withheld_from_a_different_endpoint(client_cli: Cli) -> None:
    port = client_cli.endpoint.rsplit(":", 1)[1]
    other = f"http://localhost:{port}"  # the same socket, but not the same dial identity
    r = client_cli.run("list", "--endpoint", other)
    err = r.stderr.decode().splitlines()
    assert err[0].startswith("warning: MQLITE_TOKEN is not sent to http://localhost:")
    assert r.returncode == 1 and err[-1].startswith("error: ") and "unauth" in err[-1]
    r = client_cli.run("list", "--endpoint", other, "--token", ADMIN_TOKEN)
    assert r.returncode == 0 and r.stderr == b""


def test_empty_token_flag_sends_no_credential(client_cli: Cli) -> None:
    r = client_cli.run("list", "--token=")
    assert r.returncode == 1 and b"unauth" in r.stderr
    r = client_cli.run("list", "--token", "wrong")
    assert r.returncode == 1 and b"unauth" in r.stderr


def test_unreachable_broker_is_a_one_line_runtime_error(client_cli: Cli) -> None:
    r = client_cli.run("list", "--endpoint", "http://127.0.0.1:1", "--token", "t")
    assert r.returncode == 1
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
