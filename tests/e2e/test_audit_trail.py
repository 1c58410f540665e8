"""The audit trail on a real broker (issue 35 "Audit trail", docs/operations.md): rows
name the configured token by its position (``admin:<n>``) or the managed key
(``key:<id>``) with the request id the response and access log carry; ListAudit pages,
filters and refuses bad input with a 400 naming the field; a change killed by SIGKILL
leaves both its row and its effect, or neither.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e_support import ADMIN_TOKEN, Broker, BrokerFactory, b64

SECOND_TOKEN = "mqk_e2e_second_" + "b" * 24
APP_DIR = Path(__file__).resolve().parents[2] / "app"


def entries(b: Broker, **body: Any) -> list[dict[str, Any]]:
    return list(b.ok("AdminService/ListAudit", {"limit": 1000, **body})["entries"])


def test_rows_name_the_admin_token_by_position_and_the_request(
    broker_factory: BrokerFactory,
) -> None:
    b = broker_factory({"MQLITE_TOKENS": f"{ADMIN_TOKEN},{SECOND_TOKEN}"})
    b.create_queue("first-q")
    r = b.rpc("AdminService/CreateQueue", {"name": "second-q"}, token=SECOND_TOKEN)
    assert r.status_code == 200
    generated = r.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{16}", generated)
    mine = b.http.post(
        "/mqlite.v1.AdminService/CreateQueue",
        json={"name": "first-q", "config": {"max_delivery_count": 3}},
        headers={"X-Request-Id": "ops-ticket-42"},
    )
    assert mine.status_code == 200 and mine.headers["x-request-id"] == "ops-ticket-42"
    hostile = b.http.post(
        "/mqlite.v1.AdminService/CreateQueue",
        json={"name": "third-q"},
        headers={"X-Request-Id": "x" * 65},
    )
    assert hostile.status_code == 200 and hostile.headers["x-request-id"] != "x" * 65
    sent = b.http.post(
        "/mqlite.v1.QueueService/Send",
        json={"queue": "first-q", "messages": [{"body": b64("hot path")}]},
    )
    assert "x-request-id" not in sent.headers  # a message operation: no id, no row

    rows = entries(b)
    assert [(e["action"], e["queue"], e["actor"]) for e in rows] == [
        ("CreateQueue", "first-q", "admin:1"),
        ("CreateQueue", "second-q", "admin:2"),
        ("CreateQueue", "first-q", "admin:1"),
        ("CreateQueue", "third-q", "admin:1"),
    ]
    assert rows[1]["request_id"] == generated
    assert rows[2]["request_id"] == "ops-ticket-42"
    assert json.loads(rows[2]["detail"]) == {
        "created": False,
        "diff": {"max_delivery_count": [10, 3]},
    }
    assert rows[3]["request_id"] == hostile.headers["x-request-id"]
    text = json.dumps(rows)
    assert ADMIN_TOKEN not in text and SECOND_TOKEN not in text and "hot path" not in text


def test_a_managed_key_is_named_by_its_id(broker_factory: BrokerFactory) -> None:
    b = broker_factory()
    key_id, token = b.create_key(["manage"])
    q, dest = b.create_queue(), b.create_queue()
    b.ok("AdminService/CreateQueue", {"name": "by-key"}, token=token)
    b.send(q, "a", "b", "c")
    for m in b.receive(q, 3):
        b.ok("QueueService/Reject", {"queue": q, "seq_number": m["seq_number"],
                                     "lock_token": m["lock_token"]})  # fmt: skip
    assert b.ok("AdminService/Redrive", {"queue": q, "target": dest, "max": 1}, token=token) == {
        "moved": 1
    }
    assert b.ok("AdminService/Purge", {"queue": q}, token=token) == {"purged": 2}
    _, other_token = b.create_key(["send"])
    b.ok("AuthService/RevokeKey", {"id": key_id})
    rows = entries(b)
    actor = f"key:{key_id}"
    by_key = [
        (e["action"], e["queue"], json.loads(e["detail"])) for e in rows if e["actor"] == actor
    ]
    assert by_key == [
        ("CreateQueue", "by-key", {"created": True}),
        ("Redrive", q, {"count": 1, "target": dest}),
        ("Purge", q, {"count": 2}),
    ]
    creates = [json.loads(e["detail"]) for e in rows if e["action"] == "CreateKey"]
    assert creates[0]["id"] == key_id and creates[0]["permissions"] == ["manage"]
    (revoke,) = [e for e in rows if e["action"] == "RevokeKey"]
    assert (revoke["actor"], json.loads(revoke["detail"])) == ("admin:1", {"id": key_id})
    assert token not in json.dumps(rows) and other_token not in json.dumps(rows)


def test_list_audit_pages_filters_and_refuses_bad_input(broker_factory: BrokerFactory) -> None:
    b = broker_factory()
    names = [b.create_queue() for _ in range(5)]
    all_rows = entries(b)
    ids = [e["id"] for e in all_rows]
    assert len(ids) == 5 and ids == sorted(ids)
    page = b.ok("AdminService/ListAudit", {"limit": 2})["entries"]
    assert [e["id"] for e in page] == ids[:2]
    nxt = b.ok("AdminService/ListAudit", {"after_id": ids[1], "limit": 2})["entries"]
    assert [e["id"] for e in nxt] == ids[2:4]
    assert b.ok("AdminService/ListAudit", {"after_id": ids[-1]})["entries"] == []
    assert [e["queue"] for e in entries(b, queue=names[3])] == [names[3]]
    assert entries(b, since_ms=all_rows[-1]["at_ms"] + 60_000) == []
    for body, field in (
        ({"limit": 1001}, "limit"),
        ({"limit": -1}, "limit"),
        ({"after_id": -1}, "after_id"),
        ({"since_ms": -1}, "since_ms"),
        ({"limit": "ten"}, "limit"),
        ({"queue": 7}, "queue"),
        ({"nope": 1}, "nope"),
    ):
        message = b.err("AdminService/ListAudit", body, 400, "invalid_argument")
        assert field in message, (body, message)


CHILD = r"""
import sys

import mqlite
from mqlite.engine import killpoints

dsn, point = sys.argv[1], sys.argv[2]
mq = mqlite.open_embedded(dsn, background=False)
mq.create_queue("before")
killpoints.arm(killpoints.parse(point))
mq.create_queue("victim")
sys.exit("not killed")
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")
@pytest.mark.parametrize(("point", "committed"), [("commit.before", False), ("commit.after", True)])
def test_a_sigkill_mid_change_leaves_both_or_neither(
    tmp_path: Path, point: str, committed: bool
) -> None:
    """A real process dies by SIGKILL with the queue row and its audit row written but not
    committed (``commit.before``), or committed but not yet answered (``commit.after``):
    the reopened database has neither, or both."""
    import mqlite

    dsn = f"file:{tmp_path / 'kill.db'}"
    env = {**os.environ, "PYTHONPATH": str(APP_DIR)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, dsn, point], env=env, capture_output=True, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    mq = mqlite.open_embedded(dsn, background=False)
    try:
        queues = {q.name for q in mq.list_queues()}
        audited = [e.queue for e in mq.list_audit() if e.action == "CreateQueue"]
    finally:
        mq.close()
    assert ("victim" in queues) == committed
    assert audited == (["before", "victim"] if committed else ["before"])
