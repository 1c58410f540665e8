"""Cron schedules through a real ``mqlite serve`` (docs/cron.md): the three RPCs, their
refusals (4xx naming the field, never a 500), and a slot fired by serve's own maintenance
loop (APScheduler), seen in Receive, Observe and /metrics."""

from __future__ import annotations

import re
import time

from e2e_support import SHIFTED_SERVE, Broker, BrokerFactory, b64, unique

LEAD_MS = 8_000


def _generation(broker: Broker, name: str) -> str:
    (info,) = [x for x in broker.ok("AdminService/ListQueues")["queues"] if x["name"] == name]
    return str(info["generation"])


def _listed(broker: Broker, name: str) -> dict[str, object]:
    (s,) = [s for s in broker.ok("AdminService/ListSchedules")["schedules"] if s["name"] == name]
    return s  # type: ignore[no-any-return]


def test_create_list_delete_and_target_missing(broker: Broker) -> None:
    q, name = broker.create_queue(), unique("s")
    body = {
        "name": name,
        "cron": "30 2 * * *",
        "timezone": "Europe/Berlin",
        "queue": q,
        "message": {"body": b64("run"), "subject": "nightly"},
    }
    created = broker.ok("AdminService/CreateSchedule", body)["schedule"]
    assert (created["status"], created["fired"], created["catch_up"]) == ("active", 0, "latest")
    assert created["next_fire_at_ms"] > 0 and created["message"]["subject"] == "nightly"
    assert _listed(broker, name) == created
    broker.ok("AdminService/DeleteQueue", {"name": q, "generation": _generation(broker, q)})
    assert _listed(broker, name)["status"] == "target missing"  # a 200, never a 500
    assert broker.ok("AdminService/DeleteSchedule", {"name": name}) == {"deleted": True}
    assert broker.ok("AdminService/DeleteSchedule", {"name": name}) == {"deleted": False}


def test_refusals_name_the_field(broker: Broker) -> None:
    q = broker.create_queue()
    base = {"name": unique("s"), "cron": "* * * * *", "queue": q}
    cases = [
        ({"cron": "0 0 * 13 *"}, 400, "invalid_argument", "field 4 (month)"),
        ({"cron": "* * *"}, 400, "invalid_argument", "expected 5 fields"),
        ({"timezone": "Mars/Olympus"}, 400, "invalid_argument", "timezone"),
        ({"name": "a b"}, 400, "invalid_argument", "name must be"),
        ({"catch_up": "all"}, 400, "invalid_argument", "catch_up"),
        ({"message": {"message_id": "m"}}, 400, "invalid_argument", "message_id"),
        ({"queue": unique("nope")}, 404, "not_found", "not found"),
    ]
    for change, status, code, words in cases:
        msg = broker.err("AdminService/CreateSchedule", {**base, **change}, status, code)
        assert words in msg, (change, msg)


def test_serve_fires_a_slot_seen_in_receive_observe_and_metrics(
    broker_factory: BrokerFactory,
) -> None:
    # The engine's clock is LEAD_MS before a minute boundary when serve starts
    # (shifted_serve.py): the slot comes in seconds, not at the wall clock's next minute.
    b = broker_factory({"SHIFTED_SERVE_LEAD_MS": str(LEAD_MS)}, ["--metrics"], script=SHIFTED_SERVE)
    q, name = b.create_queue(), unique("every-minute")
    b.ok("AdminService/CreateSchedule", {"name": name, "cron": "* * * * *", "queue": q,
                                         "message": {"body": b64("tick")}})  # fmt: skip
    got: list[dict[str, object]] = []
    # The next minute boundary on the engine's clock (a start slower than LEAD_MS misses
    # the first one and takes the next), then the 1 s pass.
    deadline = time.monotonic() + 75
    while not got and time.monotonic() < deadline:
        got = b.receive(q, 1, wait_time_ms=20_000)
    assert got, "no slot fired within a minute and a bit"
    (m,) = got
    slot = _listed(b, name)["last_slot_ms"]
    assert m["message_id"] == f"cron:{name}:{slot}"
    assert m["properties"]["mqlite-schedule"] == name  # type: ignore[index]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:00Z", m["properties"]["mqlite-slot"])  # type: ignore[index]
    obs = b.ok("AdminService/Observe")["schedules"]
    (mine,) = [s for s in obs["schedules"] if s["schedule"] == name]
    assert mine["fired"] == 1 and 0 <= mine["lag_seconds"] < 5
    text = b.http.get("/metrics").text
    assert f'mqlite_schedule_fired_total{{schedule="{name}"}} 1.0' in text
    assert f'mqlite_schedule_lag_seconds{{schedule="{name}"}}' in text
