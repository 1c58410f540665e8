"""engine/frozen.py: the hot path's Message/BatchResult constructor builds exactly what the
frozen dataclass's own ``__init__`` builds, and refuses a class it cannot build safely."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest

from mqlite.engine.frozen import constructor
from mqlite.engine.rows import (
    CLAIM_COLUMNS,
    CLAIM_METADATA,
    MESSAGE_COLUMNS,
    claimed_message,
    make_message,
    row_to_message,
)
from mqlite.engine.settle_batch import _results, make_result
from mqlite.types import BatchResult, Message

# One row as MESSAGE_COLUMNS selects it, every field set (a peek and a receive read it).
ROW = (
    7, "q", "locked", 11, 12, "tok", 3, 10, 99, "mid", "cid", "rto", "gid", "ct", "subj",
    '{"k":"v"}', b"body", "why", "what", "err", 13,
)  # fmt: skip


def test_a_constructed_message_is_a_message_equal_to_one_built_by_its_init() -> None:
    built = make_message(*range(1, 22), None)
    plain = Message(*range(1, 22))
    assert type(built) is Message
    assert built == plain and hash(built.seq_number) == hash(plain.seq_number)
    assert pickle.loads(pickle.dumps(built)) == plain
    assert dataclasses.replace(built, queue="x") == dataclasses.replace(plain, queue="x")


def test_a_constructed_message_stays_frozen() -> None:
    built = make_message(*range(1, 22), None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.queue = "x"  # type: ignore[misc]


def test_a_constructed_batch_result_equals_and_hashes_as_one_built_by_its_init() -> None:
    built = make_result(5, True, 0)
    assert type(built) is BatchResult
    assert built == BatchResult(5, True) and hash(built) == hash(BatchResult(5, True))


def test_the_batch_results_builder_stores_every_field() -> None:
    """settle_batch._results skips the constructor (frozen.py): compared whole."""
    results = _results([(5, "a"), (6, "b"), (5, "a")], False, {(5, "a")})
    assert all(type(r) is BatchResult for r in results)
    assert results == [BatchResult(5, True), BatchResult(6, False), BatchResult(5, True)]
    assert hash(results[0]) == hash(BatchResult(5, True))
    assert _results([(5, "a"), (6, "b")], True, set()) == [
        BatchResult(5, True),
        BatchResult(6, True),
    ]


def test_row_to_message_gives_the_receive_view_and_the_peek_view() -> None:
    common = dict(
        seq_number=7, queue="q", body=b"body", message_id="mid", group_id="gid",
        subject="subj", correlation_id="cid", reply_to="rto", content_type="ct",
        properties={"k": "v"}, delivery_count=3, enqueued_at_ms=10, locked_until_ms=12,
        last_error="err", last_error_at_ms=13,
    )  # fmt: skip
    assert row_to_message(ROW) == Message(**common, lock_token="tok")  # type: ignore[arg-type]
    assert row_to_message(ROW, peek=True) == Message(
        **common,  # type: ignore[arg-type]
        state="locked",
        visible_at_ms=11,
        expires_at_ms=99,
        dead_letter_reason="why",
        dead_letter_description="what",
    )


def names(columns: str) -> list[str]:
    return [c.strip() for c in columns.split(",")]


def test_the_claim_loops_builder_stores_every_field_as_row_to_message_does() -> None:
    """rows.claimed_message skips the constructor: a field it forgot would be an empty
    slot (AttributeError on read), a field it got wrong -- or a CLAIM_COLUMNS order that
    differs from its unpacking -- a different message. The claim row is taken from the
    MESSAGE_COLUMNS row by column name; queue, token and lease are the claim's own."""
    settler = object()
    # no metadata, no error: every optional column NULL
    sparse = (7, "q", "locked", 11, 12, "tok", 1, 10, 0, *[None] * 7, b"", None, None, None, 0)
    for row in (ROW, sparse):
        full: dict[str, Any] = dict(zip(names(MESSAGE_COLUMNS), row, strict=True))
        claim_row = tuple(full[name] for name in names(CLAIM_COLUMNS))
        built = claimed_message(
            claim_row,
            full["queue"],
            full["lock_token"],
            full["locked_until"],
            settler,  # type: ignore[arg-type]
        )
        expected = row_to_message(row)
        assert type(built) is Message
        for f in dataclasses.fields(Message):
            if f.name != "_settler":
                assert getattr(built, f.name) == getattr(expected, f.name), f.name
        assert built._settler is settler
        with pytest.raises(dataclasses.FrozenInstanceError):
            built.queue = "x"  # type: ignore[misc]


def test_claim_metadata_is_the_claim_rows_message_id_to_properties_columns() -> None:
    """The claim loop charges a row without metadata without encoded_size (claim.py)."""
    assert names(CLAIM_COLUMNS)[CLAIM_METADATA] == [
        "message_id", "correlation_id", "reply_to", "group_id", "content_type", "subject",
        "properties",
    ]  # fmt: skip


def test_a_class_it_cannot_build_safely_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            raise AssertionError("never skipped silently")

    for cls in (NoSlots, Checked):
        with pytest.raises(TypeError):
            constructor(cls)
