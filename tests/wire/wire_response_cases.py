"""Golden response cases shared by the wire tests: (route, value, the exact JSON)."""

from __future__ import annotations

from dataclasses import replace

from wire_cases import KEY_ID, Case

from mqlite import wire
from mqlite.types import (
    AccessKey,
    AuditEntry,
    BatchResult,
    FilterTestResult,
    Message,
    OutMessage,
    PushTarget,
    QueueConfig,
    QueueEnsured,
    QueueInfo,
    Schedule,
    Stats,
    Subscription,
)

FULL_MESSAGE = Message(
    seq_number=42,
    queue="orders",
    body=b"hi",
    message_id="m-1",
    group_id="g",
    subject="s",
    correlation_id="c",
    reply_to="r",
    content_type="text/plain",
    properties={"k": "v"},
    delivery_count=2,
    enqueued_at_ms=1_000,
    locked_until_ms=31_000,
    lock_token="0123456789abcdef0123456789abcdef",
    state="locked",
    visible_at_ms=1_500,
    expires_at_ms=99_000,
    dead_letter_reason="Why",
    dead_letter_description="because",
    last_error="timeout after 30s",
    last_error_at_ms=1_400,
)
_META = {
    "message_id": "m-1",
    "correlation_id": "c",
    "reply_to": "r",
    "group_id": "g",
    "content_type": "text/plain",
    "subject": "s",
    "properties": {"k": "v"},
    "body": "aGk=",
}
RECEIVED_JSON = {
    "seq_number": 42,
    "enqueued_at_ms": 1_000,
    "locked_until_ms": 31_000,
    "delivery_count": 2,
    "lock_token": "0123456789abcdef0123456789abcdef",
    **_META,
    "last_error": "timeout after 30s",
    "last_error_at_ms": 1_400,
}
PEEKED_JSON = {
    "seq_number": 42,
    "enqueued_at_ms": 1_000,
    "expires_at_ms": 99_000,
    "visible_at_ms": 1_500,
    "locked_until_ms": 31_000,
    "delivery_count": 2,
    "state": "locked",
    "dead_letter_reason": "Why",
    "dead_letter_description": "because",
    **_META,
    "last_error": "timeout after 30s",
    "last_error_at_ms": 1_400,
}
QUEUE_INFO = QueueInfo(
    "q",
    QueueConfig(lock_duration_ms=5_000, max_delivery_count=3, default_ttl_ms=7, dedup_window_ms=9),
    "gen-1",
)
KEY = AccessKey(KEY_ID, "ci", ("listen", "send"), 1_700_000_000_000)
REVOKED_KEY = AccessKey(KEY_ID, "old", ("manage",), 1, 2, 3)
SCHEDULE = Schedule(
    "nightly",
    "30 2 * * *",
    "reports",
    OutMessage(b"hi", subject="report"),
    "Europe/Berlin",
    "latest",
    False,
    1774747800000,
    1774661401000,
    1774661400000,
    3,
    "target missing",
    5,
    6,
)
PUSH = PushTarget(
    "orders", "https://hooks.example.com/o", 64, 2000, False, "failing", 503, "HTTP 503 (fixture)",
    7, 8, 5, 2, 1, 3, "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=",
)  # fmt: skip
PUSH_JSON = {
    "queue": "orders",
    "url": "https://hooks.example.com/o",
    "max_in_flight": 64,
    "timeout_ms": 2000,
    "paused": False,
    "status": "failing",
    "last_status": 503,
    "last_error": "HTTP 503 (fixture)",
    "last_attempt_at_ms": 7,
    "next_attempt_at_ms": 8,
    "delivered": 5,
    "failed": 2,
    "created_at_ms": 1,
    "updated_at_ms": 3,
}
PAUSED_SCHEDULE = Schedule("n", "@daily", "q", OutMessage(), catch_up="skip", paused=True,
                           status="paused")  # fmt: skip

RESPONSE_CASES: list[Case] = [
    (wire.SEND, wire.SendResponse((1, 0, 3)), {"seq_numbers": [1, 0, 3]}),
    (wire.SCHEDULE, wire.SendResponse(()), {"seq_numbers": []}),
    (wire.RECEIVE, wire.ReceiveResponse.of([FULL_MESSAGE]), {"messages": [RECEIVED_JSON]}),
    (wire.RECEIVE, wire.ReceiveResponse(), {"messages": []}),
    (
        wire.RECEIVE_DEFERRED,
        wire.ReceiveResponse.of([Message(5)]),
        {"messages": [{"seq_number": 5}]},
    ),
    (wire.PEEK, wire.PeekResponse.of([FULL_MESSAGE]), {"messages": [PEEKED_JSON]}),
    (wire.COMPLETE, wire.OkResponse(), {"ok": True}),
    (wire.ABANDON, wire.OkResponse(), {"ok": True}),
    (wire.REJECT, wire.OkResponse(), {"ok": True}),
    (wire.DEFER, wire.OkResponse(), {"ok": True}),
    (wire.RENEW, wire.OkResponse(), {"ok": True}),
    (wire.CANCEL, wire.OkResponse(), {"ok": True}),
    (
        wire.COMPLETE_BATCH,
        wire.CompleteBatchResponse.of([BatchResult(1, True), BatchResult(2, False)]),
        {"results": [{"seq_number": 1, "ok": True}, {"seq_number": 2, "ok": False}]},
    ),
    (
        wire.RENEW_BATCH,
        wire.RenewBatchResponse.of([BatchResult(1, True, 123)]),
        {"results": [{"seq_number": 1, "ok": True, "locked_until_ms": 123}]},
    ),
    (wire.RENEW_BATCH, wire.RenewBatchResponse(), {"results": []}),
    (
        wire.STATS,
        wire.MetricsResponse.of(Stats("q")),
        {
            "queue": "q",
            "active": 0,
            "locked": 0,
            "deferred": 0,
            "scheduled": 0,
            "dead_lettered": 0,
            "total": 0,
            "oldest_message_age_ms": 0,
        },
    ),
    (
        wire.STATS,
        wire.MetricsResponse.of(Stats("q", 128, 3, 0, 5, 2, 138, 41_200)),
        {
            "queue": "q",
            "active": 128,
            "locked": 3,
            "deferred": 0,
            "scheduled": 5,
            "dead_lettered": 2,
            "total": 138,
            "oldest_message_age_ms": 41_200,
        },
    ),
    (wire.CREATE_QUEUE, wire.EmptyResponse(), {}),
    (
        wire.ENSURE_QUEUE,
        wire.EnsureQueueResponse.of(
            QueueEnsured(QueueInfo("p", QueueConfig(), "g-2"), False, ("dedup_window_ms",))
        ),
        {
            "created": False,
            "queue": {
                "name": "p",
                "kind": "queue",
                "lock_duration_ms": 30_000,
                "max_delivery_count": 10,
                "default_ttl_ms": 0,
                "dedup_window_ms": 0,
                "generation": "g-2",
            },
            "differs": ["dedup_window_ms"],
        },
    ),
    (wire.DELETE_QUEUE, wire.DeleteQueueResponse(), {"deleted": True}),
    (wire.SUBSCRIBE, wire.EmptyResponse(), {}),
    (wire.UNSUBSCRIBE, wire.EmptyResponse(), {}),
    (
        wire.LIST_QUEUES,
        wire.ListQueuesResponse.of([QUEUE_INFO, QueueInfo("p", QueueConfig(), "")]),
        {
            "queues": [
                {
                    "name": "q",
                    "kind": "queue",
                    "lock_duration_ms": 5_000,
                    "max_delivery_count": 3,
                    "default_ttl_ms": 7,
                    "dedup_window_ms": 9,
                    "generation": "gen-1",
                },
                {
                    "name": "p",
                    "kind": "queue",
                    "lock_duration_ms": 30_000,
                    "max_delivery_count": 10,
                    "default_ttl_ms": 0,
                    "dedup_window_ms": 0,
                },
            ]
        },
    ),
    (wire.LIST_QUEUES, wire.ListQueuesResponse(), {"queues": []}),
    (
        wire.LIST_QUEUES,
        wire.ListQueuesResponse.of(
            [QueueInfo("r", QueueConfig(retry_initial_delay_ms=1_000, retry_jitter=0.2), "g")]
        ),
        {
            "queues": [
                {
                    "name": "r",
                    "kind": "queue",
                    "lock_duration_ms": 30_000,
                    "max_delivery_count": 10,
                    "default_ttl_ms": 0,
                    "dedup_window_ms": 0,
                    "generation": "g",
                    "retry_initial_delay_ms": 1_000,
                    "retry_jitter": 0.2,
                }
            ]
        },
    ),
    (
        wire.LIST_SUBSCRIPTIONS,
        wire.ListSubscriptionsResponse.of([Subscription("t", "a", "true"), Subscription("t", "b")]),
        {
            "subscriptions": [
                {"topic": "t", "name": "a", "expr": "true"},
                {"topic": "t", "name": "b"},
            ]
        },
    ),
    (wire.LIST_SUBSCRIPTIONS, wire.ListSubscriptionsResponse(), {"subscriptions": []}),
    (
        wire.TEST_FILTER,
        wire.TestFilterResponse.of(FilterTestResult(True, "", True, True)),
        {"valid": True, "ran": True, "matched": True},
    ),
    (
        wire.TEST_FILTER,
        wire.TestFilterResponse.of(FilterTestResult(False, "unexpected token")),
        {"valid": False, "error": "unexpected token", "ran": False, "matched": False},
    ),
    (wire.REDRIVE, wire.RedriveResponse(), {"moved": 0}),
    (wire.PURGE, wire.PurgeResponse(4), {"purged": 4}),
    (
        wire.OBSERVE,
        wire.ObserveResponse(),
        {
            "sampled_at_ms": 0,
            "started_at_ms": 0,
            "backend": "",
            "version": "",
            "access": "",
            "collection": {
                "state": "unavailable",
                "last_success_at_ms": 0,
                "duration_seconds": 0.0,
                "error_code": "",
            },
            "queue_count": 0,
            "subscription_count": 0,
            "queues": None,  # unknown, never an empty list of healthy queues
            "runtime": {
                "schema_version": "",
                "ping_seconds": 0.0,
                "read_available": False,
                "db_size_bytes": 0,
                "db_size_available": False,
            },
            "messages": [],
            "storage": {
                "operations": [],
                "pool": {
                    "max_open": 0,
                    "open": 0,
                    "in_use": 0,
                    "idle": 0,
                    "wait_count": 0,
                    "wait_duration_seconds": 0.0,
                },
            },
            "maintenance": [],
            "filters": [],
            "http": {
                "state": "not_applicable",
                "requests": [],
                "authentication": [],
                "handler_latency": [],
            },
            "replication": {"state": "disabled", "last_sync_at_ms": None, "lag_seconds": None},
            "schedules": {"state": "available", "overdue": 0, "schedules": []},
            "pushes": {"deliveries": [], "durations": []},
        },
    ),
    (
        wire.STATUS,
        wire.StatusResponse(),
        {
            "version": "",
            "backend": "",
            "remote": False,
            "location": "",
            "schema_version": "",
            "ping_ms": 0,
            "db_size_bytes": 0,
            "queues": 0,
            "subscriptions": 0,
            "uptime_ms": 0,
            "auth": False,
        },
    ),
    (
        wire.STATUS,
        wire.StatusResponse("0.1.0", "local file", False, "/d/mq.db", "5", -1, 4096, 2, 1, 9, True),
        {
            "version": "0.1.0",
            "backend": "local file",
            "remote": False,
            "location": "/d/mq.db",
            "schema_version": "5",
            "ping_ms": -1,
            "db_size_bytes": 4096,
            "queues": 2,
            "subscriptions": 1,
            "uptime_ms": 9,
            "auth": True,
        },
    ),
    (
        wire.CREATE_KEY,
        wire.CreateKeyResponse.of(KEY, "mqk_" + "0" * 64),
        {
            "key": {
                "id": KEY_ID,
                "name": "ci",
                "permissions": ["listen", "send"],
                "created_at_ms": 1_700_000_000_000,
            },
            "token": "mqk_" + "0" * 64,
        },
    ),
    (
        wire.LIST_KEYS,
        wire.ListKeysResponse.of([REVOKED_KEY], KEY_ID),
        {
            "keys": [
                {
                    "id": KEY_ID,
                    "name": "old",
                    "permissions": ["manage"],
                    "created_at_ms": 1,
                    "expires_at_ms": 2,
                    "revoked_at_ms": 3,
                }
            ],
            "next_after_id": KEY_ID,
        },
    ),
    (wire.LIST_KEYS, wire.ListKeysResponse.of([], ""), {"keys": []}),
    (wire.REVOKE_KEY, wire.OkResponse(), {"ok": True}),
    (
        wire.CREATE_SCHEDULE,
        wire.ScheduleResponse.of(SCHEDULE),
        {
            "schedule": {
                "name": "nightly",
                "cron": "30 2 * * *",
                "timezone": "Europe/Berlin",
                "queue": "reports",
                "message": {"body": "aGk=", "subject": "report"},
                "catch_up": "latest",
                "paused": False,
                "status": "target missing",
                "next_fire_at_ms": 1774747800000,
                "last_fired_at_ms": 1774661401000,
                "last_slot_ms": 1774661400000,
                "fired": 3,
                "created_at_ms": 5,
                "updated_at_ms": 6,
            }
        },
    ),
    (wire.DELETE_SCHEDULE, wire.DeleteScheduleResponse(True), {"deleted": True}),
    (
        wire.LIST_SCHEDULES,
        wire.ListSchedulesResponse.of([PAUSED_SCHEDULE]),
        {
            "schedules": [
                {
                    "name": "n",
                    "cron": "@daily",
                    "timezone": "UTC",
                    "queue": "q",
                    "message": {},
                    "catch_up": "skip",
                    "paused": True,
                    "status": "paused",
                    "next_fire_at_ms": 0,
                    "last_fired_at_ms": 0,
                    "last_slot_ms": 0,
                    "fired": 0,
                    "created_at_ms": 0,
                    "updated_at_ms": 0,
                }
            ]
        },
    ),
    (wire.LIST_SCHEDULES, wire.ListSchedulesResponse.of([]), {"schedules": []}),
    (
        wire.LIST_AUDIT,
        wire.ListAuditResponse.of(
            [AuditEntry(7, 5, "key:" + "a" * 32, "r1", "Purge", "orders", '{"count":3}')]
        ),
        {
            "entries": [
                {
                    "id": 7,
                    "at_ms": 5,
                    "actor": "key:" + "a" * 32,
                    "request_id": "r1",
                    "action": "Purge",
                    "queue": "orders",
                    "detail": '{"count":3}',
                }
            ]
        },
    ),
    (wire.LIST_AUDIT, wire.ListAuditResponse.of([]), {"entries": []}),
    (
        wire.CREATE_PUSH,
        wire.PushResponse.of(PUSH),
        {"push": {**PUSH_JSON, "secret": "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ="}},
    ),
    (wire.DELETE_PUSH, wire.DeletePushResponse(True), {"deleted": True}),
    (
        wire.LIST_PUSHES,
        wire.ListPushesResponse.of([replace(PUSH, secret="")]),
        {"pushes": [{**PUSH_JSON, "secret": ""}]},
    ),
    (wire.LIST_PUSHES, wire.ListPushesResponse.of([]), {"pushes": []}),
]
