"""Client mode against a real broker: the ambient token only goes to its own endpoint."""

from __future__ import annotations

from pathlib import Path

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


def test_token_file_keeps_the_credential_out_of_argv(client_cli: Cli, tmp_path: Path) -> None:
    good, bad, empty = tmp_path / "good", tmp_path / "bad", tmp_path / "empty"
    good.write_text(ADMIN_TOKEN + "\n")
    bad.write_text("wrong\n")
    empty.write_text("\n")
    no_env = {"MQLITE_TOKEN": ""}
    r = client_cli.run("list", "--token-file", str(good), env=no_env)
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    r = client_cli.run("list", "--token-file", str(bad), env=no_env)
    assert r.returncode == 1 and b"unauth" in r.stderr
    r = client_cli.run("list", "--token-file", str(empty), env=no_env)
    assert r.returncode == 1 and b"no token in it" in r.stderr
    r = client_cli.run("list", "--token-file", str(tmp_path / "missing"), env=no_env)
    assert r.returncode == 1 and b"--token-file" in r.stderr


def test_token_file_dash_reads_stdin(client_cli: Cli) -> None:
    r = client_cli.run(
        "list", "--token-file", "-", input=ADMIN_TOKEN.encode(), env={"MQLITE_TOKEN": ""}
    )
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    # stdin cannot carry both the token and the body
    r = client_cli.run("send", "q", "-", "--token-file", "-", input=b"x")
    assert r.returncode == 2 and b"cannot share stdin" in r.stderr


def test_token_and_token_file_are_exclusive(client_cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "t").write_text(ADMIN_TOKEN)
    r = client_cli.run("list", "--token", ADMIN_TOKEN, "--token-file", str(tmp_path / "t"))
    assert r.returncode == 2 and b"not allowed with" in r.stderr
