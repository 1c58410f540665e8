"""Parser fuzzing: random token soups never escape as anything but InvalidArgument, fast.

The observed maximum compile time is printed (run with ``-s``) so it can be reported.
"""

from __future__ import annotations

import contextlib
import gc
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqlite.errors import InvalidArgument
from mqlite.filters import FilterInput, FilterRuntimeError, compile_filter

TOKENS = [
    *["+", "-", "*", "/", "%", "^", "**", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "!"],
    *["?", ":", "?.", "??", ".", "..", ",", ";", "(", ")", "[", "]", "{", "}", "|", "#", "&"],
    *["=", "::", "@"],
    "and", "or", "not", "in", "matches", "contains", "startsWith", "endsWith", "let", "if",
    "else", "true", "false", "nil", "TRUE", "subject", "properties", "subject_parts",
    "body_json", "body_text", "body_size", "enqueued_at", "visible_at", "property_keys", "$env",
    "len", "all", "any", "map", "filter", "count", "reduce", "upper", "split", "hours", "days",
    "duration", "Hour", "Format", "#index", "#acc", "x", "0", "1", "42", "1.5", "1e3", "0x1F",
    "1..3", '"a"', "'b'", '"orders"', "`raw`", '"\\n"', '"(a+)+$"', '"\\q"', '"', "/*", "*/",
    "//", " ", "\n", "9223372036854775808",
]  # fmt: skip
MSG = FilterInput(
    subject="orders.eu", properties={"a": "b"}, body=b'{"x": [1, 2]}', enqueued_at_ms=1
)
OBSERVED = {"max_ms": 0.0}


@settings(
    max_examples=3000,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=40), st.booleans())
def test_compile_never_raises_anything_else(tokens: list[str], spaced: bool) -> None:
    source = (" " if spaced else "").join(tokens)
    gc.disable()  # time our code, not a collection of hypothesis' garbage
    start = time.thread_time()
    try:
        compiled = compile_filter(source)
    except InvalidArgument:
        compiled = None
    finally:
        elapsed = (time.thread_time() - start) * 1000
        gc.enable()
    OBSERVED["max_ms"] = max(OBSERVED["max_ms"], elapsed)
    assert elapsed < 50, (source, elapsed)
    if compiled is not None:
        with contextlib.suppress(FilterRuntimeError):
            assert compiled.evaluate(MSG) in (True, False)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=200))
def test_arbitrary_text(source: str) -> None:
    with contextlib.suppress(InvalidArgument):
        compile_filter(source)


def test_large_sources_compile_fast() -> None:
    worst = [
        "(" * 2040 + "true" + ")" * 2040,
        "!" * 999 + "true",
        " || ".join(["true"] * 499) + " ",
        "[" + ",".join(["1"] * 998) + "] != []",
        '"' + "a" * 4090 + '"',
        "1" + "+1" * 1500,
    ]
    for source in worst:
        gc.collect()
        gc.disable()
        start = time.thread_time()
        try:
            compile_filter(source)
        except InvalidArgument:
            pass
        finally:
            elapsed = (time.thread_time() - start) * 1000
            gc.enable()
        OBSERVED["max_ms"] = max(OBSERVED["max_ms"], elapsed)
        assert elapsed < 50, (source[:40], elapsed)


def test_report_observed_max() -> None:
    print(f"\nfuzz: max compile time {OBSERVED['max_ms']:.2f} ms")
