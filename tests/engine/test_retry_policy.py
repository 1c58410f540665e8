"""engine/retry.py, the pure delay rule: exact values, the cap, jitter's two ends, no
overflow however many failures, and the off switch."""

from __future__ import annotations

import pytest

from mqlite import QueueConfig, errors
from mqlite.engine import retry

P = QueueConfig(retry_initial_delay_ms=1_000, retry_multiplier=2, retry_max_delay_ms=60_000)


def test_the_delay_doubles_per_failure_up_to_the_cap() -> None:
    assert [retry.delay_ms(P, n) for n in range(1, 9)] == [
        1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000,
    ]  # fmt: skip
    assert retry.delay_ms(P, 0) == 1_000  # a count below 1 is the first failure


def test_a_huge_failure_count_is_the_cap_not_an_overflow() -> None:
    assert retry.ceiling_ms(P, 100_000) == 60_000
    big = QueueConfig(retry_initial_delay_ms=1, retry_multiplier=1000, retry_max_delay_ms=2**62)
    assert retry.ceiling_ms(big, 10_000) == 2**62


def test_jitter_only_shortens_within_its_fraction() -> None:
    j = QueueConfig(retry_initial_delay_ms=10_000, retry_jitter=0.2)
    assert retry.delay_ms(j, 1, lambda: 0.0) == 10_000  # u = 0: the whole delay
    assert retry.delay_ms(j, 1, lambda: 0.999_999_9) == 8_000  # u -> 1: d * (1 - jitter)
    assert retry.delay_ms(j, 1, lambda: 0.5) == 9_000
    full = QueueConfig(retry_initial_delay_ms=10_000, retry_jitter=1.0)
    assert 0 <= retry.delay_ms(full, 1, lambda: 0.999_999_9) <= 1


def test_no_policy_is_no_delay_and_never_draws() -> None:
    def draw() -> float:
        raise AssertionError("a queue without a policy draws nothing")

    assert not retry.has_policy(QueueConfig())
    assert retry.delay_ms(QueueConfig(retry_jitter=0.5), 3, draw) == 0


@pytest.mark.parametrize(
    ("error", "ok"),
    [("", None), ("boom", "boom"), ("é" * 2048, "é" * 2048)],
)
def test_check_error_accepts_up_to_4_kib(error: str, ok: str | None) -> None:
    assert retry.check_error(error) == ok


@pytest.mark.parametrize("error", ["x" * 4097, "\ud800", 7])
def test_check_error_refuses_too_long_invalid_or_not_text(error: object) -> None:
    with pytest.raises(errors.InvalidArgument, match="error"):
        retry.check_error(error)
