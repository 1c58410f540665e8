"""Golden: our Observe answer decodes with the original's decoder rules (issue 28,
spec/observe-wire.md), ported in ``original_observe_decoder``, for every access level --
manage, monitor and anonymous over real HTTP, embedded through the SDK -- and with the
collection unavailable. The port itself is pinned to refuse what the original refuses,
so a lax port cannot pass these."""

from __future__ import annotations

import copy
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from e2e_support import ADMIN_TOKEN, Broker, BrokerFactory, unique

import mqlite
from mqlite import wire
from mqlite.engine.measured_store import MeasuredStore
from original_observe_decoder import BOUNDS, EVENTS, Refused, decode

MONITOR = "mqk_e2e_monitor_" + "d" * 24


def raw_observe(b: Broker, token: str | None) -> bytes:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    r = b.anon.post("/mqlite.v1.AdminService/Observe", json={}, headers=headers)
    assert r.status_code == 200, r.text
    return r.content


def traffic(b: Broker) -> str:
    """A queue with an effect of each settle kind, a subscription, a filter failure."""
    queue = b.create_queue()
    b.send(queue, "a", "b", "c")
    done, rejected = b.receive(queue, 2)
    b.ok("QueueService/Complete", {"queue": queue, "seq_number": done["seq_number"],
                                   "lock_token": done["lock_token"]})  # fmt: skip
    b.ok("QueueService/Reject", {"queue": queue, "seq_number": rejected["seq_number"],
                                 "lock_token": rejected["lock_token"]})  # fmt: skip
    b.ok("AdminService/Subscribe", {"topic": unique("t"), "name": unique("s")})
    return queue


def test_manage_and_monitor_answers_decode(broker_factory: BrokerFactory) -> None:
    b = broker_factory({"MQLITE_MONITOR_TOKENS": MONITOR})
    queue = traffic(b)
    for token, access in ((ADMIN_TOKEN, "manage"), (MONITOR, "monitor")):
        doc = decode(raw_observe(b, token))
        assert doc["access"] == access and doc["http"]["state"] == "available"
        assert doc["backend"] in ("local", "remote")
        mine = {m["event"]: m["count"] for m in doc["messages"] if m["queue"] == queue}
        assert (mine["enqueued"], mine["completed"], mine["rejected"]) == (3, 1, 1)
        assert mine["purged"] == 0  # zero-filled
        (row,) = [q for q in doc["queues"] if q["queue"] == queue]
        assert (row["active"], row["locked"], row["dead_lettered"], row["total"]) == (1, 0, 1, 2)


def test_anonymous_answer_decodes(broker_factory: BrokerFactory) -> None:
    b = broker_factory({"MQLITE_TOKENS": "off"})
    traffic(b)  # auth off: the same calls, no token needed
    doc = decode(raw_observe(b, None))
    assert doc["access"] == "anonymous"


def test_embedded_answer_decodes(tmp_path: Path) -> None:
    with mqlite.open_embedded(f"file:{tmp_path / 'e.db'}", background=False) as mq:
        mq.create_queue("q")
        mq.send("q", [mqlite.OutMessage(body=b"x")])
        doc = decode(wire.encode_response(wire.OBSERVE, mq.observe()))
    assert doc["access"] == "embedded" and doc["backend"] == "local"
    assert doc["http"] == {
        "state": "not_applicable",
        "requests": [],
        "authentication": [],
        "handler_latency": [],
    }
    with mqlite.open_embedded(":memory:", background=False) as mq:
        doc = decode(wire.encode_response(wire.OBSERVE, mq.observe()))
    assert doc["backend"] == "memory" and doc["runtime"]["db_size_bytes"] == 0
    assert not doc["runtime"]["db_size_available"]


def _io_error(kind: str) -> None:
    exc = sqlite3.OperationalError("disk I/O error")
    exc.sqlite_errorcode = 10
    raise exc


def test_unavailable_collection_decodes(broker_factory: BrokerFactory, tmp_path: Path) -> None:
    trigger = tmp_path / "unreadable"
    b = broker_factory(
        {"MQLITE_MONITOR_TOKENS": MONITOR, "FAULTY_SERVE_TRIGGER": str(trigger)}, faulty=True
    )
    queue = traffic(b)
    trigger.touch()
    try:
        doc = decode(raw_observe(b, MONITOR))
    finally:
        os.unlink(trigger)
    assert doc["collection"]["state"] == "unavailable" and doc["queues"] is None
    assert (doc["queue_count"], doc["subscription_count"]) == (0, 0)
    assert not doc["runtime"]["read_available"] and doc["runtime"]["ping_seconds"] == 0
    # The counters need no database: still there, zero-filled for every known queue.
    assert {m["event"] for m in doc["messages"] if m["queue"] == queue} == set(EVENTS)
    with mqlite.open_embedded(f"file:{tmp_path / 'e.db'}", background=False) as mq:
        mq.create_queue("q")
        MeasuredStore.fault = staticmethod(_io_error)
        try:
            doc = decode(wire.encode_response(wire.OBSERVE, mq.observe()))
        finally:
            MeasuredStore.fault = None
    assert doc["collection"]["error_code"] == "io" and doc["queues"] is None


# -- the port refuses what the original refuses ---------------------------------------------


def _good(tmp_path: Path) -> dict[str, Any]:
    with mqlite.open_embedded(f"file:{tmp_path / 'g.db'}", background=False) as mq:
        mq.create_queue("q")
        mq.send("q", [mqlite.OutMessage(body=b"x")])
        out: dict[str, Any] = json.loads(wire.encode_response(wire.OBSERVE, mq.observe()))
        return out


def _drop_event(d: dict[str, Any]) -> None:
    d["messages"] = [m for m in d["messages"] if m["event"] != "purged"]


def _old_histogram(d: dict[str, Any]) -> None:
    d["maintenance"][0]["duration"]["bounds_seconds"] = [0.0005, *BOUNDS[:-1]]


MUTATIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "backend as text": lambda d: d.update(backend="local file"),
    "a missing field": lambda d: d["runtime"].pop("ping_seconds"),
    "an old queue row": lambda d: d["queues"][0].pop("total"),
    "a wrong total": lambda d: d["queues"][0].update(total=99),
    "a queue count off": lambda d: d.update(queue_count=2),
    "queues while unavailable": lambda d: d["collection"].update(state="unavailable"),
    "an event left out": _drop_event,
    "unsorted events": lambda d: d["messages"].reverse(),
    "the old bounds": _old_histogram,
    "a float count": lambda d: d["storage"]["pool"].update(wait_count=0.0),
    "old pool waits": lambda d: d["storage"]["pool"].pop("wait_count"),
    "runs as an object": lambda d: d["maintenance"][0].update(runs={"success": 0}),
    "a task missing": lambda d: d["maintenance"].pop(),
    "a storage dimension missing": lambda d: d["storage"]["operations"].pop(),
    "a filter stage missing": lambda d: d["filters"].pop(),
    "empty version": lambda d: d.update(version=""),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_the_port_refuses_what_the_original_refuses(tmp_path: Path, name: str) -> None:
    good = _good(tmp_path)
    decode(json.dumps(good).encode())
    bad = copy.deepcopy(good)
    MUTATIONS[name](bad)
    with pytest.raises(Refused):
        decode(json.dumps(bad).encode())
