"""The CLI's embedded mode on a remote libSQL database: the token comes from
MQLITE_DB_AUTH_TOKEN (never argv), is sent to the server as a Bearer token, and appears in
no output; and the commands work on a real sqld."""

from __future__ import annotations

import socket
import subprocess
import threading

from cli_support import base_env, mqlite_cmd

from sqld_harness import Sqld

SECRET = "jwt-CLI-SECRET-123"


def test_the_remote_token_is_sent_to_the_server_and_never_printed() -> None:
    heads: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:  # a "server" that reads one request head and hangs up
        with listener:
            conn, _ = listener.accept()
            with conn:
                heads.append(conn.recv(65536))

    thread = threading.Thread(target=serve)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env = base_env(MQLITE_DB=url, MQLITE_DB_AUTH_TOKEN=SECRET)
    out = subprocess.run(mqlite_cmd("list"), env=env, capture_output=True, text=True, timeout=60)
    thread.join(10)
    assert out.returncode != 0  # the "server" answered nothing
    assert heads and f"Authorization: Bearer {SECRET}".encode() in heads[0]
    assert SECRET not in out.stdout + out.stderr
    assert "Traceback" not in out.stderr, out.stderr


def test_embedded_commands_run_on_a_real_sqld(sqld_server: Sqld, remote_dsn: str) -> None:
    env = base_env(MQLITE_DB=remote_dsn)
    for args in (("create-queue", "orders"), ("send", "orders", "hello"), ("list",)):
        out = subprocess.run(mqlite_cmd(*args), env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, (args, out.stderr)
    assert "orders" in out.stdout
