"""Pratt parser for expr-lang: a port of expr v1.17.8 ``parser/parser.go``.

Python's own parser cannot be reused: expr's precedences differ (``not`` binds tighter
than ``==``, only ``< > <= >=`` chain, ``??`` may not mix, the pipe is the lowest level,
``^`` is power) and it has constructs Python lacks (``#`` predicates, ``let``, ``?.``).
Nodes are counted exactly as expr's ``createNode`` counts them so the 1000-node cap
accepts and rejects the same sources as the original.
"""

from __future__ import annotations

from typing import TypeVar

from mqlite.defaults import FILTER_MAX_AST_NODES
from mqlite.errors import InvalidArgument
from mqlite.filters import nodes as n
from mqlite.filters.lexer import Token, line_col, number_value, syntax_error, tokenize
from mqlite.filters.postfix import parse_call, parse_map, parse_postfix

_N = TypeVar("_N", bound=n.Node)

BINARY: dict[str, tuple[int, bool]] = {  # op -> (precedence, left-associative)
    "|": (0, True),
    "or": (10, True),
    "||": (10, True),
    "and": (15, True),
    "&&": (15, True),
    **dict.fromkeys(
        ["==", "!=", "<", ">", "<=", ">=", "in", "matches", "contains", "startsWith", "endsWith"],
        (20, True),
    ),
    "..": (25, True),
    "+": (30, True),
    "-": (30, True),
    "*": (60, True),
    "/": (60, True),
    "%": (60, True),
    "**": (100, False),
    "^": (100, False),
    "??": (500, True),
}
UNARY = {"not": 50, "!": 50, "-": 90, "+": 90}
NEGATABLE = frozenset(["in", "matches", "contains", "startsWith", "endsWith"])
COMPARISONS = frozenset(["<", ">", "<=", ">="])


class Parser:
    def __init__(self, source: str, max_nodes: int = FILTER_MAX_AST_NODES) -> None:
        self.source = source
        self.tokens = tokenize(source)
        self.i = 0
        self.cur = self.tokens[0]
        self.count = 0
        self.max_nodes = max_nodes
        self.depth = 0  # > 0 inside a predicate, where `#` and `.field` are allowed

    # -- helpers ---------------------------------------------------------------------
    def node(self, node: _N) -> _N:
        self.count += 1
        if self.count > self.max_nodes:
            raise InvalidArgument(
                f"filter: compilation failed: expression exceeds maximum allowed nodes "
                f"({self.max_nodes}) ({line_col(self.source, node.pos)})"
            )
        return node

    def error(self, message: str, tok: Token | None = None) -> InvalidArgument:
        return syntax_error(self.source, (tok or self.cur).pos, message)

    def next(self) -> None:
        self.i += 1
        self.cur = self.tokens[min(self.i, len(self.tokens) - 1)]

    def expect(self, kind: str, value: str | None = None) -> Token:
        tok = self.cur
        if not tok.is_(kind, value):
            want = value if value is not None else kind
            raise self.error(f'unexpected token {tok.describe()}, expected "{want}"')
        self.next()
        return tok

    # -- grammar ---------------------------------------------------------------------
    def parse(self) -> n.Node:
        tree = self.sequence()
        if self.cur.kind != "eof":
            raise self.error(f"unexpected token {self.cur.describe()}")
        return tree

    def sequence(self) -> n.Node:
        items = [self.expression(0)]
        while self.cur.is_("op", ";"):
            self.next()
            if self.cur.kind == "eof":
                break
            items.append(self.expression(0))
        if len(items) == 1:
            return items[0]
        return self.node(n.Sequence(items[0].pos, items))

    def expression(self, prec: int) -> n.Node:
        if prec == 0 and self.cur.is_("op", "let"):
            return self.let()
        if prec == 0 and self.cur.is_("op", "if"):
            return self.if_else()
        left = self.primary()
        prev_op = ""
        op_tok = self.cur
        while op_tok.kind == "op":
            negate = op_tok.value == "not"
            if negate:
                save = self.i
                self.next()
                if self.cur.value not in NEGATABLE or self.cur.kind != "op":
                    raise self.error(f"unexpected token {self.cur.describe()}")
                if BINARY[self.cur.value][0] < prec:
                    self.i, self.cur = save, op_tok
                    break
                not_tok, op_tok = op_tok, self.cur
            spec = BINARY.get(op_tok.value)
            if spec is None or spec[0] < prec:
                break
            self.next()
            if op_tok.value == "|":
                name = self.expect("ident")
                left = self.call(name, [left])
            elif prev_op == "??" and op_tok.value != "??":
                raise self.error(
                    f"Operator ({op_tok.value}) and coalesce expressions (??) cannot be mixed."
                    " Wrap either by parentheses.",
                    op_tok,
                )
            elif op_tok.value in COMPARISONS:
                left = self.comparison(left, op_tok, spec[0])
            else:
                right = self.expression(spec[0] + 1 if spec[1] else spec[0])
                left = self.node(n.Binary(op_tok.pos, op_tok.value, left, right))
                if negate:
                    left = self.node(n.Unary(not_tok.pos, "not", left))
            prev_op = op_tok.value
            op_tok = self.cur
        if prec == 0:
            left = self.conditional(left)
        return left

    def comparison(self, left: n.Node, tok: Token, prec: int) -> n.Node:
        root: n.Node | None = None
        while True:
            right = self.expression(prec + 1)
            cmp = self.node(n.Binary(tok.pos, tok.value, left, right))
            root = cmp if root is None else self.node(n.Binary(tok.pos, "&&", root, cmp))
            left, tok = right, self.cur
            if not (tok.kind == "op" and tok.value in COMPARISONS):
                return root
            self.next()

    def conditional(self, node: n.Node) -> n.Node:
        while self.cur.is_("op", "?"):
            self.next()
            if self.cur.is_("op", ":"):
                self.next()
                then, other = node, self.expression(0)
            else:
                then = self.expression(0)
                self.expect("op", ":")
                other = self.expression(0)
            node = self.node(n.Conditional(node.pos, node, then, other))
        return node

    def let(self) -> n.Node:
        self.next()
        name = self.expect("ident")
        self.expect("op", "=")
        value = self.expression(0)
        self.expect("op", ";")
        body = self.sequence()
        return self.node(n.Let(name.pos, name.value, value, body))

    def if_else(self) -> n.Node:
        pos = self.cur.pos
        self.next()
        cond = self.expression(0)
        self.expect("bracket", "{")
        then = self.sequence()
        self.expect("bracket", "}")
        self.expect("op", "else")
        if self.cur.is_("op", "if"):
            other = self.if_else()
        else:
            self.expect("bracket", "{")
            other = self.sequence()
            self.expect("bracket", "}")
        return n.Conditional(pos, cond, then, other)  # not counted, as in expr

    def primary(self) -> n.Node:
        tok = self.cur
        if tok.kind == "op" and tok.value in UNARY:
            self.next()
            operand = self.expression(UNARY[tok.value])
            return self.postfix(self.node(n.Unary(tok.pos, tok.value, operand)))
        if tok.is_("bracket", "("):
            self.next()
            inner = self.sequence()
            if not self.cur.is_("bracket", ")"):
                raise self.error(f"unexpected token {self.cur.describe()} (unbalanced parenthesis)")
            self.next()
            return self.postfix(inner)
        if self.depth > 0 and tok.kind == "op" and tok.value in ("#", "."):
            name = ""
            if tok.value == "#":
                self.next()
                if self.cur.kind == "ident":
                    name = self.cur.value
                    self.next()
            return self.postfix(self.node(n.Pointer(tok.pos, name)))
        if tok.is_("op", "::"):
            self.next()
            return self.postfix(self.call(self.expect("ident"), []))
        return self.postfix(self.secondary())

    def secondary(self) -> n.Node:
        tok = self.cur
        if tok.kind == "ident":
            self.next()
            if tok.value in ("true", "false", "nil"):
                value = {"true": True, "false": False, "nil": None}[tok.value]
                return self.node(n.Const(tok.pos, value))
            if self.cur.is_("bracket", "("):
                return self.call(tok, [])
            return self.node(n.Ident(tok.pos, tok.value))
        if tok.kind == "number":
            self.next()
            return self.node(n.Const(tok.pos, number_value(self.source, tok)))
        if tok.kind == "string":
            self.next()
            return self.node(n.Const(tok.pos, tok.value))
        if tok.is_("bracket", "["):
            self.next()
            items = self.items("]")
            return self.node(n.ArrayLit(tok.pos, items))
        if tok.is_("bracket", "{"):
            return parse_map(self)
        raise self.error(f"unexpected token {tok.describe()}")

    def items(self, closer: str) -> list[n.Node]:
        out: list[n.Node] = []
        while not self.cur.is_("bracket", closer):
            if out:
                self.expect("op", ",")
                if self.cur.is_("bracket", closer):
                    break
            out.append(self.expression(0))
        self.next()
        return out

    def call(self, tok: Token, args: list[n.Node]) -> n.Node:
        return parse_call(self, tok, args)

    def postfix(self, node: n.Node) -> n.Node:
        return parse_postfix(self, node)


def parse(source: str) -> tuple[n.Node, int]:
    """Parse ``source``; returns the tree and its node count (expr's counting)."""
    parser = Parser(source)
    return parser.parse(), parser.count
