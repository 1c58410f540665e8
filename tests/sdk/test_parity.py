"""Parity by construction: the protocol's method set matches both clients' signatures,
and one scenario run on both clients yields the same normalized transcript."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import mqlite
import mqlite.aio
from mqlite import OutMessage, QueueConfig, errors
from mqlite.sdk.aio import AsyncClient
from mqlite.sdk.protocol import Client

PROTOCOL_METHODS = sorted(
    name
    for name, member in vars(Client).items()
    if callable(member) and (not name.startswith("_") or name in ("__enter__", "__exit__"))
)


def _params(fn: Any) -> list[tuple[str, Any]]:
    sig = inspect.signature(fn)
    return [(p.name, p.default) for p in sig.parameters.values() if p.name != "self"]


@pytest.mark.parametrize("name", PROTOCOL_METHODS)
def test_same_signature_everywhere(name: str) -> None:
    expected = _params(getattr(Client, name))
    assert _params(getattr(mqlite.EmbeddedClient, name)) == expected
    assert _params(getattr(mqlite.HttpClient, name)) == expected
    if not name.startswith("__"):
        method = getattr(AsyncClient, name)
        assert inspect.iscoroutinefunction(method)
        assert _params(method) == expected


def test_public_exports() -> None:
    assert mqlite.aio.connect is mqlite.sdk.aio.connect
    assert issubclass(mqlite.ConnectionFailed, errors.MQLiteError)
    assert (mqlite.ConnectionFailed.code, mqlite.ConnectionFailed.http_status) == (
        "unavailable",
        503,
    )
    key_id = mqlite.generate_key_id()
    assert len(key_id) == 32 and key_id == key_id.lower() and int(key_id, 16) >= 0
    assert mqlite.generate_key_id() != key_id


class Normalizer:
    """Seq numbers become their order of appearance; tokens, times, generations and
    queue-name tags become placeholders, so two brokers' answers compare equal."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.seqs: dict[int, int] = {}

    def seq(self, n: int) -> int:
        return 0 if n == 0 else self.seqs.setdefault(n, len(self.seqs) + 1)

    def __call__(self, value: Any) -> Any:
        if isinstance(value, mqlite.Message):
            return (
                "Message",
                self.seq(value.seq_number),
                self(value.queue),
                value.body,
                value.message_id,
                value.group_id,
                value.subject,
                value.properties,
                value.delivery_count,
                bool(value.lock_token),
                bool(value.locked_until_ms),
                value.state,
                value.dead_letter_reason,
            )
        if isinstance(value, mqlite.BatchResult):
            return ("Batch", self.seq(value.seq_number), value.ok, bool(value.locked_until_ms))
        if isinstance(value, mqlite.Stats):
            return (
                "Stats",
                self(value.queue),
                value.active,
                value.locked,
                value.deferred,
                value.scheduled,
                value.dead_lettered,
                value.total,
            )
        if isinstance(value, mqlite.QueueInfo):
            return ("QueueInfo", self(value.name), value.config, bool(value.generation))
        if isinstance(value, str):
            return value.replace(self.tag, "<tag>")
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        return value


def scenario(mq: Any, tag: str) -> list[Any]:
    q, fifo, dd = f"q-{tag}", f"fifo-{tag}", f"dd-{tag}"
    norm = Normalizer(tag)
    log: list[Any] = []

    def do(label: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except errors.MQLiteError as exc:
            log.append((label, "raised", type(exc).__name__, exc.code))
            return None
        if label.startswith(("send", "dedup")):  # sequence numbers
            shown = [norm.seq(n) for n in result] if isinstance(result, list) else norm.seq(result)
        else:
            shown = norm(result)
        log.append((label, shown))
        return result

    do("create", mq.create_queue, q, QueueConfig(max_delivery_count=2))
    do("create fifo", mq.create_queue, fifo, QueueConfig(ordering_mode="strict_fifo"))
    do("create dd", mq.create_queue, dd, QueueConfig(dedup_window_ms=10_000))
    do("send", mq.send, q, [OutMessage(b"a", subject="s"), OutMessage(b"b", group_id="g")])
    do("send fifo", mq.send, fifo, [OutMessage(b"1"), OutMessage(b"2")])
    do("dedup", mq.send, dd, [OutMessage(b"x", message_id="m"), OutMessage(b"y", message_id="m")])
    do("dedup one", mq.send_one, dd, OutMessage(b"z", message_id="m"))
    got = do("receive", mq.receive, q, max_messages=5) or []
    do("peek", mq.peek, q)
    do("stats", mq.stats, q)
    if got:
        do("abandon", got[0].abandon)
        do("reject", got[1].reject, "why", "because")
        do("settle again", got[1].complete)
    again = do("receive again", mq.receive, q, max_messages=5) or []
    if again:
        do("abandon to dlq", again[0].abandon)
    do("peek dlq", mq.peek, q, state="dead_lettered")
    do("redrive", mq.redrive, q)
    do("receive fifo", mq.receive, fifo, max_messages=2)
    do("receive fifo blocked", mq.receive, fifo, max_messages=2)
    do("stats fifo", mq.stats, fifo)
    do("complete batch", mq.complete_batch, q, [(999_999_999, "nope")])
    do("missing", mq.stats, f"missing-{tag}")
    do("bad mode", mq.receive, q, mode="x")
    do("purge", mq.purge, q)
    do("cancel", mq.cancel, q, 999_999_999)
    do("list", lambda: [x for x in mq.list_queues() if tag in x.name])
    return log


def test_one_scenario_same_transcript(
    embedded: mqlite.EmbeddedClient, remote: mqlite.HttpClient, names: Any
) -> None:
    tag = names("t")
    local = scenario(embedded, tag)
    over_http = scenario(remote, tag)
    # list_queues over HTTP carries only the wire's config fields (documented)
    assert local[:-1] == over_http[:-1]
    assert [(x[1], x[3]) for x in local[-1][1]] == [(x[1], x[3]) for x in over_http[-1][1]]
    assert len(local[-1][1]) == 3
    raised = {entry[2] for entry in local if entry[1] == "raised"}
    assert raised == {"DedupConflict", "LockLost", "QueueNotFound", "InvalidArgument", "NotFound"}
