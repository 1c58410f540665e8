"""Type checker: turns expr's provable mistakes into compile errors at Subscribe.

Unknown names, non-boolean results and type mismatches must be rejected when the filter
is set, not discovered per message (concepts §7, §10). The rules follow expr v1.17.8's
checker (spec §4). While walking, the checker also resolves identifiers, records which
environment variables the filter reads (so the runtime builds only those) and compiles
constant regular expressions.
"""

from __future__ import annotations

from collections.abc import Callable

from mqlite.errors import InvalidArgument
from mqlite.filters import natures as t
from mqlite.filters import nodes as n
from mqlite.filters.lexer import line_col
from mqlite.filters.natures import T
from mqlite.filters.optypes import binary_type, predicate_result
from mqlite.filters.postfix import PLAIN_BUILTINS, PREDICATES
from mqlite.filters.signatures import check_builtin
from mqlite.filters.values import RegexError, compile_regex

_BOOL_PREDICATES = frozenset(
    ["all", "any", "none", "one", "filter", "find", "findIndex", "findLast", "findLastIndex"]
)


class Checker:
    def __init__(self, source: str) -> None:
        self.source = source
        self.lets: list[tuple[str, T]] = []
        self.preds: list[tuple[str, T, T]] = []  # (builtin, element type, accumulator type)
        self.refs: set[str] = set()
        self.handlers: dict[type, Callable[..., T]] = {
            n.Const: self.const,
            n.Ident: self.ident,
            n.Pointer: self.pointer,
            n.Unary: self.unary,
            n.Binary: self.binary,
            n.Member: self.member,
            n.Chain: lambda node: self.check(node.inner),
            n.Slice: self.slice,
            n.Call: self.call,
            n.Builtin: self.builtin,
            n.MethodCall: self.method,
            n.Conditional: self.conditional,
            n.Let: self.let,
            n.Sequence: lambda node: [self.check(i) for i in node.items][-1],
            n.ArrayLit: lambda node: t.array_of(t.unify([self.check(i) for i in node.items])),
            n.MapLit: self.map_literal,
        }

    def fail(self, node: n.Node, message: str) -> InvalidArgument:
        return InvalidArgument(f"filter: {message} ({line_col(self.source, node.pos)})")

    def check(self, node: n.Node) -> T:
        return self.handlers[type(node)](node)

    def const(self, node: n.Const) -> T:
        v = node.value
        if v is None:
            return t.NIL
        return {bool: t.BOOL, int: t.INT, float: t.FLOAT, str: t.STRING}[type(v)]

    def ident(self, node: n.Ident) -> T:
        for name, typ in reversed(self.lets):
            if name == node.name:
                node.scope = "let"
                return typ
        if node.name == "$env":
            self.refs.add("$env")
            return t.ENV
        env_type = t.ENVIRONMENT.get(node.name)
        if env_type is None:
            raise self.fail(node, f"unknown name {node.name}")
        self.refs.add(node.name)
        return env_type

    def pointer(self, node: n.Pointer) -> T:
        if not self.preds:
            raise self.fail(node, "cannot use pointer accessor outside predicate")
        builtin, elem, acc = self.preds[-1]
        if node.name == "":
            return elem
        if node.name == "index" and builtin in ("map", "reduce"):
            return t.INT
        if node.name == "acc" and builtin == "reduce":
            return acc
        raise self.fail(node, f"unknown pointer #{node.name}")

    def unary(self, node: n.Unary) -> T:
        typ = self.check(node.operand)
        if node.op in ("not", "!"):
            if not t.maybe(typ, "bool"):
                raise self.fail(node, f"invalid operation: {node.op} (mismatched type {typ})")
            return t.BOOL
        if not t.maybe_number(typ):
            raise self.fail(node, f"invalid operation: {node.op} (mismatched type {typ})")
        return typ

    def binary(self, node: n.Binary) -> T:
        left, right = self.check(node.left), self.check(node.right)
        result = binary_type(node.op, left, right)
        if result is None:
            raise self.fail(
                node, f"invalid operation: {node.op} (mismatched types {left} and {right})"
            )
        op = node.op
        right_const = node.right.value if isinstance(node.right, n.Const) else None
        if (
            op == "%"
            and isinstance(node.left, n.Const)
            and type(right_const) is int
            and right_const == 0
        ):
            raise self.fail(node, "integer divide by zero")
        if op == "matches" and isinstance(node.right, n.Const) and type(node.right.value) is str:
            try:
                node.regex = compile_regex(node.right.value)
            except RegexError as exc:
                raise self.fail(node.right, f"invalid regular expression: {exc}") from None
        return result

    def member(self, node: n.Member) -> T:
        obj, key = self.check(node.obj), self.check(node.prop)
        kind = obj.kind
        if kind == "unknown":
            return t.UNKNOWN
        if kind == "env":
            if not node.has_const:
                return t.UNKNOWN
            typ = t.ENVIRONMENT.get(str(node.const_key))
            if typ is None:
                raise self.fail(node, f"unknown name {node.const_key}")
            return typ
        if kind == "map":
            if not t.assignable(key, obj.key or t.UNKNOWN):
                raise self.fail(node, f"cannot use {key} to get an element from {obj}")
            return obj.elem or t.UNKNOWN
        if kind == "array":
            if not t.maybe(key, "int"):
                raise self.fail(
                    node, f"array elements can only be selected using an integer (got {key})"
                )
            return obj.elem or t.UNKNOWN
        if kind in t.METHODS and node.has_const and node.const_key in t.METHODS[kind]:
            raise self.fail(node, f"method {node.const_key} of {obj} must be called")
        if node.has_const and type(node.const_key) is str and kind != "string":
            raise self.fail(node, f"type {obj} has no field {node.const_key}")
        raise self.fail(node, f"type {obj}[{key}] is undefined")

    def slice(self, node: n.Slice) -> T:
        obj = self.check(node.obj)
        for bound in (node.lo, node.hi):
            if bound is not None and not t.maybe(self.check(bound), "int"):
                raise self.fail(bound, "non-integer slice index")
        if not t.maybe(obj, "array", "string"):
            raise self.fail(node, f"cannot slice {obj}")
        return obj

    def call(self, node: n.Call) -> T:
        sig = t.FUNCTIONS.get(node.name)
        if sig is None:
            raise self.fail(node, f"unknown name {node.name}")
        want, result = sig
        args = [self.check(a) for a in node.args]
        if len(args) != 1:
            many = "not enough" if len(args) < 1 else "too many"
            raise self.fail(node, f"{many} arguments to call {node.name}")
        if not t.maybe(args[0], want.kind):
            raise self.fail(
                node.args[0], f"cannot use {args[0]} as argument (type {want}) to call {node.name}"
            )
        return result

    def method(self, node: n.MethodCall) -> T:
        member = node.member
        obj = self.check(member.obj)
        args = [self.check(a) for a in node.args]
        name = str(member.const_key)
        if obj.kind == "unknown":
            return t.UNKNOWN
        sig = t.METHODS.get(obj.kind, {}).get(name)
        if sig is None:
            raise self.fail(member, f"type {obj} has no method {name}")
        params, result = sig
        if len(args) != len(params):
            many = "not enough" if len(args) < len(params) else "too many"
            raise self.fail(node, f"{many} arguments to call {name}")
        for arg, param, arg_node in zip(args, params, node.args, strict=True):
            if not t.assignable(arg, param):
                raise self.fail(
                    arg_node, f"cannot use {arg} as argument (type {param}) to call {name}"
                )
        return result

    def builtin(self, node: n.Builtin) -> T:
        if node.name in PREDICATES:
            return self.predicate_builtin(node)
        assert node.name in PLAIN_BUILTINS
        if node.name == "now":  # now() is the publish time, read from enqueued_at
            self.refs.add("enqueued_at")
        result = check_builtin(node.name, [self.check(a) for a in node.args])
        if isinstance(result, str):
            raise self.fail(node, result)
        return result

    def predicate_builtin(self, node: n.Builtin) -> T:
        name, args = node.name, node.args
        coll = self.check(args[0])
        if not t.maybe(coll, "array"):
            raise self.fail(node, f"builtin {name} takes only array (got {coll})")
        elem = coll.elem or t.UNKNOWN
        acc = self.check(args[2]) if name == "reduce" and len(args) > 2 else elem
        body = t.UNKNOWN
        if len(args) > 1:
            pred = args[1]
            assert isinstance(pred, n.Predicate)
            self.preds.append((name, elem, t.UNKNOWN if name == "reduce" else acc))
            try:
                body = self.check(pred.body)
            finally:
                self.preds.pop()
            if (name in _BOOL_PREDICATES or name == "count") and not t.maybe(body, "bool"):
                raise self.fail(pred, f"predicate should return boolean (got {body})")
        if name == "sortBy" and len(args) > 2 and not t.maybe(self.check(args[2]), "string"):
            raise self.fail(args[2], "sortBy order must be a string")
        return predicate_result(name, coll, elem, body, len(args) > 1)

    def conditional(self, node: n.Conditional) -> T:
        cond = self.check(node.cond)
        if not t.maybe(cond, "bool"):
            raise self.fail(node.cond, f"non-bool expression (type {cond}) used as condition")
        return t.unify([self.check(node.then), self.check(node.other)])

    def let(self, node: n.Let) -> T:
        taken = (
            node.name in t.ENVIRONMENT
            or node.name in t.FUNCTIONS
            or node.name in PLAIN_BUILTINS
            or node.name in PREDICATES
            or any(name == node.name for name, _ in self.lets)
        )
        if taken:
            raise self.fail(node, f"cannot redeclare {node.name}")
        self.lets.append((node.name, self.check(node.value)))
        try:
            return self.check(node.body)
        finally:
            self.lets.pop()

    def map_literal(self, node: n.MapLit) -> T:
        for pair in node.pairs:
            self.check(pair.key)
            self.check(pair.value)
        return t.map_of(t.STRING, t.UNKNOWN)


def check(tree: n.Node, source: str) -> tuple[T, set[str]]:
    """Check ``tree``; returns the result type and the environment names it reads."""
    checker = Checker(source)
    return checker.check(tree), checker.refs
