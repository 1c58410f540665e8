"""Micro-benchmark: µs per CompiledFilter.evaluate for doc examples (not run by pytest).

Run: .venv/bin/python tests/bench/filter_bench.py
"""

from __future__ import annotations

import timeit

from mqlite.filters import FilterInput, compile_filter

MSG = FilterInput(
    subject="orders.eu.new",
    properties={"tier": "gold", "region": "eu", "priority": "high"},
    content_type="application/json",
    body=b'{"amount": 150, "items": [1, 2, 3]}',
    enqueued_at_ms=1_750_000_000_000,
    visible_at_ms=1_750_000_000_000 + 2 * 86_400_000,
)
EXPRS = [
    'subject_parts[0] == "orders" && properties["tier"] == "gold"',
    'properties["tier"] == "gold" && properties["region"] == "eu"',
    '"priority" in properties && properties["priority"] == "high"',
    'subject startsWith "payment." and not (properties["test"] == "true")',
    "body_size < 4096",
    "visible_at - enqueued_at > days(1)",
    'len(subject_parts) >= 2 && subject_parts[1] == "eu"',
    '"amount" in body_json && body_json.amount > 100',
    'body_text contains "urgent"',
    "enqueued_at.Hour() >= 9 && enqueued_at.Hour() <= 21",
    'subject matches "^orders\\\\.(eu|us)\\\\."',
    'any(subject_parts, # == "eu")',
]


def main() -> None:
    for expr in EXPRS:
        f = compile_filter(expr)
        f.evaluate(MSG)
        n = 20_000
        best = min(timeit.repeat(lambda f=f: f.evaluate(MSG), number=n, repeat=5))
        print(f"{best / n * 1e6:7.2f} µs  {expr}")
    for expr in EXPRS[:1]:
        n = 2_000
        best = min(timeit.repeat(lambda e=expr: compile_filter(e), number=n, repeat=3))
        print(f"{best / n * 1e6:7.2f} µs  compile {expr}")


if __name__ == "__main__":
    main()
