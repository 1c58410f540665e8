"""Read scale-out through a real ``mqlite serve`` (MQLITE_DB_REPLICA) on a real sqld primary
and replica: Peek/Stats/ListQueues/Observe are answered from the replica, the pool of 4 is
in Observe, and a replica that goes away fails only those reads, with a retryable 503
``unavailable``/``storage_unreachable`` -- sends, receives and settlements keep working."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import BrokerFactory

from sqld_harness import Sqld, sqld_binary, start_replica_set
from waiting import poll_real_process


@pytest.fixture
def replica_set(tmp_path: Path) -> Iterator[tuple[Sqld, Sqld]]:
    primary, replica = start_replica_set(sqld_binary(), tmp_path / "sqld")
    try:
        yield primary, replica
    finally:
        replica.stop()
        primary.stop()


def test_a_broker_reads_from_its_replica_and_keeps_working_when_the_replica_is_gone(
    broker_factory: BrokerFactory, replica_set: tuple[Sqld, Sqld]
) -> None:
    primary, replica = replica_set
    broker = broker_factory({"MQLITE_DB": primary.url, "MQLITE_DB_REPLICA": replica.url})
    q = broker.create_queue()
    broker.send(q, "a", "b")

    def peeked() -> int:
        r = broker.rpc("QueueService/Peek", {"queue": q, "max": 10})
        return len(r.json()["messages"]) if r.status_code == 200 else -1

    poll_real_process("the replica to catch up", lambda: peeked() == 2, deadline_s=10)
    assert broker.ok("QueueService/Stats", {"queue": q})["active"] == 2
    assert q in [x["name"] for x in broker.ok("AdminService/ListQueues")["queues"]]
    pool = broker.ok("AdminService/Observe")["storage"]["pool"]
    assert pool["max_open"] == 4

    replica.kill()
    message = broker.err(
        "QueueService/Peek", {"queue": q}, 503, "unavailable", reason="storage_unreachable"
    )
    assert f":{replica.port}" in message and "Traceback" not in message
    (m,) = broker.receive(q)
    assert broker.ok(
        "QueueService/Complete",
        {"queue": q, "seq_number": m["seq_number"], "lock_token": m["lock_token"]},
    )
    assert broker.send(q, "c")
