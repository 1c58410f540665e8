"""The per-key token bucket (issue 35 "Rate limits"), on an injected clock."""

from __future__ import annotations

import pytest

from mqlite import errors
from mqlite.config import ConfigError, key_rate_limit_from_env
from mqlite.server.ratelimit import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_a_bucket_pays_its_burst_then_refuses_with_retry_after() -> None:
    clock = Clock()
    rl = RateLimiter(now=clock)
    for _ in range(4):
        rl.take("k", 2, 4, 1)
    with pytest.raises(errors.ResourceExhausted) as info:
        rl.take("k", 2, 4, 1)
    assert info.value.http_status == 429 and info.value.code == "resource_exhausted"
    assert info.value.retry_after_s == 1
    clock.t += 0.5  # one token back at 2/s
    rl.take("k", 2, 4, 1)
    assert rl.refused == {"k": 1}


def test_a_send_pays_for_each_message_and_a_large_batch_goes_into_debt() -> None:
    clock = Clock()
    rl = RateLimiter(now=clock)
    rl.take("k", 1, 3, 3)  # a full bucket pays a batch of 3
    with pytest.raises(errors.ResourceExhausted):
        rl.take("k", 1, 3, 1)
    clock.t += 3
    rl.take("k", 1, 3, 10)  # above the burst: passes on a full bucket, leaves a debt
    with pytest.raises(errors.ResourceExhausted) as info:
        rl.take("k", 1, 3, 1)
    assert info.value.retry_after_s == 8  # the debt of 7 plus the one token wanted


def test_keys_are_independent_and_the_default_applies_to_keys_without_their_own() -> None:
    clock = Clock()
    rl = RateLimiter(1, 1, now=clock)
    rl.take("a", 0, 0, 1)
    with pytest.raises(errors.ResourceExhausted):
        rl.take("a", 0, 0, 1)
    rl.take("b", 0, 0, 1)  # another key has its own bucket
    for _ in range(50):  # its own limit overrides the default
        rl.take("c", 1000, 1000, 1)
    unlimited = RateLimiter(now=clock)
    for _ in range(10_000):
        unlimited.take("a", 0, 0, 1)
    assert unlimited.refused == {} and unlimited.metrics_text() == ""


def test_the_metric_names_key_ids_only() -> None:
    rl = RateLimiter(now=Clock())
    rl.take("k1", 1, 1, 1)
    for _ in range(2):
        with pytest.raises(errors.ResourceExhausted):
            rl.take("k1", 1, 1, 1)
    text = rl.metrics_text()
    assert 'mqlite_rate_limited_total{key_id="k1"} 2\n' in text
    assert "# TYPE mqlite_rate_limited_total counter" in text


@pytest.mark.parametrize(
    ("raw", "want"), [("", (0, 0)), ("0", (0, 0)), ("50", (50, 50)), ("50/200", (50, 200))]
)
def test_mqlite_key_rate_limit_parses(raw: str, want: tuple[int, int]) -> None:
    assert key_rate_limit_from_env({"MQLITE_KEY_RATE_LIMIT": raw}) == want


@pytest.mark.parametrize("raw", ["fast", "1/2/3", "-1", "1.5", "2000000"])
def test_a_bad_mqlite_key_rate_limit_fails_naming_it(raw: str) -> None:
    with pytest.raises(ConfigError, match="MQLITE_KEY_RATE_LIMIT"):
        key_rate_limit_from_env({"MQLITE_KEY_RATE_LIMIT": raw})


@pytest.mark.parametrize(
    ("raw", "want"), [("", "errors"), ("ALL", "all"), ("ERRORS", "errors"), ("off", "off")]
)
def test_mqlite_access_log_parses(raw: str, want: str) -> None:
    from mqlite.config import access_log_from_env

    assert access_log_from_env({"MQLITE_ACCESS_LOG": raw}) == want


def test_a_bad_mqlite_access_log_fails_naming_it() -> None:
    from mqlite.config import access_log_from_env

    with pytest.raises(ConfigError, match="MQLITE_ACCESS_LOG"):
        access_log_from_env({"MQLITE_ACCESS_LOG": "verbose"})
