"""The call table drives everything generated from it: the generated modules are current,
the embedded forwarders call the engine method of the same name with the same arguments,
the sans-IO verbs yield exactly the calls they declare, and the retry classes are the
documented ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import mqlite
from mqlite import OutMessage, QueueConfig, errors, wire
from mqlite.sdk import calls
from mqlite.sdk.call import RETRY, VERBS, Call
from mqlite.sdk.embedded_methods import EmbeddedMethods

REPO = Path(__file__).resolve().parents[2]

# api-reference "Retry": what a lost answer may NOT resend (nothing else is unsafe).
UNSAFE = {
    "QueueService/Send",
    "QueueService/Schedule",
    "QueueService/Cancel",
    "QueueService/ReceiveDeferred",
    "AdminService/DeleteQueue",
    "AdminService/Unsubscribe",
    "AdminService/Redrive",
    "AdminService/Purge",
    "AuthService/CreateKey",
    "AdminService/CreatePush",  # a replay would answer without the generated secret
}


def test_the_generated_modules_are_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_sdk.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_retry_classes_are_the_documented_ones() -> None:
    assert {name for name, safe in RETRY.items() if not safe} == UNSAFE


class Recorder:
    """Stands in for the engine: records each call as (name, args)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> str:
            assert not kwargs, "forwarders pass arguments positionally, in table order"
            self.calls.append((name, args))
            return f"result of {name}"

        return record


class Facade(EmbeddedMethods):
    def __init__(self, engine: Any) -> None:
        self._engine = engine


@pytest.mark.parametrize("name", sorted(n for n, v in VERBS.items() if v.embedded))
def test_each_forwarder_calls_the_same_engine_method_with_the_same_args(name: str) -> None:
    engine = Recorder()
    fn = VERBS[name].fn
    params = list(fn.__code__.co_varnames[: fn.__code__.co_argcount])
    args = tuple(f"arg-{p}" for p in params)
    result = getattr(Facade(engine), name)(*args)
    assert engine.calls == [(name, args)]
    assert result in (f"result of {name}", None)


def test_a_facade_over_the_real_engine_works(tmp_path: Path) -> None:
    """The forwarders' signatures fit the engine (mypy checks it where the facade sets
    ``_engine``; this runs it)."""
    engine = mqlite.open_embedded(f"file:{tmp_path / 'mq.db'}", background=False)
    try:
        mq = Facade(engine)
        assert mq.create_queue("q", QueueConfig(max_delivery_count=3)).name == "q"
        seq = mq.send_one("q", OutMessage(b"x"))
        (m,) = mq.receive("q", wait_ms=0)
        assert m.seq_number == seq
        mq.complete("q", m.seq_number, m.lock_token)
        assert mq.stats("q").total == 0
        with pytest.raises(errors.QueueNotFound):
            mq.get_queue("nope")
    finally:
        engine.close()


def _drive(steps: Any, answers: list[Any]) -> tuple[list[Call[Any]], Any]:
    """Run a verb's steps, answering each call from ``answers``; (calls, result)."""
    seen: list[Call[Any]] = []
    try:
        call = next(steps)
        while True:
            seen.append(call)
            call = steps.send(answers.pop(0))
    except StopIteration as done:
        return seen, done.value


def test_create_queue_is_create_then_list() -> None:
    info = wire.QueueInfoJSON("q", "queue", 30_000, 10, 0, 0, "g1")
    seen, result = _drive(
        calls.create_queue("q"), [wire.EmptyResponse(), wire.ListQueuesResponse((info,))]
    )
    assert [c.route for c in seen] == [wire.CREATE_QUEUE, wire.LIST_QUEUES]
    assert [c.safe for c in seen] == [True, True]
    assert seen[0].body == b'{"name":"q"}\n'
    assert result == info.value()


def test_delete_queue_looks_up_the_generation_only_when_not_given() -> None:
    info = wire.QueueInfoJSON("q", "queue", 30_000, 10, 0, 0, "g1")
    seen, _ = _drive(
        calls.delete_queue("q"), [wire.ListQueuesResponse((info,)), wire.DeleteQueueResponse()]
    )
    assert [c.route for c in seen] == [wire.LIST_QUEUES, wire.DELETE_QUEUE]
    assert seen[1].body == b'{"name":"q","generation":"g1"}\n' and not seen[1].safe
    seen, _ = _drive(calls.delete_queue("q", "g0"), [wire.DeleteQueueResponse()])
    assert [c.route for c in seen] == [wire.DELETE_QUEUE]


def test_receive_always_carries_an_attempt_id_and_its_wait() -> None:
    (call,), result = _drive(calls.receive("q", wait_ms=25_000), [wire.ReceiveResponse()])
    assert call.safe and call.wait_ms == 20_000  # clamped like the broker clamps it
    request = wire.decode_request(wire.RECEIVE, call.body)
    assert len(request.receive_attempt_id) == 32 and result == []


def test_renew_stands_in_with_a_one_item_renew_batch() -> None:
    answer = wire.RenewBatchResponse((wire.BatchResult(7, True, 123),))
    (call,), deadline = _drive(calls.renew("q", 7, "t"), [answer])
    assert call.route is wire.RENEW_BATCH and deadline == 123
    with pytest.raises(errors.LockLost):
        _drive(calls.renew("q", 7, "t"), [wire.RenewBatchResponse((wire.BatchResult(7, False),))])


@pytest.mark.parametrize(
    "make",
    [
        lambda: calls.send("q", [OutMessage(body="text")]),  # type: ignore[arg-type]
        lambda: calls.send("q", "not a list"),  # type: ignore[arg-type]
        lambda: calls.send_one("q", b"raw"),  # type: ignore[arg-type]
        lambda: calls.test_filter("true", OutMessage(body=1)),  # type: ignore[arg-type]
        lambda: calls.create_queue("q", {"kind": "queue"}),  # type: ignore[arg-type]
    ],
)
def test_a_wrong_argument_fails_before_anything_is_sent(make: Any) -> None:
    with pytest.raises(errors.InvalidArgument):
        next(make())
