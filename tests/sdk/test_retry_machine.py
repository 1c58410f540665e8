"""The sans-IO retry state machine (``mqlite.sdk.retry.Attempts``) both remote clients
drive: every branch of its decision, the Retry-After cap, and that a call whose request
may have reached the broker is repeated only when the call table marks it safe. No
sockets, no sleeps: the machine is told what happened and answers Retry or GiveUp."""

from __future__ import annotations

import pytest

from mqlite import errors
from mqlite.sdk.endpoint import ConnectionFailed
from mqlite.sdk.retry import Attempts, GiveUp, Retry, RetryPolicy, retry_after_ms
from mqlite.wire.envelope import error_body

POLICY = RetryPolicy(attempts=4, base_ms=50, max_backoff_ms=300, max_retry_after_ms=5000)


def top(_low: float, high: float) -> float:
    """The jitter's draw pinned to its upper bound, so a wait names the bound."""
    return high


def machine(safe: bool, policy: RetryPolicy = POLICY) -> Attempts:
    return Attempts(policy, "Send", safe, draw=top)


def answer(exc: errors.MQLiteError) -> tuple[int, bytes]:
    return exc.http_status, error_body(exc)


REFUSED = ConnectionRefusedError(111, "Connection refused")
RESET = ConnectionResetError(104, "Connection reset by peer")


@pytest.mark.parametrize("safe", [True, False])
def test_connect_failure_retries_any_call_with_capped_exponential_backoff(safe: bool) -> None:
    m = machine(safe)
    waits = [m.failed(REFUSED, sent=False) for _ in range(3)]
    assert waits == [Retry(0.05), Retry(0.1), Retry(0.2)]
    last = m.failed(REFUSED, sent=False)
    assert isinstance(last, GiveUp) and isinstance(last.error, ConnectionFailed)
    assert str(last.error) == "Send: cannot connect to the broker (Connection refused)"
    assert m.attempt == POLICY.attempts


def test_backoff_bound_is_capped_at_max_backoff() -> None:
    m = machine(True, RetryPolicy(attempts=8, base_ms=50, max_backoff_ms=300))
    waits = [m.failed(RESET, sent=True) for _ in range(7)]
    assert [w.wait_s for w in waits if isinstance(w, Retry)] == [
        0.05, 0.1, 0.2, 0.3, 0.3, 0.3, 0.3
    ]  # fmt: skip


def test_jitter_draws_below_the_bound() -> None:
    draws: list[tuple[float, float]] = []
    m = Attempts(POLICY, "Peek", True, draw=lambda lo, hi: draws.append((lo, hi)) or 7.0)
    assert m.failed(RESET, sent=True) == Retry(0.007)
    assert draws == [(0, 50)]


def test_unsafe_call_is_never_repeated_once_bytes_may_have_reached_the_broker() -> None:
    m = machine(safe=False)
    d = m.failed(RESET, sent=True)
    assert isinstance(d, GiveUp) and isinstance(d.error, ConnectionFailed)
    assert "may or may not have been applied" in str(d.error)
    assert "Connection reset by peer" in str(d.error)


def test_safe_call_repeats_a_lost_answer_until_attempts_run_out() -> None:
    m = machine(safe=True)
    assert [m.failed(RESET, sent=True) for _ in range(3)] == [Retry(0.05), Retry(0.1), Retry(0.2)]
    d = m.failed(RESET, sent=True)
    assert isinstance(d, GiveUp) and "may or may not" in str(d.error)


def test_503_is_retried_for_safe_calls_only() -> None:
    status, body = answer(errors.OutcomeUnknown("commit answer lost"))
    assert status == 503
    assert machine(safe=True).answered(status, body) == Retry(0.05)
    d = machine(safe=False).answered(status, body)
    assert isinstance(d, GiveUp) and isinstance(d.error, errors.OutcomeUnknown)


def test_503_gives_up_with_the_brokers_error_when_attempts_run_out() -> None:
    m = machine(safe=True, policy=RetryPolicy(attempts=2, base_ms=1))
    status, body = answer(errors.OutcomeUnknown("x"))
    assert isinstance(m.answered(status, body), Retry)
    d = m.answered(status, body)
    assert isinstance(d, GiveUp) and isinstance(d.error, errors.OutcomeUnknown)


@pytest.mark.parametrize("safe", [True, False])
def test_429_is_retried_by_every_call_after_the_brokers_retry_after(safe: bool) -> None:
    status, body = answer(errors.ResourceExhausted("slow down", retry_after_s=2))
    assert status == 429
    assert machine(safe).answered(status, body) == Retry(2.0)


def test_429_retry_after_is_capped_at_max_retry_after() -> None:
    status, body = answer(errors.ResourceExhausted("slow down", retry_after_s=3600))
    assert machine(False).answered(status, body) == Retry(5.0)
    tight = RetryPolicy(max_retry_after_ms=250)
    assert Attempts(tight, "Send", False).answered(status, body) == Retry(0.25)


def test_429_on_the_last_attempt_gives_up_with_resource_exhausted() -> None:
    m = machine(False, RetryPolicy(attempts=2))
    status, body = answer(errors.ResourceExhausted("slow down", retry_after_s=1))
    assert m.answered(status, body) == Retry(1.0)
    d = m.answered(status, body)
    assert isinstance(d, GiveUp) and isinstance(d.error, errors.ResourceExhausted)
    assert d.error.retry_after_s == 1


@pytest.mark.parametrize(
    "exc",
    [
        errors.InvalidArgument("bad"),
        errors.QueueNotFound("q"),
        errors.Unauthenticated("who"),
        errors.Internal("boom"),
        errors.LockLost("gone"),
    ],
)
@pytest.mark.parametrize("safe", [True, False])
def test_other_statuses_are_answers_never_retried(exc: errors.MQLiteError, safe: bool) -> None:
    d = machine(safe).answered(*answer(exc))
    assert isinstance(d, GiveUp) and type(d.error) is type(exc)


def test_one_attempt_policy_never_retries() -> None:
    one = RetryPolicy(attempts=1)
    for safe in (True, False):
        assert isinstance(Attempts(one, "Peek", safe).failed(REFUSED, sent=False), GiveUp)
        status, body = answer(errors.ResourceExhausted(retry_after_s=1))
        assert isinstance(Attempts(one, "Peek", safe).answered(status, body), GiveUp)


def test_retry_after_ms_reads_only_a_rate_limit_and_caps_it() -> None:
    limited = errors.ResourceExhausted("x", retry_after_s=7)
    assert retry_after_ms(limited) == 7000
    assert retry_after_ms(limited, cap_ms=1500) == 1500
    assert retry_after_ms(errors.Internal("x")) == 0
    assert retry_after_ms(OSError("x")) == 0
