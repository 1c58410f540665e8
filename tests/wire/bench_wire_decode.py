"""Wire codec timings (not a test; run: .venv/bin/python tests/wire/bench_wire_decode.py)."""

from __future__ import annotations

import base64
import json
import timeit
from collections.abc import Callable

from mqlite import wire
from mqlite.types import Message

N = 64
MSGS = [
    {
        "body": base64.b64encode(b'{"order":%d,"total":1999}' % i).decode(),
        "message_id": f"m-{i}",
        "group_id": "cust-7",
        "properties": {"k": "v", "region": "eu"},
    }
    for i in range(N)
]
SEND_BODY = json.dumps({"queue": "orders", "messages": MSGS}).encode()
SEND1_BODY = json.dumps({"queue": "orders", "messages": MSGS[:1]}).encode()
RECEIVED = [
    Message(
        i + 1,
        body=b"x" * 100,
        message_id=f"m-{i}",
        properties={"k": "v"},
        delivery_count=1,
        enqueued_at_ms=1_750_000_000_000,
        locked_until_ms=1_750_000_030_000,
        lock_token="a" * 32,
    )
    for i in range(N)
]
RECEIVE_BODY = wire.encode_response(wire.RECEIVE, wire.ReceiveResponse.of(RECEIVED))
SEND_REQ = wire.decode_request(wire.SEND, SEND_BODY)
OUT = SEND_REQ.out_messages()


def timed(label: str, fn: Callable[[], object], n: int = N, number: int = 500) -> None:
    best = min(timeit.repeat(fn, number=number, repeat=7)) / number
    print(f"{label:<44} {best * 1e6:8.1f} µs  ({best * 1e6 / n:5.2f} µs/message)")


def main() -> None:
    print(f"{N}-message requests, Send body {len(SEND_BODY)} bytes")
    timed("json.loads (floor)", lambda: json.loads(SEND_BODY))
    timed(
        "decode_request Send + OutMessages (server)",
        lambda: wire.decode_request(wire.SEND, SEND_BODY).out_messages(),
    )
    timed(
        "decode_request Send x1 + OutMessage (server)",
        lambda: wire.decode_request(wire.SEND, SEND1_BODY).out_messages(),
        n=1,
    )
    timed(
        "encode_response Receive (server)",
        lambda: wire.encode_response(wire.RECEIVE, wire.ReceiveResponse.of(RECEIVED)),
    )
    timed(
        "encode_request Send (SDK)",
        lambda: wire.encode_request(
            wire.SEND, wire.SendRequest("orders", tuple(wire.MessageJSON.of(m) for m in OUT))
        ),
    )
    timed(
        "decode_response Receive (SDK)",
        lambda: wire.decode_response(wire.RECEIVE, RECEIVE_BODY).values("orders"),
    )


if __name__ == "__main__":
    main()
