"""Celery on mqlite, for real: ``celery worker`` processes (prefork pool, 2 processes)
against a real ``mqlite serve`` and against an embedded database file, results read
from Celery's filesystem result backend (no server: the point of mqlite), every task
execution recorded in an O_APPEND ledger the tests count (idempotency keys)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import celery_app
import pytest
from celery_support import Workers, celery, celery_env, ledger_lines, wait_for
from e2e_support import ADMIN_TOKEN, Broker, BrokerFactory, now_ms

import mqlite
from mqlite import State


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    factory = BrokerFactory(tmp_path_factory.mktemp("celery-broker"))
    try:
        yield factory()
    finally:
        factory.teardown()


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    w = Workers(tmp_path)
    try:
        yield w
    finally:
        w.teardown()


class Setup:
    """One test's queue, result directory, ledger and the env its processes share."""

    def __init__(
        self, broker_url: str, root: Path, queue_args: dict[str, Any] | None = None, **options: Any
    ) -> None:
        self.queue = f"tasks-{uuid.uuid4().hex[:8]}"
        self.root = root
        self.results = root / "results"
        self.results.mkdir()
        self.ledger = root / "ledger.txt"
        self.options = options
        self.env = celery_env(broker_url, self.results, self.ledger, self.queue, options)
        self.env["CELERY_TEST_QUEUE_ARGS"] = json.dumps(queue_args or {})
        self.app = celery_app.make_app(
            broker_url, str(self.results), self.queue, options, queue_args
        )

    def send(self, name: str, *args: Any, **options: Any) -> Any:
        return self.app.send_task(f"celery_app.{name}", args, **options)

    def ledger_of(self, kind: str) -> list[list[str]]:
        return ledger_lines(self.ledger, kind)


@pytest.fixture
def remote(broker: Broker, tmp_path: Path) -> Iterator[Setup]:
    s = Setup(f"mqlite+{broker.base_url}", tmp_path, token=ADMIN_TOKEN)
    yield s
    s.app.close()


def mq(broker: Broker) -> mqlite.HttpClient:
    return mqlite.connect(broker.base_url, ADMIN_TOKEN)


def test_tasks_run_results_arrive_eta_waits_and_inspect_answers(
    remote: Setup, workers: Workers, broker: Broker
) -> None:
    w = workers.start("w1", remote.env, remote.root)
    sums = [remote.send("add", i, i) for i in range(20)]
    countdown_s = 2
    sent_ms = now_ms()
    eta = remote.send("when", "eta", countdown=countdown_s)
    with mq(broker) as client:  # the ETA task waits in the broker, not in the worker
        scheduled = client.peek(remote.queue, State.SCHEDULED)
        assert [m.message_id for m in scheduled] == [eta.id]
    assert [r.get(timeout=30) for r in sums] == [2 * i for i in range(20)]
    ran_ms = eta.get(timeout=30)
    assert ran_ms >= sent_ms + countdown_s * 1000, ran_ms - sent_ms
    pong = celery(["inspect", "ping", "-d", w.node, "-t", "10"], remote.env, remote.root)
    assert "pong" in pong, pong
    assert w.stop() == 0
    # The token rides in broker_transport_options: never in the banner, the logs or argv.
    assert ADMIN_TOKEN not in w.output() and ADMIN_TOKEN not in pong
    with mq(broker) as client:
        assert client.stats(remote.queue).total == 0
        # The worker's remote-control queue went with its channel (AMQP's auto-delete).
        assert not [s for s in client.list_subscriptions() if s.name.startswith("w1@")]


def test_an_embedded_file_serves_a_prefork_worker(tmp_path: Path, workers: Workers) -> None:
    s = Setup("mqlite:///mq.db", tmp_path)  # relative to the processes' directory
    produce = (
        "import celery_app, sys\n"
        "app = celery_app.app\n"
        "ids = [app.send_task('celery_app.add', (i, 1)).id for i in range(10)]\n"
        "print(' '.join(ids))\n"
        "app.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", produce], env=s.env, cwd=tmp_path, capture_output=True,
        text=True, timeout=60, check=True,
    )  # fmt: skip
    ids = out.stdout.split()
    assert len(ids) == 10
    w = workers.start("emb", s.env, tmp_path)
    assert [s.app.AsyncResult(i).get(timeout=30) for i in ids] == [i + 1 for i in range(10)]
    assert w.stop() == 0
    with mqlite.open_embedded(f"file:{tmp_path / 'mq.db'}", background=False) as client:
        assert client.stats(s.queue).total == 0


def test_rejections_dead_letter_with_their_reason_and_the_delivery_limit_bounds_retries(
    broker: Broker, tmp_path: Path, workers: Workers
) -> None:
    s = Setup(f"mqlite+{broker.base_url}", tmp_path, token=ADMIN_TOKEN, max_delivery_count=3)
    w = workers.start("dlq", s.env, tmp_path)
    refused = s.send("refuse", "r1")
    failed = s.send("fail", "f1")
    crashed = s.send("crash", "c1")
    with mq(broker) as client:

        def dead() -> dict[str, mqlite.Message] | None:
            got = {m.message_id: m for m in client.peek(s.queue, State.DEAD_LETTERED)}
            return got if len(got) == 3 else None

        letters = wait_for("three dead letters", dead, 60)
    assert (
        letters[refused.id].dead_letter_reason,
        letters[refused.id].dead_letter_description,
    ) == ("Reject", "bad input r1")
    assert (letters[failed.id].dead_letter_reason, letters[failed.id].dead_letter_description) == (
        "ValueError",
        "cannot process f1",
    )
    # The crashing task was redelivered up to the queue's bound, then dead-lettered.
    assert letters[crashed.id].dead_letter_reason == "MaxDeliveryCountExceeded"
    assert [r[1] for r in s.ledger_of("crash")] == ["False", "True", "True"]
    assert refused.state == "FAILURE" and failed.state == "FAILURE"
    assert ADMIN_TOKEN not in w.output()  # failures are logged with their request, not it
    s.app.close()


def test_a_sigkilled_worker_s_task_runs_again_after_the_lock_expires_and_renewal_keeps_long_ones(
    broker: Broker, tmp_path: Path, workers: Workers
) -> None:
    s = Setup(f"mqlite+{broker.base_url}", tmp_path, token=ADMIN_TOKEN, visibility_timeout=2)
    a = workers.start("killed", s.env, tmp_path)
    victim = s.send("slow", "victim", 60, 0.1)
    wait_for("the task to start", lambda: s.ledger_of("start"), 30)
    a.kill()  # mid-task: no ack, no abandon, no renewal any more
    killed_at = now_ms()
    workers.start("rescuer", s.env, tmp_path)
    assert victim.get(timeout=30) == "victim"
    starts = s.ledger_of("start")
    assert [r[2] for r in starts] == ["False", "True"]  # once, then redelivered
    assert len(s.ledger_of("done")) == 1
    assert now_ms() - killed_at >= 1000  # not before the 2 s lock could lapse
    # Renewal: a 5 s task under a 2 s lock is never handed to anyone else.
    long = s.send("slow", "long", 5, 5)
    assert long.get(timeout=30) == "long"
    assert [r[0] for r in s.ledger_of("start")].count("long") == 1
    s.app.close()


def test_2000_tasks_through_two_workers_none_lost_none_twice(
    broker: Broker, tmp_path: Path, workers: Workers
) -> None:
    s = Setup(f"mqlite+{broker.base_url}", tmp_path, token=ADMIN_TOKEN)
    workers.start("a", s.env, tmp_path)
    workers.start("b", s.env, tmp_path)
    n = 2000
    keys = [f"k{i:04d}" for i in range(n)]
    with s.app.producer_or_acquire() as producer:
        for key in keys:
            s.send("mark", key, producer=producer)
    rows = wait_for("every task", lambda: (r := s.ledger_of("mark")) and len(r) >= n and r, 180)
    counts = Counter(r[0] for r in rows)
    assert set(counts) == set(keys)
    assert [k for k, c in counts.items() if c > 1] == []
    assert {r[1].split("@")[0] for r in rows} == {"a", "b"}  # both workers took part
    with mq(broker) as client:
        assert wait_for("an empty queue", lambda: client.stats(s.queue).total == 0, 30)
    s.app.close()


def test_celery_purge_empties_the_queue_scheduled_tasks_included(
    broker: Broker, tmp_path: Path
) -> None:
    s = Setup(f"mqlite+{broker.base_url}", tmp_path, token=ADMIN_TOKEN)
    with s.app.producer_or_acquire() as producer:
        for i in range(50):
            s.send("add", i, i, producer=producer)
        for i in range(5):
            s.send("add", i, i, countdown=600, producer=producer)
    with mq(broker) as client:
        before = client.stats(s.queue)
        assert (before.active, before.scheduled) == (50, 5)
        out = celery(["purge", "-f", "-Q", s.queue], s.env, tmp_path)
        assert "Purged 55 messages" in out, out
        assert client.stats(s.queue).total == 0
    s.app.close()


def test_the_connection_fails_fast_on_a_wrong_token_and_never_shows_it(broker: Broker) -> None:
    from kombu import Connection

    options = {"token": "mqk_wrong_token_value"}
    with Connection(f"mqlite+{broker.base_url}", transport_options=options) as conn:
        with pytest.raises(mqlite.errors.Unauthenticated):
            conn.connect()
        assert "wrong_token" not in conn.as_uri() and "wrong_token" not in repr(conn.transport)


def test_a_requeued_task_is_retried_on_the_queue_s_backoff_and_dead_letters_with_its_error(
    broker: Broker, workers: Workers, tmp_path: Path
) -> None:
    """A task that fails with Reject(requeue=True) on a queue declared with a retry policy
    (1 s, x2, cap 2 s): the worker's deliveries are spaced by the policy (the consumer
    computes no delay), and at the delivery limit the DLQ description says why."""
    policy = {
        "x-mqlite-retry-initial-delay-ms": 1_000,
        "x-mqlite-retry-multiplier": 2,
        "x-mqlite-retry-max-delay-ms": 2_000,
        "x-mqlite-max-delivery-count": 4,
    }
    s = Setup(f"mqlite+{broker.base_url}", tmp_path, policy, token=ADMIN_TOKEN)
    client = mq(broker)
    try:
        w = workers.start("w1", s.env, s.root)
        task = s.send("flaky", "k1")

        def dead() -> mqlite.Message | None:
            letters = client.peek(s.queue, state=State.DEAD_LETTERED)
            return letters[0] if letters else None

        letter = wait_for("the task's dead letter", dead, 60)
        runs = [int(line[1]) for line in s.ledger_of("flaky")]
        assert len(runs) == 4, runs
        gaps = [b - a for a, b in itertools.pairwise(runs)]
        # failure n waits min(2000, 1000 * 2**(n-1)): 1 s, 2 s, 2 s (the scheduler pass
        # and the long poll add at most ~1.5 s each).
        for gap, delay in zip(gaps, (1_000, 2_000, 2_000), strict=True):
            assert delay <= gap <= delay + 2_500, (gaps, runs)
        assert letter.message_id == task.id
        assert letter.dead_letter_reason == "MaxDeliveryCountExceeded"
        assert letter.dead_letter_description == "Reject: attempt failed k1"
        assert letter.last_error == "Reject: attempt failed k1"
        assert w.proc.poll() is None  # the worker kept running through it all
    finally:
        client.close()
        s.app.close()
