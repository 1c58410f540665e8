"""Table-driven filter cases written from the language definition (expr v1.17.8 + concepts §7).

Each row: (expression, message name, expected) with expected one of MATCH, NO (runs and
does not match), COMPILE (InvalidArgument at compile) or RUNTIME (FilterRuntimeError).
"""

from __future__ import annotations

import pytest

from mqlite.errors import InvalidArgument
from mqlite.filters import FilterInput, FilterRuntimeError, compile_filter

T0 = 1_750_000_000_000  # 2025-06-15T15:06:40Z, a Sunday
MSGS = {
    "order": FilterInput(
        subject="orders.eu.new",
        properties={"tier": "gold", "region": "eu", "priority": "high", "test": "false"},
        content_type="application/json",
        body=b'{"amount": 150, "tier": "gold", "items": [{"sku": "a", "qty": 2}], "flag": true,'
        b' "nested": {"x": {"y": 1}}, "name": "urgent order"}',
        message_id="m-1",
        group_id="g-1",
        correlation_id="c-1",
        reply_to="replies",
        enqueued_at_ms=T0,
        visible_at_ms=T0,
    ),
    "small": FilterInput(
        subject="orders.us",
        properties={"tier": "silver", "region": "us"},
        content_type="application/json",
        body=b'{"amount": 50}',
        enqueued_at_ms=T0 + 12 * 3_600_000,  # 03:06 UTC on Monday
        visible_at_ms=T0 + 12 * 3_600_000,
    ),
    "payment": FilterInput(
        subject="payment.card",
        properties={"test": "true", "priority": "low"},
        content_type="text/plain",
        body=b"URGENT: pay now, urgent",
        enqueued_at_ms=T0,
        visible_at_ms=T0 + 2 * 86_400_000,  # delayed by two days
    ),
    "payment_live": FilterInput(
        subject="payment.card", properties={"test": "false"}, enqueued_at_ms=T0, visible_at_ms=T0
    ),
    "empty": FilterInput(),
    "big": FilterInput(subject="a..b", body=b"x" * 5000, properties={"b": "1", "A": "2", "a": "3"}),
    "untyped": FilterInput(body=b'{"amount": 101}'),
    "array_body": FilterInput(content_type="application/json", body=b"[1, 2, 3]"),
    "bad_json": FilterInput(content_type="application/json", body=b'{"amount": '),
    "nan_json": FilterInput(body=b'{"amount": NaN}'),
    "xml": FilterInput(content_type="application/xml", body=b'{"amount": 500}'),
    "jsonish": FilterInput(content_type="Application/Vnd.Foo+JSON", body=b'{"amount": 500}'),
}
MATCH, NO, COMPILE, RUNTIME = "match", "no", "compile", "runtime"

DOC_EXAMPLES = [  # concepts §6-§9, each with a matching and a non-matching message
    ('properties["tier"]=="gold"', "order", "small"),
    ('subject_parts[0] == "orders" && properties["tier"] == "gold"', "order", "small"),
    ("visible_at - enqueued_at > days(1)", "payment", "order"),
    ("enqueued_at.Hour() >= 9 && enqueued_at.Hour() <= 21", "order", "small"),
    ('subject_parts[0] == "orders"', "order", "payment"),
    ("body_size < 4096", "order", "big"),
    ('len(property_keys) > 0', "order", "empty"),
    ('"tier" in property_keys', "order", "payment"),
    ('body_text contains "urgent"', "payment", "small"),
    ("body_json.amount > 100", "order", "small"),
    ('body_json["tier"] == "gold"', "order", "small"),
    ('"amount" in body_json', "order", "empty"),
    ('"amount" in body_json && body_json.amount > 100', "order", "small"),
    ("visible_at - enqueued_at == hours(48)", "payment", "order"),
    ('visible_at - enqueued_at > duration("1d")', "payment", "order"),
    ('properties["tier"] == "gold" && properties["region"] == "eu"', "order", "small"),
    ('"priority" in properties && properties["priority"] == "high"', "order", "payment"),
    ('subject startsWith "payment." and not (properties["test"] == "true")', "payment_live",
     "payment"),
    ('len(subject_parts) >= 2 && subject_parts[1] == "eu"', "order", "small"),
    ('visible_at - enqueued_at > duration("1d12h")', "payment", "order"),
    ('visible_at - enqueued_at < duration("2w")', "payment", "empty_never"),
    ('visible_at - enqueued_at >= duration("90m")', "payment", "order"),
    ("visible_at - enqueued_at > days(30)", "never", "payment"),
]  # fmt: skip

CASES: list[tuple[str, str, str]] = [
    # empty filter
    ("", "empty", MATCH),
    ("   \n\t ", "order", MATCH),
    (" " * 5000, "order", MATCH),
    # literals
    ("true", "empty", MATCH),
    ("false", "empty", NO),
    ("nil", "empty", COMPILE),
    ("0x2A == 42 && 0o52 == 42 && 0b101010 == 42", "empty", MATCH),
    ("1_000 == 1000 && 08 == 8", "empty", MATCH),
    (".5 == 0.5 && 1e3 == 1000 && 1.5e1 == 15", "empty", MATCH),
    ("1.0 == 1", "empty", MATCH),
    ("9223372036854775808 > 0", "empty", COMPILE),
    ("1a == 1", "empty", COMPILE),
    ('"a\\tb" == "a" + "\\t" + "b"', "empty", MATCH),
    ("'it\\'s' == \"it's\"", "empty", MATCH),
    (
        '"\\u00e9" == "é" && "\\x41" == "A" && "\\101" == "A" && "\\u{1F600}" == "😀"',
        "empty",
        MATCH,
    ),
    ('`raw \\n` == "raw \\\\n"', "empty", MATCH),
    ('"\\q" == "q"', "empty", COMPILE),
    ('"unterminated', "empty", COMPILE),
    ('"a\nb" == "ab"', "empty", COMPILE),
    ("/* comment */ true // trailing", "empty", MATCH),
    ("/* only a comment */", "empty", COMPILE),
    ("/* unclosed", "empty", COMPILE),
    ("TRUE", "empty", COMPILE),
    # arithmetic
    ("1 + 2 * 3 == 7", "empty", MATCH),
    ("(1 + 2) * 3 == 9", "empty", MATCH),
    ("7 / 2 == 3.5", "empty", MATCH),
    ("-7 % 3 == -1", "empty", MATCH),
    ("7 % 0 == 1", "empty", COMPILE),
    ("body_size % 0 == 0", "empty", RUNTIME),
    ("7.5 % 2 == 1", "empty", COMPILE),
    ("body_json.amount % 2 == 0", "order", RUNTIME),
    ("2 ** 10 == 1024 && 2 ^ 3 == 8", "empty", MATCH),
    ("-2 ** 2 == -4", "empty", MATCH),
    ("2 ** 3 ** 2 == 512", "empty", MATCH),
    ("1 / 0 > 1e308", "empty", MATCH),
    ("9223372036854775807 + 1 < 0", "empty", MATCH),
    ('"a" + 1 == "a1"', "empty", COMPILE),
    ('"ab" * 2 == "abab"', "empty", COMPILE),
    ("[1] + [2] == [1, 2]", "empty", COMPILE),
    ("-subject == 1", "empty", COMPILE),
    ("2 ** 5000000 > 0", "empty", MATCH),
    # equality and ordering
    ("true == 1", "empty", COMPILE),
    ('body_size == "5"', "empty", COMPILE),
    ('subject_parts == "orders"', "empty", COMPILE),
    ("2 == 2 == true", "empty", MATCH),
    ("1 < 2 < 3", "empty", MATCH),
    ("1 < 3 < 2", "empty", NO),
    ('"a" < "b" && "B" < "a"', "empty", MATCH),
    ("body_json.flag == 1", "order", NO),
    ("body_json.flag == true", "order", MATCH),
    ("body_json.missing > 100", "order", RUNTIME),
    ("body_json.missing == nil", "order", MATCH),
    ("nil == nil", "empty", MATCH),
    ('{"a": 1} == {"a": 1.0}', "empty", NO),
    ('{"a": 1} == {"a": 1}', "empty", MATCH),
    ("[1, 2] == [1.0, 2.0]", "empty", MATCH),
    ('properties == {"a": "b"}', "empty", COMPILE),
    ("subject < 1", "empty", COMPILE),
    ("body_json.name < 5", "order", RUNTIME),
    # logic
    ("true && false || true", "empty", MATCH),
    ("true and not false", "empty", MATCH),
    ("!true == false", "empty", MATCH),
    ("not true == false", "empty", MATCH),
    ('not "x" in properties', "empty", COMPILE),
    ('not ("x" in properties)', "empty", MATCH),
    ("!subject", "empty", COMPILE),
    ("subject && true", "empty", COMPILE),
    ('"amount" in body_json && body_json.amount > 100', "empty", NO),
    ("false && body_json.missing > 1", "order", NO),
    ("true || body_json.missing > 1", "order", MATCH),
    ("body_json.missing && true", "order", RUNTIME),
    ("body_json.flag", "order", MATCH),
    ("body_json.missing", "order", NO),
    ("body_json.amount", "order", RUNTIME),
    # membership and string operators
    ('"tier" in properties', "order", MATCH),
    ('"tier" not in properties', "order", NO),
    ("1 in properties", "empty", COMPILE),
    ('"1" in [1, 2]', "empty", COMPILE),
    ("2 in [1, 2]", "empty", MATCH),
    ('"x" in subject', "empty", COMPILE),
    ('"eu" in subject_parts', "order", MATCH),
    ('"x" in body_json.missing', "order", NO),
    ('subject contains "eu"', "order", MATCH),
    ('subject not contains "eu"', "order", NO),
    ('subject startsWith "orders."', "order", MATCH),
    ('subject endsWith ".new"', "order", MATCH),
    ('subject not endsWith ".new"', "small", MATCH),
    ('body_json.missing contains "x"', "order", NO),
    ('body_json.amount contains "1"', "order", RUNTIME),
    ("body_size contains 1", "empty", COMPILE),
    ('subject matches "^orders\\\\.(eu|us)\\\\."', "order", MATCH),
    ('subject matches "^payment"', "order", NO),
    ('subject not matches "^payment"', "order", MATCH),
    ('subject matches "new$"', "order", MATCH),
    ('body_text matches "(?i)^urgent"', "payment", MATCH),
    ('subject matches "\\\\pL+"', "order", MATCH),
    ('subject matches "[[:alpha:]]+\\\\z"', "order", MATCH),
    ('subject matches "(?=x)"', "empty", COMPILE),
    ('subject matches "(a)\\\\1"', "empty", COMPILE),
    ('subject matches "\\\\Z"', "empty", COMPILE),
    ('subject matches "("', "empty", COMPILE),
    ("subject matches body_json.name", "order", NO),
    ('subject matches properties["pattern"] + "("', "order", RUNTIME),
    ('"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!" matches "(a+)+$"', "empty", NO),
    # ranges, indexing, slicing, member access
    ("1..3 == [1, 2, 3]", "empty", MATCH),
    ("len(1..2000000) > 0", "empty", RUNTIME),
    ('subject_parts[-1] == "new"', "order", MATCH),
    ('subject_parts[3] == "x"', "order", RUNTIME),
    ('subject_parts[1.5] == "x"', "order", COMPILE),
    ('subject[0] == "o"', "order", COMPILE),
    ('subject[0:6] == "orders"', "order", MATCH),
    ('subject[:6] == "orders" && subject[7:] == "eu.new" && subject[:] == subject', "order", MATCH),
    ('subject[-3:] == "new"', "order", MATCH),
    ('"héllo"[0:3] == "hé"', "empty", MATCH),
    ('subject_parts[1:] == ["eu", "new"]', "order", MATCH),
    ("subject_parts[5:9] == []", "order", MATCH),
    ("subject_parts == []", "empty", MATCH),
    ('subject_parts == ["a", "", "b"]', "big", MATCH),
    ('properties.tier == "gold"', "order", MATCH),
    ('properties["nope"] == ""', "order", MATCH),
    ('body_json.items[0].sku == "a"', "order", MATCH),
    ("body_json.nested.x.y == 1", "order", MATCH),
    ("body_json.nested.z.y == 1", "order", RUNTIME),
    ("body_json?.nested?.z?.y == nil", "order", MATCH),
    ("body_json.nested?.z.y == nil", "order", RUNTIME),
    ("body_json.items?.[0]?.qty == 2", "order", MATCH),
    ('(body_json.missing ?? "d") == "d"', "order", MATCH),
    ('body_json.missing ?? "d" == "d"', "order", COMPILE),
    ('(properties["x"] ?? "d") == ""', "order", MATCH),
    ('properties["x"] ?? "d"', "order", COMPILE),
    ("body_json.items == nil", "order", NO),
    ("subject.foo == 1", "order", COMPILE),
    ("subject.__class__ == 1", "order", COMPILE),
    ("body_json.items.__class__ == nil", "order", RUNTIME),
    ("body_json.keys == nil && body_json.__class__ == nil", "order", MATCH),
    ('properties.__class__ == ""', "order", MATCH),
    # ternary and conditionals
    ('len(subject_parts) > 1 ? subject_parts[1] == "eu" : false', "order", MATCH),
    ('len(subject_parts) > 1 ? subject_parts[1] == "eu" : false', "empty", NO),
    ("subject ? true : false", "empty", COMPILE),
    ("true ? false : true ? true : true", "empty", NO),
    ("body_json.missing ? true : false", "order", RUNTIME),
    ('if subject == "" { true } else { false }', "empty", MATCH),
    ('if subject == "x" { true } else if body_size == 0 { true } else { false }', "empty", MATCH),
    # let, sequences, pipes
    ('let p = subject_parts; len(p) == 3 && p[2] == "new"', "order", MATCH),
    ("let x = 1; let y = x + 1; y == 2", "empty", MATCH),
    ("let subject = 1; true", "empty", COMPILE),
    ("let x = 1; let x = 2; true", "empty", COMPILE),
    ("1; 2; true", "empty", MATCH),
    ("true;", "empty", MATCH),
    ('subject | upper() == "ORDERS.EU.NEW"', "order", MATCH),
    ('subject | split(".") | len() == 3', "order", MATCH),
    ("subject_parts | all(len(#) > 1)", "order", MATCH),
    # closures
    ('any(subject_parts, # == "eu")', "order", MATCH),
    ("all(subject_parts, len(#) > 1)", "order", MATCH),
    ("all(subject_parts, len(#) > 1)", "big", NO),
    ('none(subject_parts, # == "us")', "order", MATCH),
    ('one(subject_parts, # startsWith "e")', "order", MATCH),
    ("all([], false) && !any([], true)", "empty", MATCH),
    ('filter(subject_parts, len(#) == 2) == ["eu"]', "order", MATCH),
    ('map(subject_parts, upper(#)) == ["ORDERS", "EU", "NEW"]', "order", MATCH),
    ("map([10, 20], #index) == [0, 1]", "empty", MATCH),
    ("count(subject_parts, len(#) > 2) == 2", "order", MATCH),
    ("count([true, false, true]) == 2", "empty", MATCH),
    ("sum([1, 2, 3]) == 6 && sum([1, 2], # * 10) == 30", "empty", MATCH),
    ('find(subject_parts, # startsWith "n") == "new"', "order", MATCH),
    ('findIndex(subject_parts, # == "eu") == 1', "order", MATCH),
    ('findLastIndex(subject_parts, # == "zz") == -1', "order", MATCH),
    ("findLast([1, 2, 3], # < 3) == 2", "empty", MATCH),
    ('any(body_json.items, .sku == "a" && .qty > 1)', "order", MATCH),
    ('any(body_json.items, #.sku == "b")', "order", NO),
    ("reduce(1..4, #acc + #) == 10 && reduce([1, 2], #acc + #, 10) == 13", "empty", MATCH),
    ('sortBy([3, 1, 2], #) == [1, 2, 3] && sortBy([3, 1, 2], #, "desc")[0] == 3', "empty", MATCH),
    ("groupBy([1, 2, 3], # % 2 == 0)[true] == [2]", "empty", MATCH),
    ("any(subject_parts, len(#))", "order", COMPILE),
    ("all(subject, true)", "order", COMPILE),
    ("all(body_json.missing, true)", "order", RUNTIME),
    ("any(body_json.items, #)", "order", RUNTIME),
    ("# > 1", "empty", COMPILE),
    ("all([1], #index > 0)", "empty", COMPILE),
    ("all([[1, 2]], all(#, # > 0))", "empty", MATCH),
    ("all(1..20000, all(1..20000, true))", "empty", RUNTIME),
    ("any([1], { # > 0 })", "empty", MATCH),
    ("any([1], # > 0;)", "empty", COMPILE),
    # builtins
    ('len(subject) == 13 && len("héllo") == 5', "order", MATCH),
    ("len(body_size) == 1", "empty", COMPILE),
    ('upper(body_size) == "1"', "empty", COMPILE),
    ('upper("aß") == "Aß" && lower("ABC") == "abc"', "empty", MATCH),
    (
        'trim("  x ") == "x" && trimPrefix("ab", "a") == "b" && trimSuffix("ab", "b") == "a"',
        "empty",
        MATCH,
    ),
    (
        'split("a,b,c", ",") == ["a", "b", "c"] && split("abc", "") == ["a", "b", "c"]',
        "empty",
        MATCH,
    ),
    (
        'split("a,b,c", ",", 2) == ["a", "b,c"] && splitAfter("a,b", ",") == ["a,", "b"]',
        "empty",
        MATCH,
    ),
    ('replace("aaa", "a", "b") == "bbb" && repeat("ab", 2) == "abab"', "empty", MATCH),
    ('join(["a", "b"], "-") == "a-b" && indexOf("héllo", "l") == 3', "empty", MATCH),
    (
        'lastIndexOf("abab", "b") == 3 && hasPrefix("abc", "a") && hasSuffix("abc", "c")',
        "empty",
        MATCH,
    ),
    ('repeat("x", -1) == ""', "empty", RUNTIME),
    ("abs(-3) == 3 && ceil(1.2) == 2 && floor(1.8) == 1 && round(2.5) == 3", "empty", MATCH),
    ('int("42") == 42 && int("+42") == 42 && int(3.9) == 3 && float("1.5") == 1.5', "empty", MATCH),
    ('int(" 42") == 42', "empty", RUNTIME),
    ('string(1.0) == "1" && string(true) == "true" && string(nil) == "<nil>"', "empty", MATCH),
    ('string([1, 2]) == "[1 2]" && string(1e6) == "1e+06" && string(0.5) == "0.5"', "empty", MATCH),
    (
        'type(1) == "int" && type(1.5) == "float" && type("") == "string" && type(nil) == "nil"',
        "empty",
        MATCH,
    ),
    ('type(body_json.amount) == "float" && type(body_json) == "map"', "order", MATCH),
    ('type(enqueued_at) == "time.Time" && type([]) == "array"', "empty", MATCH),
    (
        "max(1, 5, 3) == 5 && min([4, 2]) == 2 && mean([1, 2, 3]) == 2 && median([1, 3]) == 2",
        "empty",
        MATCH,
    ),
    (
        'fromJSON("{\\"a\\": 1}").a == 1 && toBase64("hi") == "aGk=" && fromBase64("aGk=") == "hi"',
        "empty",
        MATCH,
    ),
    ('fromJSON("{") == nil', "empty", RUNTIME),
    ('first(subject_parts) == "orders" && last(subject_parts) == "new"', "order", MATCH),
    ("first([]) == nil", "empty", MATCH),
    ('get(subject_parts, 9) == nil && get(properties, "x") == nil', "order", MATCH),
    (
        "take([1, 2, 3], 2) == [1, 2] && reverse([1, 2]) == [2, 1] && uniq([1, 1, 2]) == [1, 2]",
        "empty",
        MATCH,
    ),
    ('keys({"b": 1, "a": 2}) == ["a", "b"] && values({"a": 1}) == [1]', "empty", MATCH),
    ("flatten([[1], [2, [3]]]) == [1, 2, 3] && concat([1], [2]) == [1, 2]", "empty", MATCH),
    ('sort([3, 1, 2]) == [1, 2, 3] && sort(["b", "a"], "desc") == ["b", "a"]', "empty", MATCH),
    (
        "bitand(6, 3) == 2 && bitor(4, 1) == 5 && bitxor(3, 1) == 2 && bitnot(0) == -1",
        "empty",
        MATCH,
    ),
    ("bitshl(1, 3) == 8 && bitshr(8, 3) == 1", "empty", MATCH),
    ("bitshl(1, -1) == 0", "empty", RUNTIME),
    ("now() == enqueued_at", "order", MATCH),
    ('date("2025-06-15") < enqueued_at', "order", MATCH),
    ('date("2025-06-15T15:06:40Z") == enqueued_at', "order", MATCH),
    ('date("15/06/2025", "02/01/2006").Day() == 15', "empty", MATCH),
    ('date("not a date") == enqueued_at', "empty", RUNTIME),
    ("unknownFn(1)", "empty", COMPILE),
    # environment
    ('message_id == "m-1" && group_id == "g-1" && correlation_id == "c-1"', "order", MATCH),
    ('reply_to == "replies" && content_type == "application/json"', "order", MATCH),
    ('property_keys == ["A", "a", "b"]', "big", MATCH),
    ("body_size == 5000", "big", MATCH),
    ('Subject == "x"', "empty", COMPILE),
    ("body_json == {}", "empty", MATCH),
    ("body_json.amount > 100", "untyped", MATCH),
    ("body_json == {}", "array_body", MATCH),
    ("body_json == {}", "bad_json", MATCH),
    ("body_json == {}", "nan_json", MATCH),
    ("body_json == {}", "xml", MATCH),
    ("body_json.amount == 500", "jsonish", MATCH),
    ('body_text == ""', "empty", MATCH),
    ('$env.subject == "orders.eu.new"', "order", MATCH),
    ("$env.body_json == {}", "order", MATCH),
    ("$env.nope == 1", "order", COMPILE),
    # time and durations
    ("enqueued_at == visible_at", "order", MATCH),
    (
        "enqueued_at.Year() == 2025 && int(enqueued_at.Month()) == 6 && enqueued_at.Day() == 15",
        "order",
        MATCH,
    ),
    (
        "enqueued_at.Minute() == 6 && enqueued_at.Second() == 40 && enqueued_at.YearDay() == 166",
        "order",
        MATCH,
    ),
    (
        'int(enqueued_at.Weekday()) == 0 && enqueued_at.Weekday().String() == "Sunday"',
        "order",
        MATCH,
    ),
    ("enqueued_at.Month() == 6", "order", COMPILE),
    ("enqueued_at.Hour == 10", "order", COMPILE),
    ("enqueued_at.Nope()", "order", COMPILE),
    ('subject.startswith("o")', "order", COMPILE),
    (
        "enqueued_at.UnixMilli() == 1750000000000 && enqueued_at.Unix() == 1750000000",
        "order",
        MATCH,
    ),
    ('enqueued_at.Format("2006-01-02 15:04") == "2025-06-15 15:06"', "order", MATCH),
    ('enqueued_at.Format("Mon Jan _2 3:04PM") == "Sun Jun 15 3:06PM"', "order", MATCH),
    ("enqueued_at.Before(visible_at) && visible_at.After(enqueued_at)", "payment", MATCH),
    (
        "visible_at.Sub(enqueued_at) == days(2) && enqueued_at.Add(days(2)) == visible_at",
        "payment",
        MATCH,
    ),
    (
        "enqueued_at + days(2) == visible_at && visible_at - days(2) == enqueued_at",
        "payment",
        MATCH,
    ),
    ("(visible_at - enqueued_at).Hours() == 48", "payment", MATCH),
    ('string(visible_at - enqueued_at) == "48h0m0s"', "payment", MATCH),
    ('(visible_at - enqueued_at).String() == "48h0m0s"', "payment", MATCH),
    ('enqueued_at.In(timezone("Europe/Paris")).Hour() == 17', "order", MATCH),
    ("hours(1) == minutes(60) && days(1) == hours(24) && weeks(1) == days(7)", "empty", MATCH),
    ("seconds(90) == minutes(1) + seconds(30)", "empty", MATCH),
    ('duration("1.5d") == hours(36) && duration("-1h") < seconds(0)', "empty", MATCH),
    ('duration("1h30m") == minutes(90) && duration("0") == seconds(0)', "empty", MATCH),
    ('duration("1y") > hours(1)', "empty", RUNTIME),
    ('duration("") > hours(1)', "empty", RUNTIME),
    ('duration("1 h") > hours(1)', "empty", RUNTIME),
    ("hours(1.5) > hours(1)", "empty", COMPILE),
    ('seconds("1") > hours(1)', "empty", COMPILE),
    ("seconds(body_json.amount) == minutes(2) + seconds(30)", "order", MATCH),
    ("seconds(body_json.name) == seconds(0)", "order", MATCH),
    ("hours(1) == 3600", "empty", COMPILE),
    ("hours(1) / minutes(1) == 60", "empty", COMPILE),
    ("hours(1) * 2 == hours(2) && 2 * hours(1) == hours(2)", "empty", MATCH),
    ("hours(1) * 1.5 > hours(1)", "empty", RUNTIME),
    ("enqueued_at + enqueued_at > enqueued_at", "empty", COMPILE),
    ("enqueued_at > 5", "empty", COMPILE),
    # syntax errors
    ("(true", "empty", COMPILE),
    ("true)", "empty", COMPILE),
    ("1 +", "empty", COMPILE),
    ("a & b", "empty", COMPILE),
    ("subject ==", "empty", COMPILE),
    ("true not false", "empty", COMPILE),
    ("[1, 2,] == [1, 2] && {a: 1,}.a == 1", "empty", MATCH),
    ('{a: 1, "b c": 2, 3: 4, ("d" + "e"): 5}.de == 5', "empty", MATCH),
    ("body_size + 1", "empty", COMPILE),
    ("@", "empty", COMPILE),
    ("::len(subject) == 0", "empty", MATCH),
]


def _run(expr: str, msg: str) -> str:
    try:
        compiled = compile_filter(expr)
    except InvalidArgument:
        return COMPILE
    try:
        return MATCH if compiled.evaluate(MSGS[msg]) else NO
    except FilterRuntimeError:
        return RUNTIME


@pytest.mark.parametrize(("expr", "msg", "expected"), CASES, ids=[c[0][:60] for c in CASES])
def test_case(expr: str, msg: str, expected: str) -> None:
    assert _run(expr, msg) == expected


def _doc_rows() -> list[tuple[str, str, str]]:
    rows = []
    for expr, yes, no in DOC_EXAMPLES:
        if yes in MSGS:
            rows.append((expr, yes, MATCH))
        if no in MSGS:
            rows.append((expr, no, NO))
    return rows


@pytest.mark.parametrize(("expr", "msg", "expected"), _doc_rows())
def test_doc_example(expr: str, msg: str, expected: str) -> None:
    assert _run(expr, msg) == expected


def test_table_size() -> None:
    assert len(CASES) + len(_doc_rows()) >= 150
