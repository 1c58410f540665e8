"""Bad request bodies and the exact InvalidArgument message each must produce."""

from __future__ import annotations

import json
from typing import Any

from mqlite import wire

SEND_OK = {"queue": "q", "messages": []}


def doc(**extra: Any) -> bytes:
    return json.dumps({**SEND_OK, **extra}).encode()


def msgs(*items: Any) -> bytes:
    return json.dumps({"queue": "q", "messages": list(items)}).encode()


CASES: list[tuple[str, wire.Route[Any, Any], bytes, str]] = [
    ("empty", wire.SEND, b"", "empty request body (want a JSON object)"),
    ("blank", wire.SEND, b" \r\n\t", "empty request body (want a JSON object)"),
    ("trailing", wire.SEND, b"{}{}", "unexpected data after JSON body (want a single object)"),
    (
        "trailing-after-valid",
        wire.STATS,
        b'{"queue":"q"} x',
        "unexpected data after JSON body (want a single object)",
    ),
    (
        "truncated",
        wire.SEND,
        b'{"queue":',
        "invalid JSON: Expecting value: line 1 column 10 (char 9)",
    ),
    (
        "bad-token",
        wire.SEND,
        b'{"queue": q}',
        "invalid JSON: Expecting value: line 1 column 11 (char 10)",
    ),
    (
        "single-quotes",
        wire.SEND,
        b"{'queue':'q'}",
        "invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
    ),
    ("array", wire.SEND, b"[]", "request body: want object, got array"),
    ("string", wire.SEND, b'"x"', "request body: want object, got string"),
    ("null", wire.SEND, b"null", "request body: want object, got null"),
    ("number", wire.STATUS, b"1", "request body: want object, got number"),
    ("unknown-top", wire.SEND, doc(x=1), 'unknown field "x" in the request'),
    (
        "case-sensitive",
        wire.STATS,
        b'{"Queue":"q"}',
        'unknown field "Queue" in the request (did you mean "queue"?)',
    ),
    (
        "unknown-message",
        wire.SEND,
        msgs({"bodyx": ""}),
        'unknown field "bodyx" in messages[0] (did you mean "body"?)',
    ),
    # Issue 31: an SDK argument name, or a nested field sent flat, names the wire's.
    (
        "sdk-name",
        wire.RECEIVE,
        b'{"queue":"q","wait_ms":5}',
        'unknown field "wait_ms" in the request (did you mean "wait_time_ms"?)',
    ),
    (
        "flat-nested",
        wire.SUBSCRIBE,
        b'{"topic":"t","name":"n","expr":"x"}',
        'unknown field "expr" in the request (did you mean "filter": {"expr": …}?)',
    ),
    (
        "unknown-config",
        wire.CREATE_QUEUE,
        b'{"name":"q","config":{"lock_duration":1}}',
        'unknown field "lock_duration" in config (did you mean "lock_duration_ms"?)',
    ),
    (
        "unknown-filter",
        wire.SUBSCRIBE,
        b'{"topic":"t","name":"n","filter":{"exp":"x"}}',
        'unknown field "exp" in filter (did you mean "expr"?)',
    ),
    (
        "unknown-sample",
        wire.TEST_FILTER,
        b'{"expr":"true","message":{"queue":"q"}}',
        'unknown field "queue" in message',
    ),
    (
        "unknown-batch-item",
        wire.RENEW_BATCH,
        b'{"queue":"q","messages":[{"seq_number":1,"lock_token":"a","x":0}]}',
        'unknown field "x" in messages[0]',
    ),
    ("unknown-empty", wire.LIST_QUEUES, b'{"a":1}', 'unknown field "a" in the request'),
    (
        "property-value",
        wire.SEND,
        msgs({}, {}, {"properties": {"k": 1}}),
        "messages[2].properties.k: want string, got number",
    ),
    (
        "properties-array",
        wire.SEND,
        msgs({"properties": []}),
        "messages[0].properties: want object, got array",
    ),
    ("message-not-object", wire.SEND, msgs("hi"), "messages[0]: want object, got string"),
    ("messages-object", wire.SEND, doc(messages={}), "messages: want array, got object"),
    ("messages-null", wire.SEND, doc(messages=None), "messages: want array, got null"),
    ("queue-null", wire.SEND, doc(queue=None), "queue: want string, got null"),
    ("queue-number", wire.SEND, doc(queue=1), "queue: want string, got number"),
    # null = absent in an optional field (test_wire_null.py); a required one is refused:
    ("name-null", wire.CREATE_QUEUE, b'{"name":null}', "name: want string, got null"),
    (
        "permissions-null",
        wire.CREATE_KEY,
        b'{"id":"a","name":"n","permissions":null}',
        "permissions: want array, got null",
    ),
    ("message-null", wire.SEND, msgs(None), "messages[0]: want object, got null"),
    (
        "batch-item-token-null",
        wire.COMPLETE_BATCH,
        b'{"queue":"q","messages":[{"seq_number":1,"lock_token":null}]}',
        "messages[0].lock_token: want string, got null",
    ),
    (
        "null-beside-a-fault",
        wire.RECEIVE,
        b'{"queue":"q","max_messages":null,"wait_time_ms":"5"}',
        "wait_time_ms: want integer, got string",
    ),
    ("float", wire.SEND, doc(ttl_ms=1.5), "ttl_ms: want integer, got number"),
    ("float-integral", wire.SEND, doc(ttl_ms=1.0), "ttl_ms: want integer, got number"),
    (
        "exponent",
        wire.SEND,
        b'{"queue":"q","messages":[],"ttl_ms":1e3}',
        "ttl_ms: want integer, got number",
    ),
    ("bool-for-int", wire.SEND, doc(ttl_ms=True), "ttl_ms: want integer, got boolean"),
    ("string-for-int", wire.SEND, doc(ttl_ms="5"), "ttl_ms: want integer, got string"),
    ("int64-over", wire.SEND, doc(ttl_ms=1 << 63), "ttl_ms: integer out of int64 range"),
    ("int64-under", wire.SEND, doc(ttl_ms=-(1 << 63) - 1), "ttl_ms: integer out of int64 range"),
    (
        "digits",
        wire.SEND,
        b'{"queue":"q","messages":[],"ttl_ms":' + b"9" * 5000 + b"}",
        "invalid JSON: number literal too long",
    ),
    (
        "int-for-bool",
        wire.CREATE_QUEUE,
        b'{"name":"q","config":{"dead_letter_on_expire":1}}',
        "config.dead_letter_on_expire: want boolean, got number",
    ),
    (
        "string-for-float",
        wire.CREATE_QUEUE,
        b'{"name":"q","config":{"default_ttl_ms":0,"retry_multiplier":"2"}}',
        "config.retry_multiplier: want number, got string",
    ),
    (
        "config-array",
        wire.CREATE_QUEUE,
        b'{"name":"q","config":[]}',
        "config: want object, got array",
    ),
    (
        "seq-list-item",
        wire.RECEIVE_DEFERRED,
        b'{"queue":"q","seq_numbers":[1,"2"]}',
        "seq_numbers[1]: want integer, got string",
    ),
    (
        "nan",
        wire.SEND,
        b'{"queue":"q","messages":[],"ttl_ms":NaN}',
        "invalid JSON: NaN is not valid JSON (want a finite number)",
    ),
    (
        "infinity",
        wire.SEND,
        b'{"ttl_ms":Infinity}',
        "invalid JSON: Infinity is not valid JSON (want a finite number)",
    ),
    (
        "-infinity",
        wire.SEND,
        b'{"ttl_ms":-Infinity}',
        "invalid JSON: -Infinity is not valid JSON (want a finite number)",
    ),
    (
        "duplicate-top",
        wire.SEND,
        b'{"queue":"q","queue":"r","messages":[]}',
        'duplicate field "queue" in the request',
    ),
    (
        "duplicate-nested",
        wire.SEND,
        b'{"queue":"q","messages":[{"properties":{"a":"1","a":"2"}}]}',
        'duplicate field "a" in messages[0].properties',
    ),
    (
        "duplicate-config",
        wire.CREATE_QUEUE,
        b'{"name":"q","config":{"kind":"queue","kind":"queue"}}',
        'duplicate field "kind" in config',
    ),
    (
        "base64-chars",
        wire.SEND,
        msgs({"body": "!!"}),
        "messages[0].body: invalid base64: Only base64 data is allowed",
    ),
    (
        "base64-padding",
        wire.SEND,
        msgs({"body": "aGk"}),
        "messages[0].body: invalid base64: Incorrect padding",
    ),
    (
        "base64-urlsafe",
        wire.SEND,
        msgs({"body": "-_8="}),
        "messages[0].body: invalid base64: Only base64 data is allowed",
    ),
    (
        "base64-newline",
        wire.SEND,
        msgs({"body": "aGk=\n"}),
        "messages[0].body: invalid base64: Excess data after padding",
    ),
    (
        "base64-non-ascii",
        wire.SEND,
        msgs({"body": "é"}),
        "messages[0].body: invalid base64: string argument should contain only ASCII characters",
    ),
    (
        "base64-number",
        wire.SEND,
        msgs({"body": 5}),
        "messages[0].body: want base64 string, got number",
    ),
    (
        "receive-mode",
        wire.RECEIVE,
        b'{"queue":"q","receive_mode":2}',
        "receive_mode: want one of 0, 1, got 2",
    ),
    (
        "peek-state",
        wire.PEEK,
        b'{"queue":"q","state":"bogus"}',
        'state: want one of "", "active", "locked", "deferred", "scheduled", '
        '"dead_lettered", got "bogus"',
    ),
    (
        "kind",
        wire.CREATE_QUEUE,
        b'{"name":"q","config":{"kind":"topic"}}',
        'config.kind: want one of "", "queue", "subscription", got "topic"',
    ),
    (
        "ordering-mode",
        wire.CREATE_QUEUE,
        b'{"name":"q","config":{"ordering_mode":"fifo"}}',
        'config.ordering_mode: want one of "", "standard", "group_fifo", "strict_fifo", got "fifo"',
    ),
    (
        "permission",
        wire.CREATE_KEY,
        b'{"id":"a","name":"n","permissions":["admin"]}',
        'permissions[0]: want one of "send", "listen", "manage", got "admin"',
    ),
    (
        "sort",
        wire.LIST_KEYS,
        b'{"sort":"name"}',
        'sort: want one of "", "id_asc", "created_desc", got "name"',
    ),
    (
        "send-no-messages",
        wire.SEND,
        b'{"queue":"q"}',
        'missing required field "messages" in the request',
    ),
    (
        "batch-item-token",
        wire.COMPLETE_BATCH,
        b'{"queue":"q","messages":[{"seq_number":1}]}',
        'missing required field "lock_token" in messages[0]',
    ),
    (
        "delete-generation",
        wire.DELETE_QUEUE,
        b'{"name":"q"}',
        'missing required field "generation" in the request',
    ),
    ("deep-array", wire.SEND, b"[" * 100_000 + b"]" * 100_000, "invalid JSON: nesting too deep"),
    ("deep-in-field", wire.SEND, b'{"queue":' + b"[" * 100_000, "invalid JSON: nesting too deep"),
    (
        "shallow-nesting",
        wire.SEND,
        b'{"queue":' + b"[" * 200 + b"]" * 200 + b"}",
        "queue: want string, got array",
    ),
    (
        "not-utf8",
        wire.SEND,
        b'{"queue":"\xff"}',
        "invalid JSON: request body is not valid UTF-8 (byte 10)",
    ),
    (
        "bom",
        wire.STATS,
        b'\xef\xbb\xbf{"queue":"q"}',
        "invalid JSON: Expecting value: line 1 column 1 (char 0)",
    ),
    (
        "lone-surrogate",
        wire.SEND,
        b'{"queue":"\\ud800","messages":[]}',
        "invalid JSON: string holds an unpaired UTF-16 surrogate escape",
    ),
    (
        "lone-surrogate-key",
        wire.SEND,
        b'{"queue":"q","messages":[{"properties":{"\\udc00":"v"}}]}',
        "invalid JSON: string holds an unpaired UTF-16 surrogate escape",
    ),
    (
        "long-unknown",
        wire.STATS,
        json.dumps({"x" * 100: 1}).encode(),
        f'unknown field "{"x" * 64}..." in the request',
    ),
]
