"""Subscription filters: expr-lang v1.17.8 syntax, type-checked once, run per message.

Pipeline: lexer -> parser (expr's Pratt grammar, node-counted) -> checker (expr's static
rules, constant regexes via RE2) -> simpleeval-driven tree walk over our own node classes
with Go value semantics. The engine only needs the names exported here.
"""

from mqlite.filters.api import CompiledFilter, compile_filter, test_filter
from mqlite.filters.environment import FilterInput
from mqlite.filters.values import FilterRuntimeError

__all__ = ["CompiledFilter", "FilterInput", "FilterRuntimeError", "compile_filter", "test_filter"]
