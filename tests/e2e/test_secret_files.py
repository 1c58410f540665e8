"""A real broker takes its tokens from files (compose/podman secrets, systemd credentials)."""

from __future__ import annotations

from pathlib import Path

from e2e_support import STARTUP_DEADLINE_S, BrokerFactory


def test_tokens_file_authenticates_and_is_never_printed(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    admin, monitor = "mqk_file_admin_" + "b" * 20, "mqk_file_monitor_" + "c" * 20
    (tmp_path / "admin").write_text(admin + "\n")
    (tmp_path / "monitor").write_text(monitor + "\n")
    broker = broker_factory(
        {
            "MQLITE_TOKENS": None,
            "MQLITE_TOKENS_FILE": str(tmp_path / "admin"),
            "MQLITE_MONITOR_TOKENS_FILE": str(tmp_path / "monitor"),
            "MQLITE_METRICS": "on",
        },
        token=admin,
    )
    assert broker.ok("AdminService/ListQueues") is not None
    assert broker.client(monitor).get("/metrics").status_code == 200
    assert broker.rpc("AdminService/ListQueues", token=monitor).status_code == 403
    assert "auth: 1 configured administrator token(s)" in broker.stdout()
    broker.stop()
    for text in (broker.stdout(), broker.stderr()):
        assert admin not in text and monitor not in text


def test_an_unreadable_tokens_file_stops_startup_naming_the_variable(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-file"
    proc, _, _, err, _, _ = broker_factory.spawn(
        {"MQLITE_TOKENS": None, "MQLITE_TOKENS_FILE": str(missing)}
    )
    assert proc.wait(timeout=STARTUP_DEADLINE_S) == 1
    assert f"MQLITE_TOKENS_FILE={missing}: cannot read the file" in err.read_text()
