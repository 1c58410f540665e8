"""Calls, predicates and postfix operators of the expr grammar (split out of parser.py).

Kept apart because these rules carry most of expr's irregularities: which names are
builtins (one node) versus environment functions (identifier + call), the argument shapes
of the predicate builtins, ``?.`` chains and slices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqlite.filters import nodes as n
from mqlite.filters.lexer import Token

if TYPE_CHECKING:
    from mqlite.filters.parser import Parser

# Predicate builtins: argument kinds, "e" expression, "p" predicate, "?" marks optional.
PREDICATES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ["all", "none", "any", "one", "filter", "map", "find", "findIndex", "findLast"],
        ("e", "p"),
    ),
    "findLastIndex": ("e", "p"),
    "groupBy": ("e", "p"),
    "count": ("e", "p?"),
    "sum": ("e", "p?"),
    "sortBy": ("e", "p", "e?"),
    "reduce": ("e", "p", "e?"),
}
PLAIN_BUILTINS = frozenset(
    [
        "len",
        "type",
        "abs",
        "ceil",
        "floor",
        "round",
        "int",
        "float",
        "string",
        "trim",
        "trimPrefix",
        "trimSuffix",
        "upper",
        "lower",
        "split",
        "splitAfter",
        "replace",
        "repeat",
        "join",
        "indexOf",
        "lastIndexOf",
        "hasPrefix",
        "hasSuffix",
        "max",
        "min",
        "mean",
        "median",
        "toJSON",
        "fromJSON",
        "toBase64",
        "fromBase64",
        "now",
        "date",
        "timezone",
        "first",
        "last",
        "get",
        "take",
        "keys",
        "values",
        "toPairs",
        "fromPairs",
        "reverse",
        "uniq",
        "flatten",
        "sort",
        "concat",
        "bitand",
        "bitor",
        "bitxor",
        "bitnand",
        "bitshl",
        "bitshr",
        "bitushr",
        "bitnot",
    ]
)


def parse_call(p: Parser, tok: Token, args: list[n.Node]) -> n.Node:
    """``name(...)``; ``args`` already holds the left side of a pipe, if any."""
    name = tok.value
    if name in PREDICATES:
        p.expect("bracket", "(")
        first = True
        for kind in PREDICATES[name][len(args) :]:
            if kind.endswith("?") and p.cur.is_("bracket", ")"):
                break
            if not first:
                p.expect("op", ",")
            first = False
            args.append(parse_closure(p) if kind[0] == "p" else p.expression(0))
        p.expect("bracket", ")")
        return p.node(n.Builtin(tok.pos, name, args))
    if name in PLAIN_BUILTINS:
        return p.node(n.Builtin(tok.pos, name, parse_arguments(p, args)))
    p.node(n.Ident(tok.pos, name))  # expr counts the callee identifier
    return p.node(n.Call(tok.pos, name, parse_arguments(p, args)))


def parse_arguments(p: Parser, args: list[n.Node]) -> list[n.Node]:
    offset = len(args)
    p.expect("bracket", "(")
    while not p.cur.is_("bracket", ")"):
        if len(args) > offset:
            p.expect("op", ",")
            if p.cur.is_("bracket", ")"):
                break
        args.append(p.expression(0))
    p.expect("bracket", ")")
    return args


def parse_closure(p: Parser) -> n.Node:
    start = p.cur
    braces = start.is_("bracket", "{")
    if braces:
        p.next()
    p.depth += 1
    before = p.count
    body = p.sequence() if braces else p.expression(0)
    if not braces and p.cur.is_("op", ";"):
        raise p.error("wrong use of semicolon")
    p.depth -= 1
    if braces:
        p.expect("bracket", "}")
    return p.node(n.Predicate(start.pos, body, p.count - before))


def parse_postfix(p: Parser, node: n.Node) -> n.Node:
    tok = p.cur
    while tok.kind in ("op", "bracket"):
        optional = tok.value == "?."
        if tok.value in (".", "?."):
            p.next()
            prop = p.cur
            if optional and prop.is_("bracket", "["):
                node = _index(p, node, prop, optional=True)
                tok = p.cur
                continue
            p.next()
            if not (prop.kind == "ident" or (prop.kind == "op" and prop.value.isalpha())):
                raise p.error("expected name", prop)
            key = p.node(n.Const(prop.pos, prop.value))
            is_chain = isinstance(node, n.Chain)
            if isinstance(node, n.Chain):
                node = node.inner
            member = p.node(n.Member(prop.pos, node, key, optional))
            if p.cur.is_("bracket", "("):
                node = p.node(n.MethodCall(prop.pos, member, parse_arguments(p, [])))
            else:
                node = member
            if is_chain or optional:
                node = p.node(n.Chain(prop.pos, node))
        elif tok.value == "[":
            node = _index(p, node, tok, optional=False)
        else:
            break
        tok = p.cur
    return node


def _index(p: Parser, node: n.Node, tok: Token, optional: bool) -> n.Node:
    """``[i]``, ``[a:b]``, ``[:b]``, ``[a:]``, ``[:]`` (``tok`` is the ``[``)."""
    p.next()
    lo: n.Node | None = None
    hi: n.Node | None = None
    if not p.cur.is_("op", ":"):
        lo = p.expression(0)
        if not p.cur.is_("op", ":"):
            p.expect("bracket", "]")
            member: n.Node = p.node(n.Member(tok.pos, node, lo, optional))
            return p.node(n.Chain(tok.pos, member)) if optional else member
    p.next()  # the ':'
    if not p.cur.is_("bracket", "]"):
        hi = p.expression(0)
    p.expect("bracket", "]")
    return p.node(n.Slice(tok.pos, node, lo, hi))


def parse_map(p: Parser) -> n.Node:
    start = p.cur
    p.next()
    pairs: list[n.Pair] = []
    while not p.cur.is_("bracket", "}"):
        if pairs:
            p.expect("op", ",")
            if p.cur.is_("bracket", "}"):
                break
        key_tok = p.cur
        if key_tok.kind in ("ident", "string", "number") or (
            key_tok.kind == "op" and key_tok.value.isalpha()
        ):
            p.next()
            key: n.Node = p.node(n.Const(key_tok.pos, key_tok.value))
        elif key_tok.is_("bracket", "("):
            key = p.expression(0)
        else:
            raise p.error(
                f"a map key must be a quoted string, a number, a identifier, "
                f"or an expression enclosed in parentheses (unexpected token "
                f"{key_tok.describe()})"
            )
        p.expect("op", ":")
        value = p.expression(0)
        pairs.append(p.node(n.Pair(key_tok.pos, key, value)))
    p.next()
    return p.node(n.MapLit(start.pos, pairs))
