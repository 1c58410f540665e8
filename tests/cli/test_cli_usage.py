"""Usage errors exit 2, local-only commands, help/version, and mode/token resolution."""

from __future__ import annotations

import pytest
from cli_support import Cli

import mqlite
from mqlite.cli.endpoint import EndpointError, resolve


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("no-such-command",),
        ("list", "--output", "yaml"),
        ("list", "extra"),
        ("create-queue",),
        ("create-queue", "q", "--lock", "5 parsecs"),
        ("create-queue", "q", "--lock", "-5s"),
        ("create-queue", "q", "--ordering", "random"),
        ("receive", "q", "--wait", "soon"),
        ("receive", "q", "--max", "-1"),
        ("complete", "q", "0", "tok"),
        ("complete", "q", "abc", "tok"),
        ("complete", "q", "1"),
        ("receive-deferred", "q"),
        ("receive-deferred", "q", "--seq", "1,,2"),
        ("send", "q", "a", "b"),
        ("vacuum", "--endpoint", "http://127.0.0.1:1"),
        ("list", "--endpoint", "ftp://host"),
        ("list", "--endpoint", ""),
        ("peek", "q", "--state", "gone"),
        ("key", "list", "--sort", "name"),
    ],
)
def test_usage_errors_exit_2(no_db_cli: Cli, args: tuple[str, ...]) -> None:
    embedded_cli = no_db_cli
    r = embedded_cli.run(*args)
    assert r.returncode == 2, (args, r.stderr)
    assert r.stdout == b""
    assert not embedded_cli.db_path.exists()  # nothing was opened


def test_help_and_version(embedded_cli: Cli) -> None:
    assert "receive" in embedded_cli.ok("help")
    assert embedded_cli.ok("version") == f"mqlite {mqlite.__version__}\n"
    assert embedded_cli.ok("--version") == f"mqlite {mqlite.__version__}\n"


def test_vacuum_is_local_only_and_reports_sizes(embedded_cli: Cli, queue: str) -> None:
    r = embedded_cli.run("vacuum", env={"MQLITE_ENDPOINT": "http://127.0.0.1:1"})
    assert r.returncode == 1 and b"local-only" in r.stderr
    embedded_cli.setup_queue(queue, *(b"x" * 4000 for _ in range(300)))
    with embedded_cli.sdk() as c:
        c.purge(queue)  # nothing dead-lettered: the rows stay; drain them instead
        for m in c.receive(queue, max_messages=256):
            m.complete()
    out = embedded_cli.ok("vacuum")
    assert out.startswith("incremental") and " -> " in out
    full = embedded_cli.json("vacuum", "--full")
    assert full["mode"] == "full" and full["before_bytes"] >= full["after_bytes"] >= 0
    # the single-writer lock: a second owner is refused with a one-line runtime error
    with embedded_cli.sdk():
        r = embedded_cli.run("vacuum")
    assert r.returncode == 1 and b"locked" in r.stderr


# -- mode and token resolution (pure) --------------------------------------------------


ENV = {"MQLITE_ENDPOINT": "http://broker:6754", "MQLITE_TOKEN": "ambient"}


def test_embedded_unless_an_endpoint_is_set() -> None:
    t = resolve({"MQLITE_DB": "file:/x.db"}, None, None)
    assert (t.remote, t.dsn) == (False, "file:/x.db")
    assert resolve({}, None, None).dsn == "file:./mq.db"
    t = resolve({**ENV, "MQLITE_DB": "file:/x.db"}, None, None)
    assert (t.endpoint, t.token) == ("http://broker:6754", "ambient")


@pytest.mark.parametrize(
    "flag",
    ["http://broker:6754/", "mqlite://broker", "HTTP://broker:6754", "mqlite://broker:6754/"],
)
def test_same_broker_keeps_the_ambient_token(flag: str) -> None:
    t = resolve(ENV, flag, None)
    assert (t.token, t.warning) == ("ambient", "")


@pytest.mark.parametrize("flag", ["http://other:6754", "https://broker:6754", "http://broker"])
def test_other_broker_withholds_the_token(flag: str) -> None:
    t = resolve(ENV, flag, None)
    assert t.token is None and "MQLITE_TOKEN is not sent" in t.warning
    assert resolve(ENV, flag, "explicit").token == "explicit"
    assert resolve({"MQLITE_TOKEN": "ambient"}, flag, None).token is None


def test_empty_token_flag_sends_nothing() -> None:
    assert resolve(ENV, None, "").token is None
    assert resolve(ENV, "mqlite://urltoken@broker", "").token is None
    assert resolve(ENV, "mqlite://urltoken@broker", None).token == "urltoken"


def test_bad_endpoints() -> None:
    for bad in ("broker:6754", "ftp://broker", "http://", "http://b?x=1"):
        with pytest.raises(EndpointError):
            resolve({}, bad, None)
