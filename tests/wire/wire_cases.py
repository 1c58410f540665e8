"""Golden request cases shared by the wire tests: (route, value, the exact JSON)."""

from __future__ import annotations

from typing import Any

from mqlite import wire
from mqlite.types import OutMessage, QueueConfig

FULL_OUT = OutMessage(
    body=b"hi",
    message_id="m-1",
    group_id="cust-7",
    subject="orders.eu.new",
    correlation_id="corr",
    reply_to="replies",
    content_type="application/json",
    properties={"region": "eu", "prio": "high"},
)
FULL_OUT_JSON = {
    "message_id": "m-1",
    "correlation_id": "corr",
    "reply_to": "replies",
    "group_id": "cust-7",
    "content_type": "application/json",
    "subject": "orders.eu.new",
    "properties": {"region": "eu", "prio": "high"},
    "body": "aGk=",
}
FULL_CONFIG = QueueConfig(
    lock_duration_ms=60_000,
    max_delivery_count=5,
    default_ttl_ms=1_000,
    dead_letter_on_expire=False,
    dedup_window_ms=300_000,
    ordering_mode="group_fifo",
    dlq_max_age_ms=-1,
    dlq_max_count=10,
    dlq_max_bytes=1 << 20,
    kind="subscription",
    retry_initial_delay_ms=1_000,
    retry_multiplier=1.5,
    retry_max_delay_ms=60_000,
    retry_jitter=0.25,
)
FULL_CONFIG_JSON = {
    "kind": "subscription",
    "lock_duration_ms": 60_000,
    "max_delivery_count": 5,
    "default_ttl_ms": 1_000,
    "dead_letter_on_expire": False,
    "dedup_window_ms": 300_000,
    "ordering_mode": "group_fifo",
    "dlq_max_age_ms": -1,
    "dlq_max_count": 10,
    "dlq_max_bytes": 1 << 20,
    "retry_initial_delay_ms": 1_000,
    "retry_multiplier": 1.5,
    "retry_max_delay_ms": 60_000,
    "retry_jitter": 0.25,
}
KEY_ID = "0123456789abcdef0123456789abcdef"

Case = tuple[wire.Route[Any, Any], Any, dict[str, Any]]

REQUEST_CASES: list[Case] = [
    (
        wire.SEND,
        wire.SendRequest(
            "orders",
            (wire.MessageJSON.of(FULL_OUT), wire.MessageJSON()),
            1_750_000_000_000,
            5_000,
        ),
        {
            "queue": "orders",
            "messages": [FULL_OUT_JSON, {}],
            "scheduled_enqueue_time_ms": 1_750_000_000_000,
            "ttl_ms": 5_000,
        },
    ),
    (wire.SEND, wire.SendRequest("q", ()), {"queue": "q", "messages": []}),
    (
        wire.SCHEDULE,
        wire.SendRequest("q", (wire.MessageJSON(body=b"x"),), 9),
        {"queue": "q", "messages": [{"body": "eA=="}], "scheduled_enqueue_time_ms": 9},
    ),
    (
        wire.RECEIVE,
        wire.ReceiveRequest("q", 10, 5_000, 1, "attempt-1"),
        {
            "queue": "q",
            "max_messages": 10,
            "wait_time_ms": 5_000,
            "receive_mode": 1,
            "receive_attempt_id": "attempt-1",
        },
    ),
    (wire.RECEIVE, wire.ReceiveRequest("q"), {"queue": "q"}),
    (
        wire.COMPLETE,
        wire.SettleRequest("q", 42, "tok"),
        {"queue": "q", "seq_number": 42, "lock_token": "tok"},
    ),
    (
        wire.ABANDON,
        wire.SettleRequest("q", 42, "tok", delay_ms=1_000),
        {"queue": "q", "seq_number": 42, "lock_token": "tok", "delay_ms": 1_000},
    ),
    (
        wire.ABANDON,
        wire.SettleRequest("q", 42, "tok", error="KeyError: 'sku'"),
        {"queue": "q", "seq_number": 42, "lock_token": "tok", "error": "KeyError: 'sku'"},
    ),
    (
        wire.REJECT,
        wire.SettleRequest("q", 42, "tok", "Poison", "bad json"),
        {
            "queue": "q",
            "seq_number": 42,
            "lock_token": "tok",
            "dead_letter_reason": "Poison",
            "dead_letter_description": "bad json",
        },
    ),
    (
        wire.DEFER,
        wire.SettleRequest("q", 1, "t"),
        {"queue": "q", "seq_number": 1, "lock_token": "t"},
    ),
    (
        wire.RENEW,
        wire.SettleRequest("q", 1, "t"),
        {"queue": "q", "seq_number": 1, "lock_token": "t"},
    ),
    (
        wire.COMPLETE_BATCH,
        wire.CompleteBatchRequest("q", (wire.SettleItem(1, "a"), wire.SettleItem(2, "b"))),
        {
            "queue": "q",
            "messages": [
                {"seq_number": 1, "lock_token": "a"},
                {"seq_number": 2, "lock_token": "b"},
            ],
        },
    ),
    (
        wire.RENEW_BATCH,
        wire.RenewBatchRequest("q", ()),
        {"queue": "q", "messages": []},
    ),
    (
        wire.RECEIVE_DEFERRED,
        wire.ReceiveDeferredRequest("q", (3, 1, 2)),
        {"queue": "q", "seq_numbers": [3, 1, 2]},
    ),
    (wire.CANCEL, wire.CancelRequest("q", 7), {"queue": "q", "seq_number": 7}),
    (
        wire.PEEK,
        wire.PeekRequest("q", 5, "deferred", 10),
        {"queue": "q", "from_seq": 5, "state": "deferred", "max": 10},
    ),
    (wire.PEEK, wire.PeekRequest("q"), {"queue": "q"}),
    (wire.STATS, wire.MetricsRequest("q"), {"queue": "q"}),
    (wire.CREATE_QUEUE, wire.CreateQueueRequest("q"), {"name": "q"}),
    (
        wire.CREATE_QUEUE,
        wire.CreateQueueRequest("q", wire.QueueConfigJSON()),
        {"name": "q", "config": {}},
    ),
    (
        wire.CREATE_QUEUE,
        wire.CreateQueueRequest("q", wire.QueueConfigJSON.of(FULL_CONFIG)),
        {"name": "q", "config": FULL_CONFIG_JSON},
    ),
    (wire.ENSURE_QUEUE, wire.EnsureQueueRequest("q"), {"name": "q"}),
    (
        wire.ENSURE_QUEUE,
        wire.EnsureQueueRequest("q", wire.QueueConfigJSON.of(FULL_CONFIG), True),
        {"name": "q", "config": FULL_CONFIG_JSON, "strict": True},
    ),
    (
        wire.DELETE_QUEUE,
        wire.DeleteQueueRequest("q", "g-1"),
        {"name": "q", "generation": "g-1"},
    ),
    (
        wire.SUBSCRIBE,
        wire.SubscribeRequest("t", "s", wire.SubscriptionFilter("subject == 'x'")),
        {"topic": "t", "name": "s", "filter": {"expr": "subject == 'x'"}},
    ),
    (wire.SUBSCRIBE, wire.SubscribeRequest("t", "s"), {"topic": "t", "name": "s"}),
    (wire.UNSUBSCRIBE, wire.UnsubscribeRequest("t", "s"), {"topic": "t", "name": "s"}),
    (wire.LIST_QUEUES, wire.EmptyRequest(), {}),
    (wire.LIST_SUBSCRIPTIONS, wire.EmptyRequest(), {}),
    (
        wire.TEST_FILTER,
        wire.TestFilterRequest(
            "true", wire.SampleMessage.of(OutMessage(b"{}", subject="a"), 1_000, 2_000)
        ),
        {
            "expr": "true",
            "message": {
                "enqueued_at_ms": 1_000,
                "visible_at_ms": 2_000,
                "subject": "a",
                "body": "e30=",
            },
        },
    ),
    (
        wire.TEST_FILTER,
        wire.TestFilterRequest("true", wire.SampleMessage()),
        {"expr": "true", "message": {}},
    ),
    (wire.TEST_FILTER, wire.TestFilterRequest("x >"), {"expr": "x >"}),
    (
        wire.REDRIVE,
        wire.RedriveRequest("q", "other", 10, 60_000, 5),
        {"queue": "q", "target": "other", "max": 10, "older_than_ms": 60_000, "rate_per_sec": 5},
    ),
    (wire.REDRIVE, wire.RedriveRequest("q"), {"queue": "q"}),
    (
        wire.PURGE,
        wire.PurgeRequest("q", 3, 1_000),
        {"queue": "q", "max": 3, "older_than_ms": 1_000},
    ),
    (wire.STATUS, wire.EmptyRequest(), {}),
    (wire.OBSERVE, wire.EmptyRequest(), {}),
    (
        wire.CREATE_KEY,
        wire.CreateKeyRequest(KEY_ID, "ci", ("send", "listen"), 1_800_000_000_000),
        {
            "id": KEY_ID,
            "name": "ci",
            "permissions": ["send", "listen"],
            "expires_at_ms": 1_800_000_000_000,
        },
    ),
    (
        wire.LIST_KEYS,
        wire.ListKeysRequest(KEY_ID, 10, "created_desc"),
        {"after_id": KEY_ID, "limit": 10, "sort": "created_desc"},
    ),
    (wire.LIST_KEYS, wire.ListKeysRequest(), {}),
    (wire.REVOKE_KEY, wire.RevokeKeyRequest(KEY_ID), {"id": KEY_ID}),
    (
        wire.CREATE_SCHEDULE,
        wire.CreateScheduleRequest(
            "nightly",
            "30 2 * * *",
            "reports",
            wire.ScheduleMessageJSON(b"hi", "report", properties={"k": "v"}),
            "Europe/Berlin",
            "skip",
            True,
        ),
        {
            "name": "nightly",
            "cron": "30 2 * * *",
            "queue": "reports",
            "message": {"body": "aGk=", "subject": "report", "properties": {"k": "v"}},
            "timezone": "Europe/Berlin",
            "catch_up": "skip",
            "paused": True,
        },
    ),
    (
        wire.CREATE_SCHEDULE,
        wire.CreateScheduleRequest("n", "@daily", "q"),
        {"name": "n", "cron": "@daily", "queue": "q"},
    ),
    (wire.DELETE_SCHEDULE, wire.DeleteScheduleRequest("nightly"), {"name": "nightly"}),
    (wire.LIST_SCHEDULES, wire.EmptyRequest(), {}),
    (wire.LIST_AUDIT, wire.ListAuditRequest(), {}),
    (
        wire.LIST_AUDIT,
        wire.ListAuditRequest(after_id=41, limit=1000, queue="orders", since_ms=5),
        {"after_id": 41, "limit": 1000, "queue": "orders", "since_ms": 5},
    ),
    (
        wire.CREATE_PUSH,
        wire.CreatePushRequest("orders", "https://hooks.example.com/o", "whsec_x", 64, 2000, True),
        {
            "queue": "orders",
            "url": "https://hooks.example.com/o",
            "secret": "whsec_x",
            "max_in_flight": 64,
            "timeout_ms": 2000,
            "paused": True,
        },
    ),
    (
        wire.CREATE_PUSH,
        wire.CreatePushRequest("q", "https://h.example/"),
        {"queue": "q", "url": "https://h.example/"},
    ),
    (wire.DELETE_PUSH, wire.DeletePushRequest("orders"), {"queue": "orders"}),
    (wire.LIST_PUSHES, wire.EmptyRequest(), {}),
]


def case_id(case: Case) -> str:
    route, _, expected = case
    return f"{route.method}-{len(expected)}"
