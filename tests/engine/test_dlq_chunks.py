"""An unpaced Redrive or Purge is a walk of bounded chunks, each its own transaction
(issue 26: 200,000 dead letters in one transaction held other queues' Sends for 2.5 s):
the writer serves other work between chunks, a dead letter is taken at most once, and
a crash between chunks leaves every message once -- moved or still dead-lettered.

Real SQLite files; ``dlq.CHUNK_ROWS`` is lowered so a few dozen messages make several
chunks; the concurrency is sequenced by the writer's own queue and events, not by time.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mqlite import OutMessage, QueueConfig
from mqlite.clock import FakeClock
from mqlite.engine import dlq
from mqlite.engine.engine import Engine
from mqlite.engine.signals import WriterSignals

T0 = 1_700_000_000_000
ROWS = 10  # dlq.CHUNK_ROWS in these tests
N = 35  # dead letters: chunks of 10, 10, 10, 5


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dlq, "CHUNK_ROWS", ROWS)


@pytest.fixture
def eng(tmp_path: Path, small_chunks: None) -> Iterator[Engine]:
    engine = Engine(f"file:{tmp_path / 'mq.db'}", clock=FakeClock(T0))
    yield engine
    engine.close()


def dead_letters(eng: Engine, queue: str, n: int) -> list[bytes]:
    """``n`` messages dead-lettered in ``queue`` (sent, received, rejected): their bodies."""
    eng.create_queue(queue, QueueConfig())
    bodies = [f"{queue}-{i:03d}".encode() for i in range(n)]
    eng.send(queue, [OutMessage(body=b) for b in bodies])
    for m in eng.receive(queue, max_messages=n):
        eng.reject(queue, m.seq_number, m.lock_token, "test")
    assert eng.stats(queue).dead_lettered == n
    return bodies


def test_the_plan_bounds_every_transaction_and_pauses_only_a_paced_walk(
    small_chunks: None,
) -> None:
    def plan(max_: int, rate: int, take: int = 8) -> list[tuple[int, bool]]:
        steps = dlq.chunk_plan(max_, rate)
        return [step for step, _ in zip(steps, range(take), strict=False)]

    assert plan(0, 0, 3) == [(10, False)] * 3  # all: until a chunk comes back short
    assert plan(25, 0) == [(10, False), (10, False), (5, False)]
    assert plan(0, 25, 6) == [(10, False), (10, False), (5, True)] * 2  # 25 per second
    assert plan(30, 4) == [(4, True)] * 7 + [(2, True)]


def interleave_check(
    eng: Engine, monkeypatch: pytest.MonkeyPatch, name: str
) -> Callable[[], list[str]]:
    """Wrap ``dlq.<name>`` (one chunk's SQL): during the first chunk another thread
    Sends to another queue (queued on the writer behind the chunk's token); the third
    chunk must not start before that Send returned. The events seen, for the asserts."""
    real = getattr(dlq, name)
    events: list[str] = []
    done = threading.Event()
    queued = WriterSignals.attach(eng.writer).queued

    def send() -> None:
        eng.send("bystander", [OutMessage(body=b"x")])
        done.set()

    def chunk(*args: Any, **kwargs: Any) -> Any:
        events.append("chunk")
        if len(events) == 1:
            threading.Thread(target=send, daemon=True).start()
            # The Send is queued on the writer (this chunk holds the token).
            queued.wait_for(lambda n: n >= 1, "the bystander's Send queued")
        elif events.count("chunk") == 3:
            events.append("send done" if done.wait(10) else "send still waiting")
        return real(*args, **kwargs)

    monkeypatch.setattr(dlq, name, chunk)
    return lambda: events


def test_a_send_completes_between_the_chunks_of_an_unpaced_redrive(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    bodies = dead_letters(eng, "dlq", N)
    eng.create_queue("bystander", QueueConfig())
    eng.create_queue("target", QueueConfig())
    events = interleave_check(eng, monkeypatch, "redrive")
    assert eng.redrive("dlq", target="target") == N
    assert events()[:4] == ["chunk", "chunk", "chunk", "send done"], events()
    assert events().count("chunk") == 4  # 10 + 10 + 10 + 5
    assert eng.stats("bystander").active == 1
    moved = [m.body for m in eng.peek("target", max=N)]
    assert moved == bodies  # each once, in order
    assert eng.stats("dlq").dead_lettered == 0


def test_a_send_completes_between_the_chunks_of_an_unpaced_purge(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead_letters(eng, "dlq", N)
    eng.create_queue("bystander", QueueConfig())
    events = interleave_check(eng, monkeypatch, "purge")
    assert eng.purge("dlq") == N
    assert events()[:4] == ["chunk", "chunk", "chunk", "send done"], events()
    assert eng.stats("dlq").dead_lettered == 0
    assert eng.stats("bystander").active == 1


def test_a_walk_takes_each_dead_letter_once_even_if_it_dies_again_meanwhile(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message redriven in place keeps its id; dead-lettered again during the walk, a
    later chunk must not take it again (the walk continues after the last id it did)."""
    dead_letters(eng, "dlq", 25)
    real = dlq.redrive
    calls: list[int] = []

    def chunk(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:  # the first chunk's messages fail again before the second
            for m in eng.receive("dlq", max_messages=ROWS):
                eng.reject("dlq", m.seq_number, m.lock_token, "again")
        return real(*args, **kwargs)

    monkeypatch.setattr(dlq, "redrive", chunk)
    assert eng.redrive("dlq") == 25  # not 35: the ten that died again stay dead
    stats = eng.stats("dlq")
    assert (stats.active, stats.dead_lettered) == (15, 10)


def test_max_spans_chunks_and_a_paced_walk_pauses_on_the_engine_clock(
    tmp_path: Path, small_chunks: None
) -> None:
    clock = FakeClock(T0)
    engine = Engine(f"file:{tmp_path / 'mq.db'}", clock=clock)
    try:
        dead_letters(engine, "dlq", N)
        assert engine.redrive("dlq", max=25) == 25  # 10 + 10 + 5, no pause
        assert clock.now_ms() == T0
        assert engine.stats("dlq").dead_lettered == N - 25
        assert engine.purge("dlq", max=4) == 4
        assert engine.redrive("dlq", rate_per_sec=4) == 6  # 4, pause, 2 (short: done)
        assert clock.now_ms() == T0 + dlq.PACE_INTERVAL_MS
    finally:
        engine.close()


CRASH = textwrap.dedent(
    """
    import sys
    from mqlite import QueueConfig
    from mqlite.engine import dlq, killpoints
    from mqlite.engine.engine import Engine
    dlq.CHUNK_ROWS = {rows}
    eng = Engine(sys.argv[1])
    eng.create_queue("target", QueueConfig())
    killpoints.arm(killpoints.parse(sys.argv[2]))
    if sys.argv[3] == "redrive":
        eng.redrive("dlq", target="target")
    else:
        eng.purge("dlq")
    print("not killed")
    """
)


@pytest.mark.parametrize(("verb", "done"), [("redrive", 2), ("purge", 1)])
def test_a_crash_between_chunks_leaves_every_message_once(
    tmp_path: Path, small_chunks: None, verb: str, done: int
) -> None:
    """SIGKILLed just before the COMMIT of chunk ``done + 1`` (a real process, the crash
    drill's kill point): the chunks before it stand, the rest are still dead letters, no
    message is in both places or lost; running it again finishes the job."""
    dsn = f"file:{tmp_path / 'mq.db'}"
    setup = Engine(dsn, clock=FakeClock(T0))
    bodies = dead_letters(setup, "dlq", N)
    setup.close()
    proc = subprocess.run(
        [sys.executable, "-c", CRASH.format(rows=ROWS), dsn, f"commit.before@{done + 1}", verb],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -9, proc.stdout + proc.stderr  # armed after its own setup
    eng = Engine(dsn, clock=FakeClock(T0))
    try:
        left = [m.body for m in eng.peek("dlq", state="dead_lettered", max=N)]
        assert left == bodies[done * ROWS :]
        moved = [m.body for m in eng.peek("target", max=N)]
        assert moved == (bodies[: done * ROWS] if verb == "redrive" else [])
        finish = eng.redrive("dlq", target="target") if verb == "redrive" else eng.purge("dlq")
        assert finish == N - done * ROWS
        assert eng.stats("dlq").dead_lettered == 0
        if verb == "redrive":
            assert [m.body for m in eng.peek("target", max=N)] == bodies
    finally:
        eng.close()
