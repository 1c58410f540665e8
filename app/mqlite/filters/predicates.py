"""Predicate builtins (``all any none one filter map find* count sum groupBy sortBy reduce``).

They are the only loops a filter has, so each iteration is charged to the evaluator's
step budget (by the predicate's node count) and each produced element to its memory
budget: a filter over a large JSON array stays bounded instead of stalling a publish.
"""

from __future__ import annotations

from functools import cmp_to_key
from typing import TYPE_CHECKING, Any

from mqlite.filters import nodes as n
from mqlite.filters.ops import add, lt
from mqlite.filters.values import FilterRuntimeError, type_name

if TYPE_CHECKING:
    from mqlite.filters.runtime import Evaluator


def _truth(v: Any) -> bool:
    if type(v) is not bool:
        raise FilterRuntimeError(f"predicate should return boolean (got {type_name(v)})")
    return v


def run_predicate(ev: Evaluator, node: n.Builtin) -> Any:
    name, args = node.name, node.args
    coll = ev._eval(args[0])
    if type(coll) is not list:
        raise FilterRuntimeError(f"builtin {name} takes only array (got {type_name(coll)})")
    if len(args) == 1:  # count / sum without a predicate
        if name == "count":
            return sum(1 for x in coll if _truth(x))
        total: Any = 0
        for x in coll:
            total = add(total, x)
        return total
    pred = args[1]
    assert isinstance(pred, n.Predicate)
    body, cost = pred.body, max(pred.size, 1)
    frame: list[Any] = [None, 0, None]
    ev.frames.append(frame)

    def call(item: Any, index: int) -> Any:
        ev.step(cost)
        frame[0], frame[1] = item, index
        return ev._eval(body)

    try:
        return _dispatch(ev, name, args, coll, call, frame)
    finally:
        ev.frames.pop()


def _dispatch(ev: Evaluator, name: str, args: list[n.Node], coll: list[Any], call: Any,
              frame: list[Any]) -> Any:  # fmt: skip
    items = list(enumerate(coll))
    if name == "all":
        return all(_truth(call(x, i)) for i, x in items)
    if name == "any":
        return any(_truth(call(x, i)) for i, x in items)
    if name == "none":
        return not any(_truth(call(x, i)) for i, x in items)
    if name == "one":
        return sum(1 for i, x in items if _truth(call(x, i))) == 1
    if name == "count":
        return sum(1 for i, x in items if _truth(call(x, i)))
    if name == "filter":
        out = [x for i, x in items if _truth(call(x, i))]
        ev.charge(len(out))
        return out
    if name == "map":
        ev.charge(len(coll))
        return [call(x, i) for i, x in items]
    if name in ("find", "findIndex", "findLast", "findLastIndex"):
        order = reversed(items) if name.startswith("findLast") else items
        for i, x in order:
            if _truth(call(x, i)):
                return i if name.endswith("Index") else x
        return -1 if name.endswith("Index") else None
    if name == "sum":
        total: Any = 0
        for i, x in items:
            total = add(total, call(x, i))
        return total
    if name == "groupBy":
        groups: dict[Any, list[Any]] = {}
        for i, x in items:
            key = call(x, i)
            if isinstance(key, list | dict):
                raise FilterRuntimeError(f"cannot group by {type_name(key)}")
            groups.setdefault(key, []).append(x)
        ev.charge(len(coll))
        return groups
    if name == "sortBy":
        return _sort_by(ev, args, items, call)
    return _reduce(ev, args, coll, call, frame)


def _sort_by(ev: Evaluator, args: list[n.Node], items: list[tuple[int, Any]], call: Any) -> Any:
    order = ev._eval(args[2]) if len(args) > 2 else "asc"
    if order not in ("asc", "desc"):
        raise FilterRuntimeError(f"unknown order {order}, use asc or desc")
    keyed = [(call(x, i), x) for i, x in items]

    def cmp(a: tuple[Any, Any], b: tuple[Any, Any]) -> int:
        return -1 if lt(a[0], b[0]) else 1 if lt(b[0], a[0]) else 0

    keyed.sort(key=cmp_to_key(cmp), reverse=order == "desc")
    ev.charge(len(keyed))
    return [x for _, x in keyed]


def _reduce(ev: Evaluator, args: list[n.Node], coll: list[Any], call: Any,
            frame: list[Any]) -> Any:  # fmt: skip
    if len(args) > 2:
        acc, start = ev._eval(args[2]), 0
    elif coll:
        acc, start = coll[0], 1
    else:
        raise FilterRuntimeError("reduce of empty array with no initial value")
    for i in range(start, len(coll)):
        frame[2] = acc
        acc = call(coll[i], i)
    return acc
