"""The filter AST: one small class per expr node kind (mirrors expr's ``ast/node.go``).

The same objects serve three jobs: the parser builds them (counting each one as expr's
``createNode`` does), the checker annotates them in place (``regex``, ``const_key``...),
and the simpleeval-based runtime dispatches on their class. No Python ``ast`` node is ever
produced, so simpleeval's own attribute/call handlers can never be reached.
"""

from __future__ import annotations

from typing import Any


class Node:
    __slots__ = ("pos",)

    def __init__(self, pos: int) -> None:
        self.pos = pos


class Const(Node):
    """nil, true/false, integer, float or string literal."""

    __slots__ = ("value",)

    def __init__(self, pos: int, value: Any) -> None:
        super().__init__(pos)
        self.value = value


class Ident(Node):
    __slots__ = ("name", "scope")

    def __init__(self, pos: int, name: str) -> None:
        super().__init__(pos)
        self.name = name
        self.scope = "env"  # "env" or "let": resolved by the checker


class Pointer(Node):
    """``#`` (name ""), ``#index`` or ``#acc`` inside a predicate."""

    __slots__ = ("name",)

    def __init__(self, pos: int, name: str) -> None:
        super().__init__(pos)
        self.name = name


class Unary(Node):
    __slots__ = ("op", "operand")

    def __init__(self, pos: int, op: str, operand: Node) -> None:
        super().__init__(pos)
        self.op = op
        self.operand = operand


class Binary(Node):
    __slots__ = ("left", "op", "regex", "right")

    def __init__(self, pos: int, op: str, left: Node, right: Node) -> None:
        super().__init__(pos)
        self.op = op
        self.left = left
        self.right = right
        self.regex: Any = None  # constant pattern of `matches`, compiled by the checker


class Member(Node):
    """``obj.name``, ``obj[key]`` and their ``?.`` forms."""

    __slots__ = ("const_key", "has_const", "obj", "optional", "prop")

    def __init__(self, pos: int, obj: Node, prop: Node, optional: bool) -> None:
        super().__init__(pos)
        self.obj = obj
        self.prop = prop
        self.optional = optional
        self.has_const = isinstance(prop, Const)
        self.const_key: Any = prop.value if isinstance(prop, Const) else None


class Chain(Node):
    """Delimits an optional chain: a nil met by ``?.`` makes the whole chain nil."""

    __slots__ = ("inner",)

    def __init__(self, pos: int, inner: Node) -> None:
        super().__init__(pos)
        self.inner = inner


class Slice(Node):
    __slots__ = ("hi", "lo", "obj")

    def __init__(self, pos: int, obj: Node, lo: Node | None, hi: Node | None) -> None:
        super().__init__(pos)
        self.obj = obj
        self.lo = lo
        self.hi = hi


class Call(Node):
    """A call of an environment function (``hours(2)``, ``duration("1d")``)."""

    __slots__ = ("args", "name")

    def __init__(self, pos: int, name: str, args: list[Node]) -> None:
        super().__init__(pos)
        self.name = name
        self.args = args


class Builtin(Node):
    """A call of an expr builtin (``len``, ``upper``, ``all``...)."""

    __slots__ = ("args", "name")

    def __init__(self, pos: int, name: str, args: list[Node]) -> None:
        super().__init__(pos)
        self.name = name
        self.args = args


class Predicate(Node):
    __slots__ = ("body", "size")

    def __init__(self, pos: int, body: Node, size: int) -> None:
        super().__init__(pos)
        self.body = body
        self.size = size  # nodes in the body: the work one iteration costs


class MethodCall(Node):
    """``time.Hour()``, ``d.Hours()``: only whitelisted methods, resolved by name."""

    __slots__ = ("args", "member")

    def __init__(self, pos: int, member: Member, args: list[Node]) -> None:
        super().__init__(pos)
        self.member = member
        self.args = args


class Conditional(Node):
    __slots__ = ("cond", "other", "then")

    def __init__(self, pos: int, cond: Node, then: Node, other: Node) -> None:
        super().__init__(pos)
        self.cond = cond
        self.then = then
        self.other = other


class Let(Node):
    __slots__ = ("body", "name", "value")

    def __init__(self, pos: int, name: str, value: Node, body: Node) -> None:
        super().__init__(pos)
        self.name = name
        self.value = value
        self.body = body


class Sequence(Node):
    __slots__ = ("items",)

    def __init__(self, pos: int, items: list[Node]) -> None:
        super().__init__(pos)
        self.items = items


class ArrayLit(Node):
    __slots__ = ("items",)

    def __init__(self, pos: int, items: list[Node]) -> None:
        super().__init__(pos)
        self.items = items


class Pair(Node):
    __slots__ = ("key", "value")

    def __init__(self, pos: int, key: Node, value: Node) -> None:
        super().__init__(pos)
        self.key = key
        self.value = value


class MapLit(Node):
    __slots__ = ("pairs",)

    def __init__(self, pos: int, pairs: list[Pair]) -> None:
        super().__init__(pos)
        self.pairs = pairs
