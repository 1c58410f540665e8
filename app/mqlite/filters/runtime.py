"""The evaluator: simpleeval's tree walker with handlers for our node classes only.

``SimpleEval._eval`` does the dispatch and runs ``_check_disallowed_items`` on every
intermediate value (defence in depth). Its default handler table is *replaced*, so no
Python ``ast`` construct (attribute access, calls of arbitrary callables, comprehensions)
can ever be evaluated; names resolve only through the environment we build.

Building a SimpleEval is slow (it enters ``warnings.catch_warnings``), so each thread
keeps one evaluator and reuses it for every filter and message; per-evaluation state is
reset by ``run``. Work is bounded: predicate iterations are charged by body size,
allocations (ranges, arrays, strings) against a memory budget like expr's, regex searches
by their worst-case cost, and every evaluation by wall-clock time; exceeding any of them
is a ``FilterRuntimeError``, so the message is not routed there (fail closed, counted).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from simpleeval import SimpleEval

from mqlite.filters import nodes as n
from mqlite.filters.builtins import BUILTINS, mqlite_function
from mqlite.filters.methods import call_method
from mqlite.filters.ops import EAGER, fetch, slice_value, wrap
from mqlite.filters.postfix import PREDICATES
from mqlite.filters.predicates import run_predicate
from mqlite.filters.values import FilterRuntimeError, compile_regex, type_name

MEMORY_BUDGET = 1_000_000  # expr's default memory budget (elements / characters allocated)
STEP_BUDGET = 100_000  # node evaluations spent inside predicate bodies per message
# Wall-clock bound of one evaluation, checked after every builtin/method call and every
# 256 nodes (a builtin is bounded by the memory/step budgets, so none can run long alone).
TIME_BUDGET_S = 0.050
# A regex search costs at most ~(program size x text length) in RE2's NFA fallback (the
# DFA is usually far faster); searches whose worst case exceeds this are refused before
# they start (~0.5 s at 8 ns per unit on the CI machine). RE2 releases the GIL meanwhile.
REGEX_WORK_BUDGET = 64_000_000
_TICK_MASK = 0xFF
# The wall clock both time budgets (one evaluation, one publish) are measured on: elapsed
# time is what stalls other callers. A module name so tests can substitute a fake.
elapsed_clock = time.perf_counter

_REGEX_CACHE_SIZE = 64


class NilChain(Exception):
    """Raised by ``?.`` on nil; caught by the enclosing Chain node, which yields nil."""


class Evaluator(SimpleEval):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__(operators={}, functions={}, names={})
        self.nodes = {
            n.Const: self._const,
            n.Ident: self._ident,
            n.Pointer: self._pointer,
            n.Unary: self._unary,
            n.Binary: self._binary,
            n.Member: self._member,
            n.Chain: self._chain,
            n.Slice: self._slice,
            n.Call: self._call,
            n.Builtin: self._builtin,
            n.MethodCall: self._method,
            n.Conditional: self._conditional,
            n.Let: self._let,
            n.Sequence: self._sequence,
            n.ArrayLit: self._array,
            n.MapLit: self._map,
        }
        self.lets: dict[str, Any] = {}
        self.frames: list[list[Any]] = []  # predicate frames: [item, index, acc]
        self.memory = 0
        self.steps = 0
        self.regex_work = 0
        self.ticks = 0
        self.deadline = 0.0
        self.regexes: dict[str, Any] = {}

    def run(self, source: str, tree: n.Node, names: dict[str, Any]) -> Any:
        self.names = names
        self.lets = {}
        self.frames = []
        self.memory = 0
        self.steps = 0
        self.regex_work = 0
        self.ticks = 0
        self.deadline = elapsed_clock() + TIME_BUDGET_S
        return self.eval(source, previously_parsed=tree)

    def _eval(self, node: Any) -> Any:
        self.ticks += 1
        if not self.ticks & _TICK_MASK:
            self.check_time()
        return super()._eval(node)

    def check_time(self) -> None:
        if elapsed_clock() > self.deadline:
            raise FilterRuntimeError(f"time budget exceeded ({TIME_BUDGET_S * 1000:.0f} ms)")

    def now(self) -> Any:
        """``now()`` is the publish time: the clock is injected, never read here."""
        names: dict[str, Any] = self.names
        return names["enqueued_at"]

    # -- budgets -----------------------------------------------------------------------
    def charge(self, units: int) -> None:
        self.memory += units
        if self.memory > MEMORY_BUDGET:
            raise FilterRuntimeError("memory budget exceeded")

    def step(self, units: int) -> None:
        self.steps += units
        if self.steps > STEP_BUDGET:
            raise FilterRuntimeError("operation budget exceeded")

    def search(self, regex: Any, text: str) -> bool:
        """``text matches regex`` within the regex work budget (refused before it runs)."""
        self.regex_work += max(int(regex.programsize), 1) * max(len(text), 1)
        if self.regex_work > REGEX_WORK_BUDGET:
            raise FilterRuntimeError(
                "regex budget exceeded (pattern too complex for a text this long)"
            )
        return regex.search(text) is not None

    def regex(self, pattern: str) -> Any:
        compiled = self.regexes.get(pattern)
        if compiled is None:
            compiled = compile_regex(pattern)
            if len(self.regexes) >= _REGEX_CACHE_SIZE:
                self.regexes.clear()
            self.regexes[pattern] = compiled
        return compiled

    # -- handlers ----------------------------------------------------------------------
    def _const(self, node: n.Const) -> Any:
        return node.value

    def _ident(self, node: n.Ident) -> Any:
        if node.scope == "let":
            return self.lets[node.name]
        return self.names[node.name]

    def _pointer(self, node: n.Pointer) -> Any:
        frame = self.frames[-1]
        return frame[0] if node.name == "" else frame[1] if node.name == "index" else frame[2]

    def _unary(self, node: n.Unary) -> Any:
        v = self._eval(node.operand)
        tv = type(v)
        if node.op in ("!", "not"):
            if tv is bool:
                return not v
        elif tv is int:
            return wrap(-v) if node.op == "-" else v
        elif tv is float:
            return -v if node.op == "-" else v
        raise FilterRuntimeError(f"invalid operation: {node.op} {type_name(v)}")

    def _binary(self, node: n.Binary) -> Any:
        op = node.op
        if op in ("&&", "and", "||", "or"):
            left = self._eval(node.left)
            if type(left) is not bool:
                raise FilterRuntimeError(f"interface conversion: {type_name(left)} is not bool")
            if left is (op in ("||", "or")):
                return left
            return self._eval(node.right)
        if op == "??":
            left = self._eval(node.left)
            return self._eval(node.right) if left is None else left
        left = self._eval(node.left)
        right = self._eval(node.right)
        fn = EAGER.get(op)
        if fn is not None:
            result = fn(left, right)
            if op == "+" and type(result) is str:
                self.charge(len(result))
            return result
        if op == "matches":
            if left is None or right is None:
                return False
            if type(left) is not str or type(right) is not str:
                raise FilterRuntimeError(
                    f"invalid operation: {type_name(left)} matches {type_name(right)}"
                )
            regex = node.regex if node.regex is not None else self.regex(right)
            return self.search(regex, left)
        # ".." (range)
        if type(left) is not int or type(right) is not int:
            raise FilterRuntimeError(f"invalid operation: {type_name(left)} .. {type_name(right)}")
        self.charge(max(right - left + 1, 0))
        return list(range(left, right + 1))

    def _member(self, node: n.Member) -> Any:
        obj = self._eval(node.obj)
        key = node.const_key if node.has_const else self._eval(node.prop)
        if obj is None and node.optional:
            raise NilChain
        return fetch(obj, key)

    def _chain(self, node: n.Chain) -> Any:
        try:
            return self._eval(node.inner)
        except NilChain:
            return None

    def _slice(self, node: n.Slice) -> Any:
        obj = self._eval(node.obj)
        lo = None if node.lo is None else self._eval(node.lo)
        hi = None if node.hi is None else self._eval(node.hi)
        return slice_value(obj, lo, hi)

    def _call(self, node: n.Call) -> Any:
        result = mqlite_function(node.name, [self._eval(a) for a in node.args])
        self.check_time()
        return result

    def _builtin(self, node: n.Builtin) -> Any:
        if node.name in PREDICATES:
            result = run_predicate(self, node)
        else:
            result = BUILTINS[node.name](self, [self._eval(a) for a in node.args])
        self.check_time()
        return result

    def _method(self, node: n.MethodCall) -> Any:
        member = node.member
        obj = self._eval(member.obj)
        if obj is None and member.optional:
            raise NilChain
        result = call_method(obj, str(member.const_key), [self._eval(a) for a in node.args])
        self.check_time()
        return result

    def _conditional(self, node: n.Conditional) -> Any:
        cond = self._eval(node.cond)
        if cond is True:
            return self._eval(node.then)
        if cond is False:
            return self._eval(node.other)
        raise FilterRuntimeError(f"non-bool {type_name(cond)} used as condition")

    def _let(self, node: n.Let) -> Any:
        self.lets[node.name] = self._eval(node.value)
        try:
            return self._eval(node.body)
        finally:
            del self.lets[node.name]

    def _sequence(self, node: n.Sequence) -> Any:
        result = None
        for item in node.items:
            result = self._eval(item)
        return result

    def _array(self, node: n.ArrayLit) -> Any:
        self.charge(len(node.items))
        return [self._eval(i) for i in node.items]

    def _map(self, node: n.MapLit) -> Any:
        self.charge(len(node.pairs))
        out: dict[Any, Any] = {}
        for pair in node.pairs:
            key = self._eval(pair.key)
            if type(key) is not str:
                raise FilterRuntimeError(f"map keys must be strings (got {type_name(key)})")
            out[key] = self._eval(pair.value)
        return out


_local = threading.local()


def evaluator() -> Evaluator:
    """This thread's evaluator (simpleeval instances are not thread-safe)."""
    ev: Evaluator | None = getattr(_local, "ev", None)
    if ev is None:
        ev = _local.ev = Evaluator()
    return ev
