"""The response byte budget charges every encoded field (issue 12: 30 MiB subjects made
a 720 MiB Peek): ``encoded_size`` never underestimates what the wire writes."""

from __future__ import annotations

import pytest

import mqlite
from mqlite import OutMessage, defaults, wire
from mqlite.engine.budget import encoded_size, json_len
from mqlite.types import Message

TEXTS = ["", "plain", 'q"uote\\back', "ünïcødé ✓", "\x00\x01\x1f ctl", "\U0001f600" * 3, "x" * 4096]


@pytest.mark.parametrize("text", TEXTS)
def test_json_len_is_an_upper_bound_of_the_encoded_string(text: str) -> None:
    assert json_len(text) >= len(wire.dumps(text)) - 3  # minus the quotes and newline


@pytest.mark.parametrize("body_len", [0, 1, 2, 3, 4, 1000, 1 << 16])
@pytest.mark.parametrize("text", TEXTS)
def test_encoded_size_bounds_both_response_views(body_len: int, text: str) -> None:
    full = Message(
        seq_number=2**62,
        queue="q",
        body=b"\xff" * body_len,
        message_id=text,
        group_id=text,
        subject=text,
        correlation_id=text,
        reply_to=text,
        content_type=text,
        properties={f"k{i}{text}": text for i in range(8)},
        delivery_count=2**31,
        enqueued_at_ms=2**50,
        locked_until_ms=2**50,
        lock_token="lt_" + "f" * 32,
        state="dead_lettered",
        visible_at_ms=2**50,
        expires_at_ms=2**50,
        dead_letter_reason=text,
        dead_letter_description=text,
    )
    received = len(wire.dumps(wire.ReceiveResponse.of([full])))
    peeked = len(wire.dumps(wire.PeekResponse.of([full])))
    assert encoded_size(full) >= max(received, peeked) - len('{"messages":[]}\\n')


def test_metadata_counts_even_with_an_empty_body() -> None:
    bare = encoded_size(Message(seq_number=1))
    assert encoded_size(Message(seq_number=1, subject="s" * 4096)) == bare + 4096


@pytest.mark.parametrize("mode", ["peek_lock", "receive_and_delete"])
@pytest.mark.parametrize("subject", ["", "s" * 100])
@pytest.mark.parametrize(("extra", "expected"), [(0, 2), (1, 3)])
def test_receive_charges_each_claimed_message_exactly_its_encoded_size(
    engine: mqlite.EmbeddedClient,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    subject: str,
    extra: int,
    expected: int,
) -> None:
    """The claim loop charges a message without metadata inline (hot path): the charge
    must equal ``encoded_size`` of what Receive returns, token or no token -- a budget of
    exactly two messages stops at two, one byte more takes a third."""
    engine.create_queue("q")
    engine.send("q", [OutMessage(body=b"x" * 100, subject=subject) for _ in range(5)])
    token = "" if mode == "receive_and_delete" else "0" * 32  # a claim's 128-bit hex token
    unit = encoded_size(Message(seq_number=1, body=b"x" * 100, subject=subject, lock_token=token))
    monkeypatch.setattr(defaults, "RESPONSE_BYTE_BUDGET", 2 * unit + extra)
    got = engine.receive("q", max_messages=5, mode=mode)
    assert len(got) == expected
    assert all(encoded_size(m) == unit for m in got)
