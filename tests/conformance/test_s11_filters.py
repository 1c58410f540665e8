"""§11 Subscription filters: compiled at subscribe, evaluated at publish, fail closed."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from mqlite import OutMessage, errors, testing

T0 = 1_700_000_000_000


def test_11_1_empty_filter_matches_everything(mq: Any) -> None:
    mq.subscribe("events", "all", "")
    mq.send_one("events", OutMessage(body=b"x"))
    assert mq.stats("all").total == 1


@pytest.mark.parametrize(
    "expr",
    [
        "subject ==",  # malformed
        "no_such_variable == 1",  # unknown name
        "subject",  # not boolean
        'body_size + "x" > 1',  # type mismatch
        "x" * 5000,  # over the source cap
    ],
)
def test_11_1_bad_filters_are_rejected_and_nothing_is_stored(mq: Any, expr: str) -> None:
    with pytest.raises(errors.InvalidArgument):
        mq.subscribe("events", "audit", expr)
    assert mq.list_subscriptions() == []
    assert mq.list_queues() == []


def test_11_1_a_bad_refilter_keeps_the_old_filter(mq: Any) -> None:
    mq.subscribe("events", "audit", 'subject == "a"')
    with pytest.raises(errors.InvalidArgument):
        mq.subscribe("events", "audit", "subject ==")
    assert [s.expr for s in mq.list_subscriptions()] == ['subject == "a"']


def test_11_2_routed_iff_the_filter_is_true(mq: Any) -> None:
    mq.subscribe("events", "gold", 'subject_parts[0] == "orders" && properties["tier"] == "gold"')
    mq.subscribe("events", "big", "body_json.amount > 100")
    mq.send_one(
        "events",
        OutMessage(
            body=json.dumps({"amount": 150}).encode(),
            subject="orders.eu",
            properties={"tier": "gold"},
        ),
    )
    mq.send_one(
        "events",
        OutMessage(body=b'{"amount": 5}', subject="orders.eu", properties={"tier": "silver"}),
    )
    assert mq.stats("gold").total == 1
    assert mq.stats("big").total == 1


def test_11_2_scheduled_delay_is_visible_at_minus_enqueued_at(mq: Any, clock: Any) -> None:
    mq.subscribe("events", "delayed", "visible_at - enqueued_at >= minutes(10)")
    mq.schedule("events", [OutMessage(body=b"later")], at_ms=clock.now_ms() + 15 * 60_000)
    mq.schedule("events", [OutMessage(body=b"soon")], at_ms=clock.now_ms() + 60_000)
    mq.send_one("events", OutMessage(body=b"now"))
    assert mq.stats("delayed").scheduled == 1
    assert mq.stats("delayed").total == 1


def test_11_2_resubscribe_recompiles(mq: Any) -> None:
    mq.subscribe("events", "s", 'subject == "a"')
    mq.send_one("events", OutMessage(body=b"1", subject="b"))
    mq.subscribe("events", "s", 'subject == "b"')
    mq.send_one("events", OutMessage(body=b"2", subject="b"))
    assert [m.body for m in mq.peek("s")] == [b"2"]


def test_11_3_runtime_error_fails_closed_counted_and_logged_once(
    mq: Any, caplog: pytest.LogCaptureFixture
) -> None:
    mq.subscribe("events", "strict", "body_json.customer.tier == 'gold'")
    mq.subscribe("events", "all", "")
    with caplog.at_level(logging.WARNING, logger="mqlite.filters"):
        for _ in range(3):
            mq.send_one("events", OutMessage(body=b'{"other": 1}'))
    assert mq.stats("strict").total == 0
    assert mq.stats("all").total == 3
    assert testing.engine(mq).filter_failures.counts[("events", "strict")] == 3
    assert len([r for r in caplog.records if r.name == "mqlite.filters"]) == 1


def test_11_4_no_matching_subscription_is_a_silent_no_op(mq: Any) -> None:
    mq.subscribe("events", "gold", 'properties["tier"] == "gold"')
    assert mq.send_one("events", OutMessage(body=b"x")) == 0
    assert mq.send("events", [OutMessage(body=b"x"), OutMessage(body=b"y")]) == [0, 0]
    assert mq.stats("gold").total == 0


def test_11_filters_survive_reopen(open_mq: Any) -> None:
    mq = open_mq()
    mq.subscribe("events", "gold", 'properties["tier"] == "gold"')
    mq.close()
    mq = open_mq()
    mq.send_one("events", OutMessage(body=b"x", properties={"tier": "gold"}))
    mq.send_one("events", OutMessage(body=b"x", properties={"tier": "tin"}))
    assert mq.stats("gold").total == 1
    assert [s.expr for s in mq.list_subscriptions()] == ['properties["tier"] == "gold"']


def test_test_filter_reports_valid_error_ran_matched(mq: Any) -> None:
    bad = mq.test_filter("subject ==")
    assert (bad.valid, bad.ran, bad.matched) == (False, False, False) and bad.error
    compiled_only = mq.test_filter('subject == "a"')
    assert (compiled_only.valid, compiled_only.ran) == (True, False)
    hit = mq.test_filter('subject == "a"', OutMessage(body=b"", subject="a"))
    assert (hit.valid, hit.ran, hit.matched, hit.error) == (True, True, True, "")
    boom = mq.test_filter("body_json.a.b == 1", OutMessage(body=b"{}"))
    assert (boom.valid, boom.ran, boom.matched) == (True, True, False) and boom.error
    timed = mq.test_filter(
        "enqueued_at.Hour() == 22", OutMessage(body=b""), enqueued_at_ms=T0
    )  # 2023-11-14T22:13:20Z
    assert timed.matched
