"""The response byte budget charges every encoded field (issue 12: 30 MiB subjects made
a 720 MiB Peek): ``encoded_size`` never underestimates what the wire writes."""

from __future__ import annotations

import pytest

from mqlite import wire
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
