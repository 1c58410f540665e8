"""Filters cannot stall the broker: every evaluation has step, memory, regex and wall-clock
budgets that fail closed (FilterRuntimeError: the copy is not routed, the failure is
counted), amplifying builtins are charged BEFORE they allocate, ``uniq`` is linear, RE2
programs are bounded at Subscribe, and one publish has a total filter-time budget."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mqlite
from mqlite import OutMessage, defaults, errors
from mqlite.filters import compile_filter
from mqlite.filters import runtime as filter_runtime
from mqlite.filters.arrays import uniq
from mqlite.filters.environment import FilterInput
from mqlite.filters.values import FilterRuntimeError, equal


def message(body: bytes = b"", subject: str = "s") -> FilterInput:
    return FilterInput(
        subject=subject,
        group_id="",
        correlation_id="",
        reply_to="",
        message_id="",
        content_type="text/plain",
        properties={},
        body=body,
        enqueued_at_ms=1_700_000_000_000,
        visible_at_ms=1_700_000_000_000,
    )


def fails_fast(expr: str, inp: FilterInput, needle: str, within_s: float = 0.5) -> None:
    """Refused, and cheaply: CPU time of this thread (a loaded machine's waits do not count;
    the unrefused work would cost seconds)."""
    f = compile_filter(expr)
    started = time.thread_time()
    with pytest.raises(FilterRuntimeError, match=needle):
        f.evaluate(inp)
    assert time.thread_time() - started < within_s


class SteppingClock:
    """An elapsed-time clock that advances a fixed step on every reading."""

    def __init__(self, step_s: float) -> None:
        self.now, self.step_s, self.readings = 0.0, step_s, 0

    def __call__(self) -> float:
        self.now += self.step_s
        self.readings += 1
        return self.now


def test_replace_is_charged_before_it_allocates() -> None:
    # 900k "a" x 1000-char replacement = 900M characters: refused before any is built.
    fails_fast('replace(repeat("a", 900000), "a", repeat("b", 1000)) == ""', message(), "memory")


def test_replace_with_an_empty_needle_is_charged_too() -> None:
    fails_fast('replace(repeat("a", 900000), "", "xyz") == ""', message(), "memory")


def test_join_is_charged_before_it_allocates() -> None:
    fails_fast('join(map(1..1000, string(#)), repeat("g", 999000)) == ""', message(), "memory")


def test_a_slow_evaluation_fails_closed_at_the_time_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each clock reading is 20 ms later: the third check is past the 50 ms budget.
    clock = SteppingClock(0.020)
    monkeypatch.setattr(filter_runtime, "elapsed_clock", clock)
    f = compile_filter("all(1..5000, # + 1 > #)")
    with pytest.raises(FilterRuntimeError, match="time budget"):
        f.evaluate(message())
    assert clock.readings == 4  # the deadline, then checks until the one past it


def test_an_evaluation_within_the_time_budget_succeeds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(filter_runtime, "elapsed_clock", SteppingClock(0.0001))
    assert compile_filter("all(1..5000, # + 1 > #)").evaluate(message()) is True


def test_a_pathological_regex_on_a_large_body_is_refused_before_it_runs() -> None:
    random.seed(1)
    body = "".join(random.choice("ab") for _ in range(256 << 10)).encode()
    # A pattern whose RE2 DFA thrashes; its NFA fallback would take seconds on this text.
    fails_fast('body_text matches "[ab]*a[ab]{400}c"', message(body), "regex budget", 0.1)


def test_a_simple_regex_on_a_large_body_still_runs() -> None:
    body = b"x" * (1 << 20) + b"ERROR"
    assert compile_filter('body_text matches "ERROR"').evaluate(message(body)) is True


def test_a_too_complex_regex_is_refused_at_subscribe(engine: mqlite.EmbeddedClient) -> None:
    with pytest.raises(errors.InvalidArgument, match="too complex"):
        engine.subscribe("t", "s", 'subject matches "' + "[ab]{999}c" * 25 + '"')
    assert engine.list_subscriptions() == []


def test_uniq_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured in this thread's CPU time; the evaluation's own wall-clock budget is held
    still, since a loaded machine stretches wall time (it failed there at 50 ms), not the
    work a quadratic uniq would do."""
    monkeypatch.setattr(filter_runtime, "elapsed_clock", SteppingClock(0.0))
    f = compile_filter("len(uniq(1..20000)) == 20000")
    started = time.thread_time()
    assert f.evaluate(message()) is True
    assert time.thread_time() - started < 0.5  # quadratic: 2e8 comparisons, minutes


class _Ev:
    def step(self, units: int) -> None:
        pass


def test_uniq_keeps_exprs_equality() -> None:
    values: list[Any] = [1, 1.0, True, "1", [1], [1.0], {"a": 1}, {"a": 1.0}, None, None, 2.5]
    assert uniq(_Ev(), [values]) == [1, True, "1", [1], {"a": 1}, {"a": 1.0}, None, 2.5]  # type: ignore[arg-type]


def naive_uniq(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for x in items:
        if not any(equal(x, y) for y in out):
            out.append(x)
    return out


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, -1.0, 2.5, float("nan"), float("inf")]),
    st.sampled_from(["a", "b", "1"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["k", "j"]), inner, max_size=2)
    ),
    max_leaves=6,
)


@given(st.lists(values, max_size=12))
def test_linear_uniq_equals_the_quadratic_definition(items: list[Any]) -> None:
    assert uniq(_Ev(), [items]) == naive_uniq(items)  # type: ignore[arg-type]


def test_a_publish_has_a_total_filter_time_budget(
    engine: mqlite.EmbeddedClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each evaluation stays under its own budget, but a batch of them may not exceed the
    publish budget: the Send is refused and nothing of it is written."""
    engine.subscribe("t", "every", "len(subject) >= 0")
    monkeypatch.setattr(defaults, "FILTER_PUBLISH_BUDGET_MS", 50)
    # Every reading of the elapsed clock is 1 ms later: 200 messages need ~200 ms.
    monkeypatch.setattr(filter_runtime, "elapsed_clock", SteppingClock(0.001))
    with pytest.raises(errors.InvalidArgument, match="send fewer messages per call"):
        engine.send("t", [OutMessage(b"x")] * 200)
    assert engine.stats("every").total == 0
    assert engine.send("t", [OutMessage(b"x")]) != [0]  # one message fits the budget
