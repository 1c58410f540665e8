"""Tokenizer for the expr-lang v1.17.8 surface syntax.

A port of expr's ``parser/lexer`` state machine (spec: expr-language.md §2). It is hand
written rather than regex driven so that every error carries an exact offset and so that
the quirks of expr (``not in`` as an operator, ``1..3`` as a range, Go string escapes,
doubled backticks in raw strings) are reproduced instead of approximated.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqlite.errors import InvalidArgument

KEYWORD_OPERATORS = frozenset(
    ["in", "or", "and", "matches", "contains", "startsWith", "endsWith", "let", "if", "else", "not"]
)
_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "?": "?",
}
_HEX = "0123456789abcdefABCDEF"


@dataclass(frozen=True, slots=True)
class Token:
    """One lexeme: ``kind`` is ident, number, string, op, bracket or eof."""

    kind: str
    value: str
    pos: int

    def is_(self, kind: str, value: str | None = None) -> bool:
        return self.kind == kind and (value is None or self.value == value)

    def describe(self) -> str:
        """How an error names the token: ``"foo"``, ``"=="``, or ``EOF`` (never a repr)."""
        return "EOF" if self.kind == "eof" else f'"{self.value}"'


def line_col(source: str, pos: int) -> str:
    """Render an offset as ``line:col`` (1-based columns, like expr's messages)."""
    before = source[:pos]
    line = before.count("\n") + 1
    col = pos - (before.rfind("\n") + 1) + 1
    return f"{line}:{col}"


def syntax_error(source: str, pos: int, message: str) -> InvalidArgument:
    return InvalidArgument(f"filter: {message} ({line_col(source, pos)})")


def _is_ident_start(ch: str) -> bool:
    return ch.isalpha() or ch in "_$"


def _is_ident_part(ch: str) -> bool:
    return ch.isalnum() or ch in "_$"


def tokenize(source: str) -> list[Token]:
    """Split ``source`` into tokens; raises InvalidArgument on a lexical error."""
    out: list[Token] = []
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if ch.isspace():
            i += 1
        elif source.startswith("//", i):
            j = source.find("\n", i)
            i = n if j < 0 else j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            if j < 0:
                raise syntax_error(source, i, "unclosed comment")
            i = j + 2
        elif ch.isdigit() or (ch == "." and i + 1 < n and source[i + 1].isdigit()):
            i = _number(source, i, out)
        elif _is_ident_start(ch):
            j = i + 1
            while j < n and _is_ident_part(source[j]):
                j += 1
            word = source[i:j]
            out.append(Token("op" if word in KEYWORD_OPERATORS else "ident", word, i))
            i = j
        elif ch in "\"'":
            i = _quoted(source, i, out)
        elif ch == "`":
            i = _raw(source, i, out)
        elif ch in "([{)]}":
            out.append(Token("bracket", ch, i))
            i += 1
        else:
            i = _operator(source, i, out)
    out.append(Token("eof", "", n))
    return out


def _operator(source: str, i: int, out: list[Token]) -> int:
    ch = source[i]
    nxt = source[i + 1] if i + 1 < len(source) else ""
    if ch in ",;%+-^/#":
        width = 1
    elif ch in "&!=*<>":
        width = 2 if nxt in ("&", "=", "*") and nxt else 1
    elif ch == "?":
        width = 2 if nxt in (".", "?") and nxt else 1
    elif ch == "|":
        width = 2 if nxt == "|" else 1
    elif ch == ":":
        width = 2 if nxt == ":" else 1
    elif ch == ".":
        width = 2 if nxt == "." else 1
    else:
        raise syntax_error(source, i, f"unrecognized character: U+{ord(ch):04X} {ch!r}")
    out.append(Token("op", source[i : i + width], i))
    return i + width


def _number(source: str, i: int, out: list[Token]) -> int:
    n, start = len(source), i
    digits = "0123456789_"
    if source[i] == "0" and i + 1 < n and source[i + 1] in "xXoObB":
        digits = {"x": _HEX + "_", "o": "01234567_", "b": "01_"}[source[i + 1].lower()]
        i += 2
    while i < n and source[i] in digits:
        i += 1
    if i < n and source[i] == "." and not source.startswith("..", i):
        i += 1
        while i < n and source[i] in digits:
            i += 1
    if i < n and source[i] in "eE" and digits.startswith("0123456789_"):
        i += 1
        if i < n and source[i] in "+-":
            i += 1
        while i < n and source[i] in digits:
            i += 1
    if i < n and _is_ident_part(source[i]):
        raise syntax_error(source, start, f"bad number syntax: {source[start : i + 1]!r}")
    out.append(Token("number", source[start:i], start))
    return i


def _quoted(source: str, i: int, out: list[Token]) -> int:
    quote, start, n = source[i], i, len(source)
    i += 1
    buf: list[str] = []
    while True:
        if i >= n or source[i] == "\n":
            raise syntax_error(source, start, "literal not terminated")
        ch = source[i]
        if ch == quote:
            out.append(Token("string", "".join(buf), start))
            return i + 1
        if ch != "\\":
            buf.append(ch)
            i += 1
            continue
        i = _escape(source, i, buf)


def _escape(source: str, i: int, buf: list[str]) -> int:
    """Decode one Go-style escape starting at the backslash ``source[i]``."""
    esc = source[i + 1] if i + 1 < len(source) else ""
    if esc in _SIMPLE_ESCAPES and esc:
        buf.append(_SIMPLE_ESCAPES[esc])
        return i + 2
    hex_len = {"x": 2, "u": 4, "U": 8}.get(esc, 0)
    if esc == "u" and source.startswith("{", i + 2):
        end = source.find("}", i + 3)
        body = source[i + 3 : end] if end > 0 else ""
        if not 1 <= len(body) <= 6 or any(c not in _HEX for c in body):
            raise syntax_error(source, i, "invalid char escape")
        return _append_code(source, i, int(body, 16), buf, end + 1)
    if hex_len:
        body = source[i + 2 : i + 2 + hex_len]
        if len(body) != hex_len or any(c not in _HEX for c in body):
            raise syntax_error(source, i, "invalid char escape")
        return _append_code(source, i, int(body, 16), buf, i + 2 + hex_len)
    body = source[i + 1 : i + 4]
    if len(body) == 3 and body[0] in "0123" and all(c in "01234567" for c in body):
        buf.append(chr(int(body, 8)))
        return i + 4
    raise syntax_error(source, i, "invalid char escape")


def _append_code(source: str, i: int, code: int, buf: list[str], nxt: int) -> int:
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        raise syntax_error(source, i, "escape sequence is invalid Unicode code point")
    buf.append(chr(code))
    return nxt


def _raw(source: str, i: int, out: list[Token]) -> int:
    start, n = i, len(source)
    i += 1
    buf: list[str] = []
    while True:
        if i >= n:
            raise syntax_error(source, start, "literal not terminated")
        if source[i] == "`":
            if source.startswith("``", i):
                buf.append("`")
                i += 2
                continue
            out.append(Token("string", "".join(buf), start))
            return i + 1
        buf.append(source[i])
        i += 1


def number_value(source: str, tok: Token) -> int | float:
    text = tok.value.replace("_", "")
    low = text.lower()
    try:
        if low.startswith(("0x", "0o", "0b")):
            value = int(text[2:], {"x": 16, "o": 8, "b": 2}[low[1]])
        elif "." in low or "e" in low:
            return float(text)
        else:
            value = int(text, 10)
    except ValueError:
        raise syntax_error(source, tok.pos, f"invalid number literal {tok.value!r}") from None
    if value >= 2**63:
        raise syntax_error(source, tok.pos, f"integer literal {tok.value} overflows int64")
    return value
