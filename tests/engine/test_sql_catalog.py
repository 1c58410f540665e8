"""Every ``*_SQL`` constant in the engine compiles against the real schema (EXPLAIN).

This catches typos and dead columns without a code generator: a statement that names a
column the schema lacks fails here, not in production.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sqlite3

import pytest

import mqlite.engine
from mqlite.engine import store

_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_NUMBERED = re.compile(r"\?(\d+)")


def all_sql_constants() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for info in pkgutil.iter_modules(mqlite.engine.__path__):
        module = importlib.import_module(f"mqlite.engine.{info.name}")
        for name, value in vars(module).items():
            if name.endswith("_SQL") and isinstance(value, str):
                found.append((f"{info.name}.{name}", value))
    return sorted(found)


def bind_nulls(sql: str) -> dict[str, None] | list[None]:
    named = _NAMED.findall(sql)
    if named:
        return dict.fromkeys(named)
    numbered = [int(n) for n in _NUMBERED.findall(sql)]
    count = max(numbered) if numbered else sql.count("?")
    return [None] * count


@pytest.fixture(scope="module")
def conn() -> sqlite3.Connection:
    c = sqlite3.connect(":memory:")
    for stmt in store.schema_statements():
        c.execute(stmt)
    return c


def test_the_catalog_is_not_empty() -> None:
    assert len(all_sql_constants()) >= 30


@pytest.mark.parametrize(("name", "sql"), all_sql_constants(), ids=lambda v: v if "." in v else "")
def test_every_sql_constant_compiles(conn: sqlite3.Connection, name: str, sql: str) -> None:
    conn.execute("EXPLAIN " + sql, bind_nulls(sql)).fetchall()
