"""One broker per remote database, with real ``mqlite serve`` processes on a real sqld
(engine/lease.py): a second broker refuses to start naming the holder, a broker that
finds its lease taken (renewal every 10 s) stops and exits, and a worker gunicorn starts
in place of a SIGKILLed one keeps the broker's lease."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from e2e_support import BrokerFactory, now_ms, wait_healthy

from mqlite.engine.remote import RemoteConnection, parse_remote


def test_a_second_broker_on_the_same_remote_database_refuses_to_start(
    broker_factory: BrokerFactory, remote_dsn: str
) -> None:
    first = broker_factory({"MQLITE_DB": remote_dsn})
    q = first.create_queue()
    proc, _, _, err, _, _ = broker_factory.spawn({"MQLITE_DB": remote_dsn})
    try:
        rc = proc.wait(timeout=20)
    except Exception:
        proc.kill()
        raise
    assert rc != 0
    text = err.read_text()
    assert "held by another mqlite broker" in text and "lease expires at" in text, text
    assert "Traceback" not in text, text
    assert first.ok("QueueService/Stats", {"queue": q})["total"] == 0  # unaffected


def test_a_broker_whose_lease_was_taken_stops_and_exits(
    broker_factory: BrokerFactory, remote_dsn: str
) -> None:
    broker = broker_factory({"MQLITE_DB": remote_dsn})
    q = broker.create_queue()
    conn = RemoteConnection(parse_remote(remote_dsn), "")
    try:  # another holder in the row, as after this broker stalled past its expiry
        far = now_ms() + 600_000
        conn.execute("UPDATE broker_lease SET holder = 'thief:1:x', expires_at = ?", (far,))
        rc = broker.wait(timeout=25)  # the next renewal (every 10 s) finds it
        assert rc is not None, "the broker kept running without its lease"
        assert "lease lost" in broker.stderr() + broker.stdout()
        row = conn.execute("SELECT holder FROM broker_lease").fetchone()
        assert row == ("thief:1:x",)  # its close did not delete the new holder's row
        count = conn.execute("SELECT count(*) FROM messages").fetchone()
        assert count == (0,) and q
    finally:
        conn.close()


def test_a_sigkilled_worker_is_replaced_and_its_successor_keeps_the_lease(
    broker_factory: BrokerFactory, remote_dsn: str
) -> None:
    """The dead worker's lease is live for 30 s more; the replacement holds it under the
    broker's one name (set by the master), so gunicorn's restart works as on a file (it
    was refused, and the master shut down: "Worker failed to boot")."""
    broker = broker_factory({"MQLITE_DB": remote_dsn})
    q = broker.create_queue()
    broker.send(q, "before")
    children = Path(f"/proc/{broker.proc.pid}/task/{broker.proc.pid}/children")
    worker = int(children.read_text().split()[0])
    conn = RemoteConnection(parse_remote(remote_dsn), "")
    try:
        holder = conn.execute("SELECT holder FROM broker_lease").fetchone()
        assert holder is not None and f":{broker.proc.pid}:" in holder[0]  # the master's
        os.kill(worker, signal.SIGKILL)
        deadline = time.monotonic() + 15
        while children.read_text().split() in ([], [str(worker)]):
            assert time.monotonic() < deadline, "no replacement worker"
            time.sleep(0.05)
        broker.close_clients()
        wait_healthy(broker.proc, broker.base_url, 15)
        assert [m["seq_number"] for m in broker.receive(q, 10)] == [1]
        assert broker.proc.poll() is None
        assert conn.execute("SELECT holder FROM broker_lease").fetchone() == holder
    finally:
        conn.close()


def test_serve_on_an_unreachable_remote_database_refuses_in_one_line(
    broker_factory: BrokerFactory,
) -> None:
    """No worker traceback: the pre-flight names the (masked) database and why."""
    from sqld_harness import free_port

    proc, _, out, err, _, _ = broker_factory.spawn(
        {"MQLITE_DB": f"http://127.0.0.1:{free_port()}", "MQLITE_DB_AUTH_TOKEN": "jwt-SECRET"}
    )
    try:
        rc = proc.wait(timeout=30)
    except Exception:
        proc.kill()
        raise
    assert rc == 1
    lines = err.read_text().strip().splitlines()
    assert len(lines) == 1, lines
    record = json.loads(lines[0])
    assert "cannot start without its database" in record["msg"], record
    assert "http://***:" in record["msg"]
    assert "jwt-SECRET" not in err.read_text() + out.read_text()


def test_the_startup_line_shows_the_remote_host_masked(
    broker_factory: BrokerFactory, remote_dsn: str
) -> None:
    broker = broker_factory({"MQLITE_DB": remote_dsn})
    listening = [line for line in broker.stdout().splitlines() if "listening on" in line]
    assert listening and "db http://***:" in listening[0], listening
    assert "127.0.0.1" not in json.loads(listening[0])["db"]
