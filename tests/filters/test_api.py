"""The engine-facing contract: caps, positions, fail-closed evaluation, test_filter."""

from __future__ import annotations

import threading

import pytest

from mqlite.errors import InvalidArgument, MQLiteError
from mqlite.filters import (
    CompiledFilter,
    FilterInput,
    FilterRuntimeError,
    compile_filter,
    test_filter,
)
from mqlite.filters import runtime as filter_runtime
from mqlite.filters.parser import parse
from mqlite.types import FilterTestResult

MSG = FilterInput(subject="orders.eu", properties={"tier": "gold"})


def test_empty_filter_matches_all() -> None:
    f = compile_filter("  ")
    assert isinstance(f, CompiledFilter)
    assert f.matches_all and f.source == "  "
    assert f.evaluate(FilterInput()) is True
    assert not compile_filter("true").matches_all


def test_source_cap_counts_utf8_bytes() -> None:
    ok = "true" + " " * 4092
    assert compile_filter(ok).evaluate(MSG)
    with pytest.raises(InvalidArgument, match="too long"):
        compile_filter("true" + " " * 4093)
    with pytest.raises(InvalidArgument, match="too long"):
        compile_filter('subject == "' + "é" * 2046 + '"')  # 4107 bytes, 2060 characters


def test_node_cap_is_exactly_1000() -> None:
    assert parse("!" * 999 + "true")[1] == 1000
    assert compile_filter("!" * 999 + "true").evaluate(MSG) is False
    with pytest.raises(InvalidArgument, match="maximum allowed nodes"):
        compile_filter("!" * 1000 + "true")
    deep = "(" * 2040 + "true" + ")" * 2040
    assert compile_filter(deep).evaluate(MSG) is True


def test_compile_errors_carry_a_position() -> None:
    with pytest.raises(InvalidArgument) as err:
        compile_filter('subject == "x" &&\n  Subject == "y"')
    assert "unknown name Subject" in err.value.message
    assert "(2:3)" in err.value.message
    with pytest.raises(InvalidArgument, match=r"expected bool, but got string \(1:1\)"):
        compile_filter("subject")
    assert issubclass(InvalidArgument, MQLiteError)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("subject foo", 'filter: unexpected token "foo" (1:9)'),
        ('subject ==="x"', 'filter: unexpected token "=" (1:11)'),
        ("subject ==", "filter: unexpected token EOF (1:11)"),
    ],
)
def test_syntax_errors_quote_the_token_for_people(source: str, message: str) -> None:
    """A token is named as written, never as a Python repr (``Ident('foo')``)."""
    with pytest.raises(InvalidArgument) as err:
        compile_filter(source)
    assert err.value.message == message


def test_runtime_error_is_not_an_mqlite_error() -> None:
    assert not issubclass(FilterRuntimeError, MQLiteError)
    with pytest.raises(FilterRuntimeError, match="index out of range"):
        compile_filter('subject_parts[5] == "x"').evaluate(MSG)


def test_evaluate_never_returns_non_bool() -> None:
    f = compile_filter("body_json.x")
    assert f.evaluate(FilterInput(body=b'{"x": null}')) is False
    with pytest.raises(FilterRuntimeError, match="expected bool"):
        f.evaluate(FilterInput(body=b'{"x": "yes"}'))


def test_test_filter_decides_like_publish() -> None:
    assert test_filter("nope", MSG) == FilterTestResult(
        valid=False, error="filter: unknown name nope (1:1)"
    )
    assert test_filter('properties["tier"] == "gold"', MSG) == FilterTestResult(
        valid=True, ran=True, matched=True
    )
    assert test_filter("true", None) == FilterTestResult(valid=True)
    bad = test_filter('subject_parts[9] == "x"', MSG)
    assert bad.valid and bad.ran and not bad.matched and "index out of range" in bad.error


def test_body_only_decoded_when_referenced() -> None:
    f = compile_filter('subject == "orders.eu"')
    assert f.evaluate(FilterInput(subject="orders.eu", body=b"\xff not json")) is True
    g = compile_filter("$env.body_text == '' && body_size == 3")
    assert g.evaluate(FilterInput(body=b"abc")) is True


def test_no_python_attribute_access() -> None:
    for expr in ("subject.__class__ == 1", "enqueued_at.__class__ == 1", "body_size.real == 1"):
        with pytest.raises(InvalidArgument):
            compile_filter(expr)
    f = compile_filter('body_json.items == nil && properties.__class__ == ""')
    assert f.evaluate(FilterInput(body=b"{}")) is True


def test_threads_share_a_compiled_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thread safety, not speed: the evaluation's 50 ms wall-clock budget is held still (on
    a loaded machine four threads behind one GIL stretched an evaluation past it)."""
    monkeypatch.setattr(filter_runtime, "elapsed_clock", lambda: 0.0)
    f = compile_filter('all(subject_parts, len(#) > 1) && properties["tier"] == "gold"')
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for i in range(300):
                msg = FilterInput(subject=f"orders.n{i}", properties={"tier": "gold"})
                assert f.evaluate(msg) is True
                assert f.evaluate(FilterInput(subject="x.y", properties={})) is False
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_scheduled_delay_and_filter_input_defaults() -> None:
    day = 86_400_000
    inp = FilterInput(enqueued_at_ms=0, visible_at_ms=2 * day)
    assert compile_filter("visible_at - enqueued_at > days(1)").evaluate(inp)
    assert FilterInput().properties == {}
