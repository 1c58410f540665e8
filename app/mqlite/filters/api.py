"""compile_filter / CompiledFilter / test_filter: the surface the engine calls.

Compile once at Subscribe (caps, parse, type-check: every failure is InvalidArgument
with a position), evaluate per message (fail-closed: any runtime problem surfaces as
FilterRuntimeError, never as another exception and never as a non-bool).
"""

from __future__ import annotations

import sys
from typing import Any

from mqlite.defaults import FILTER_MAX_SOURCE_BYTES
from mqlite.errors import InvalidArgument
from mqlite.filters import environment
from mqlite.filters.checker import check
from mqlite.filters.environment import FilterInput
from mqlite.filters.lexer import line_col
from mqlite.filters.parser import parse
from mqlite.filters.runtime import evaluator
from mqlite.filters.values import FilterRuntimeError, type_name
from mqlite.types import FilterTestResult

# A 1000-node filter may nest 1000 deep (and 2040 parentheses deep); the recursive
# parser, checker and tree walker need a few frames per level. Raised once, at import
# (Python 3.11 runs Python-to-Python calls without consuming the C stack).
_RECURSION_LIMIT = 20_000
if sys.getrecursionlimit() < _RECURSION_LIMIT:
    sys.setrecursionlimit(_RECURSION_LIMIT)


class CompiledFilter:
    """A parsed, type-checked filter, safe to share between threads."""

    __slots__ = ("_env", "_steps", "_tree", "matches_all", "node_count", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.matches_all = not source.strip()
        self.node_count = 0
        self._tree: Any = None
        self._steps: tuple[Any, ...] = ()
        self._env = False
        if self.matches_all:
            return
        size = len(source.encode("utf-8", "surrogatepass"))
        if size > FILTER_MAX_SOURCE_BYTES:
            raise InvalidArgument(
                f"filter: expression is too long ({size} bytes, max {FILTER_MAX_SOURCE_BYTES})"
            )
        try:
            tree, self.node_count = parse(source)
            result, refs = check(tree, source)
        except RecursionError:
            raise InvalidArgument("filter: expression is nested too deeply") from None
        if result.kind not in ("bool", "unknown"):
            raise InvalidArgument(
                f"filter: expected bool, but got {result} ({line_col(source, tree.pos)})"
            )
        self._tree = tree
        self._steps, self._env = environment.plan(refs)

    def evaluate(self, inp: FilterInput) -> bool:
        """Run the filter on one message; raises FilterRuntimeError on any failure."""
        if self.matches_all:
            return True
        try:
            names = environment.build(inp, self._steps, self._env)
            result = evaluator().run(self.source, self._tree, names)
        except FilterRuntimeError:
            raise
        except Exception as exc:  # RecursionError, MemoryError-free bugs: fail closed
            raise FilterRuntimeError(f"{type(exc).__name__}: {exc}") from exc
        if result is True or result is False:
            return result
        if result is None:
            return False
        raise FilterRuntimeError(f"expected bool, but got {type_name(result)}")

    def __repr__(self) -> str:
        return f"CompiledFilter({self.source!r})"


def compile_filter(expr: str) -> CompiledFilter:
    """Parse and type-check ``expr``; InvalidArgument (with a position) if it is bad."""
    if not isinstance(expr, str):
        raise InvalidArgument("filter: expression must be a string")
    return CompiledFilter(expr)


def test_filter(expr: str, inp: FilterInput | None) -> FilterTestResult:
    """Decide exactly as a publish would, reporting instead of raising."""
    try:
        compiled = compile_filter(expr)
    except InvalidArgument as exc:
        return FilterTestResult(valid=False, error=exc.message)
    if inp is None:
        return FilterTestResult(valid=True)
    try:
        matched = compiled.evaluate(inp)
    except FilterRuntimeError as exc:
        return FilterTestResult(valid=True, error=str(exc), ran=True, matched=False)
    return FilterTestResult(valid=True, ran=True, matched=matched)


test_filter.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
