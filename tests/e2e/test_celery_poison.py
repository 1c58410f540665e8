"""One malformed message may not take a Celery worker down (issue 26, High).

A sender with a ``send`` key can put anything on a task queue. The kombu transport maps
each delivery on its own: a message it cannot map (``kombu.headers`` / ``kombu.properties``
that are not a JSON object, a ``base64`` body that does not decode) is dead-lettered at
once with reason ``MalformedKombuMessage``; a task body that is not the JSON it declares
is dead-lettered with reason ``MalformedTaskBody`` (Celery alone would delete it), one in
a serializer the worker does not accept with ``ContentDisallowed``. The
worker, a real ``celery worker`` (prefork) against a real ``mqlite serve``, keeps running
the good tasks sent beside them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import celery_app
import pytest
from celery_support import Workers, celery_env, ledger_lines, wait_for
from e2e_support import ADMIN_TOKEN, Broker

import mqlite
from mqlite import OutMessage, State

GOOD_BEFORE = 5
GOOD_AFTER = 5


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    w = Workers(tmp_path)
    try:
        yield w
    finally:
        w.teardown()


def celery_headers(task_id: str) -> str:
    """Celery protocol 2 headers of a ``celery_app.mark`` task, as a producer writes them."""
    headers = {
        "lang": "py", "task": "celery_app.mark", "id": task_id, "root_id": task_id,
        "parent_id": None, "group": None, "retries": 0, "eta": None, "expires": None,
        "timelimit": [None, None], "argsrepr": "('x',)", "kwargsrepr": "{}",
        "origin": "poison@test", "ignore_result": True,
    }  # fmt: skip
    return json.dumps(headers)


def poison() -> dict[str, OutMessage]:
    """Each malformed shape under its message id."""
    celery_id, pickled_id = str(uuid.uuid4()), str(uuid.uuid4())
    return {
        "headers-not-json": OutMessage(b"[]", "headers-not-json",
                                       properties={"kombu.headers": "{not json"}),
        "headers-a-list": OutMessage(b"[]", "headers-a-list",
                                     properties={"kombu.headers": "[1, 2]"}),
        "headers-a-number": OutMessage(b"[]", "headers-a-number",
                                       properties={"kombu.headers": "42"}),
        "properties-a-list": OutMessage(b"[]", "properties-a-list",
                                        properties={"kombu.properties": "[]"}),
        "bad-base64": OutMessage(
            b"!!! not base64 !!!", "bad-base64", content_type="application/json",
            properties={"kombu.headers": celery_headers(str(uuid.uuid4())),
                        "kombu.properties": '{"body_encoding": "base64"}'},
        ),
        "body-not-json": OutMessage(
            b"{this is not json", celery_id, content_type="application/json",
            properties={"kombu.headers": celery_headers(celery_id),
                        "kombu.content_encoding": "utf-8"},
        ),
        "pickle-body": OutMessage(
            b"\x80\x04K\x01.", pickled_id, content_type="application/x-python-serialize",
            properties={"kombu.headers": celery_headers(pickled_id),
                        "kombu.content_encoding": "binary"},
        ),
    }  # fmt: skip


REASONS = {"body-not-json": "MalformedTaskBody", "pickle-body": "ContentDisallowed"}


def test_malformed_messages_are_dead_lettered_and_the_worker_runs_the_good_ones(
    broker: Broker, tmp_path: Path, workers: Workers
) -> None:
    queue = f"poison-{uuid.uuid4().hex[:8]}"
    results = tmp_path / "results"
    results.mkdir()
    ledger = tmp_path / "ledger.txt"
    options = {"token": ADMIN_TOKEN, "max_delivery_count": 3}
    env = celery_env(f"mqlite+{broker.base_url}", results, ledger, queue, options)
    app = celery_app.make_app(f"mqlite+{broker.base_url}", str(results), queue, options)
    w = workers.start("poisoned", env, tmp_path)
    bad = poison()
    with mqlite.connect(broker.base_url, ADMIN_TOKEN) as client:
        for i in range(GOOD_BEFORE):
            app.send_task("celery_app.mark", (f"before-{i}",))
        for message in bad.values():  # one Send each, as an attacker would
            client.send_one(queue, message)
        for i in range(GOOD_AFTER):
            app.send_task("celery_app.mark", (f"after-{i}",))

        def all_marked() -> bool:
            return len(ledger_lines(ledger, "mark")) >= GOOD_BEFORE + GOOD_AFTER

        wait_for("every good task to run", all_marked, 60)

        def dead() -> dict[str, mqlite.Message] | None:
            got = {m.message_id: m for m in client.peek(queue, State.DEAD_LETTERED)}
            return got if len(got) == len(bad) else None

        letters = wait_for("every malformed message in the DLQ", dead, 30)
        assert client.stats(queue).active == 0
    marked = sorted(r[0] for r in ledger_lines(ledger, "mark"))
    assert marked == sorted([f"before-{i}" for i in range(GOOD_BEFORE)]
                            + [f"after-{i}" for i in range(GOOD_AFTER)])  # fmt: skip
    assert w.proc.poll() is None, w.output()[-3000:]  # the worker is alive
    assert "Unrecoverable error" not in w.output()
    by_name = {name: letters[m.message_id] for name, m in bad.items()}
    for name, letter in by_name.items():
        # At once: the first delivery dead-letters it, no lock expiry, no redelivery.
        assert letter.delivery_count == 1, (name, letter)
        expected = REASONS.get(name, "MalformedKombuMessage")
        assert letter.dead_letter_reason == expected, (name, letter.dead_letter_reason)
    descriptions = {name: m.dead_letter_description for name, m in by_name.items()}
    assert "kombu.headers" in descriptions["headers-not-json"]
    assert "JSON object" in descriptions["headers-a-list"]
    assert "JSON object" in descriptions["headers-a-number"]
    assert "kombu.properties" in descriptions["properties-a-list"]
    assert "base64" in descriptions["bad-base64"]
    assert "application/json" in descriptions["body-not-json"]
    assert "application/x-python-serialize" in descriptions["pickle-body"]
    assert w.stop() == 0
    app.close()
