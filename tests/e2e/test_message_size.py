"""How big can a message be (issue 31 item 5)? The broker refuses at start-up a
MQLITE_MAX_MESSAGE_BYTES that HTTP cannot carry, honours the largest one it accepts end
to end, and the "too large" error names the setting."""

from __future__ import annotations

import json

import pytest
from e2e_support import ADMIN_TOKEN, BrokerFactory, file_store_only

import mqlite
from mqlite import OutMessage, defaults, errors


def test_serve_refuses_a_message_cap_http_cannot_carry(broker_factory: BrokerFactory) -> None:
    cap = defaults.MAX_HONOURED_MESSAGE_BYTES + 1
    proc, _, _, err, _, _ = broker_factory.spawn({"MQLITE_MAX_MESSAGE_BYTES": str(cap)})
    assert proc.wait(timeout=15) == 1
    (line,) = err.read_text().splitlines()
    assert json.loads(line)["msg"] == (
        f"MQLITE_MAX_MESSAGE_BYTES={cap} is over what HTTP can carry: a request is at most "
        f"33554432 bytes (32 MiB), which holds a base64 body of at most "
        f"{defaults.MAX_HONOURED_MESSAGE_BYTES} bytes; set MQLITE_MAX_MESSAGE_BYTES to that "
        "or less"
    )


@file_store_only(
    "sqld answers at most 10 MiB per statement, under the 24 MiB body this sends "
    "(docs/operations.md, 'How big can a message be?')"
)
def test_the_largest_accepted_cap_is_honoured_end_to_end(broker_factory: BrokerFactory) -> None:
    cap = defaults.MAX_HONOURED_MESSAGE_BYTES
    b = broker_factory({"MQLITE_MAX_MESSAGE_BYTES": str(cap)})
    body = bytes(range(256)) * (cap // 256) + b"x" * (cap % 256)
    meta = {f"k{i:03d}": "v" * 200 for i in range(250)}  # ~52 KiB of properties as well
    with mqlite.connect(b.base_url, ADMIN_TOKEN, timeout=120) as mq:
        mq.create_queue("big")
        assert mq.send_one("big", OutMessage(body=body, properties=meta)) > 0
        (m,) = mq.receive("big")
        assert m.body == body and m.properties == meta
        m.complete()
        with pytest.raises(errors.MessageTooLarge) as exc:
            mq.send_one("big", OutMessage(body=body + b"!"))
    assert "MQLITE_MAX_MESSAGE_BYTES" in exc.value.message, exc.value.message
