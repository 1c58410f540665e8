"""A Python port of the original's Observe decoder (its SDK's ``DecodeObserveResponse``,
used by its CLI ``mqlite observe`` and MCP ``observe``), rule for rule from
``spec/observe-wire.md``. It is written from that file alone, not from our wire types, so
it checks our answer the way an original client would: every listed field present with
its type (zeros included), the closed vocabularies, the consistency rules; unknown extra
fields accepted. ``decode`` returns the parsed object or raises ``Refused`` naming the rule.
"""

from __future__ import annotations

import json
from typing import Any

MAX_BYTES = 32 << 20
BACKENDS = {"local", "memory", "remote"}
ACCESS = {"manage", "monitor", "anonymous", "embedded"}
ERROR_CODES = ("canceled", "closed", "busy", "connection", "full", "corrupt", "io", "other")
COLLECTION_ERRORS = {*ERROR_CODES, "outcome_unknown"}
EVENTS = (
    "enqueued", "scheduled", "deduplicated", "dedup_conflict", "delivered", "redelivered",
    "completed", "receive_deleted", "abandoned", "deferred", "rejected", "dead_lettered",
    "ttl_discarded", "retention_deleted", "purged", "canceled", "redriven", "lock_expired",
    "recovered", "activated",
)  # fmt: skip
BOUNDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20)
OPERATIONS = ("read", "write", "transaction")
DIMENSIONS = {
    (op, outcome, code)
    for op in OPERATIONS
    for outcome, code in (
        ("ok", ""),
        ("rejected", "application"),
        ("outcome_unknown", "outcome_unknown"),
        *(("error", c) for c in ERROR_CODES),
    )
}
TASKS = ("locks", "scheduled", "ttl", "dedup", "receipts", "retention", "reclaim")
RPCS = (
    *(
        "QueueService/" + m
        for m in (
            "Send", "Receive", "Complete", "CompleteBatch", "RenewBatch", "Abandon", "Reject",
            "Defer", "ReceiveDeferred", "Renew", "Schedule", "Cancel", "Peek", "Stats",
        )
    ),
    *(
        "AdminService/" + m
        for m in (
            "CreateQueue", "Subscribe", "ListQueues", "ListSubscriptions", "TestFilter",
            "Redrive", "Purge", "Status", "Observe",
        )
    ),
    *("AuthService/" + m for m in ("CreateKey", "ListKeys", "RevokeKey")),
)  # fmt: skip
CODES = (
    "ok", "unauthenticated", "permission_denied", "key_conflict", "not_found",
    "already_exists", "name_conflict", "group_required", "invalid_argument",
    "message_too_large", "outcome_unknown", "canceled", "internal", "lock_lost",
    "unimplemented",
)  # fmt: skip
AUTH_OUTCOMES = (
    "success", "missing", "invalid", "expired", "revoked", "permission_denied", "backend_error",
)  # fmt: skip


class Refused(ValueError):
    """The original's decoder would refuse the answer (the message names the rule)."""


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise Refused(what)


def _obj(parent: Any, key: str, where: str) -> dict[str, Any]:
    _need(isinstance(parent, dict) and key in parent, f"{where}.{key}: missing")
    value = parent[key]
    _need(isinstance(value, dict), f"{where}.{key}: want an object")
    return dict(value)


def _arr(parent: dict[str, Any], key: str, where: str) -> list[Any]:
    _need(key in parent, f"{where}.{key}: missing")
    value = parent[key]
    _need(isinstance(value, list), f"{where}.{key}: want an array")
    return list(value)


def _int(parent: dict[str, Any], key: str, where: str, *, minimum: int | None = 0) -> int:
    """A JSON integer (Go refuses 1.0 for an int64 field), bounded below."""
    _need(key in parent, f"{where}.{key}: missing")
    value = parent[key]
    _need(type(value) is int, f"{where}.{key}: want an integer, got {value!r}")
    _need(minimum is None or value >= minimum, f"{where}.{key}: below {minimum}")
    return int(value)


def _float(parent: dict[str, Any], key: str, where: str) -> float:
    _need(key in parent, f"{where}.{key}: missing")
    value = parent[key]
    _need(type(value) in (int, float), f"{where}.{key}: want a number, got {value!r}")
    _need(value >= 0, f"{where}.{key}: negative")
    return float(value)


def _bool(parent: dict[str, Any], key: str, where: str) -> bool:
    _need(key in parent and isinstance(parent[key], bool), f"{where}.{key}: want a bool")
    return bool(parent[key])


def _str(parent: dict[str, Any], key: str, where: str, *, among: Any = None) -> str:
    _need(key in parent and isinstance(parent[key], str), f"{where}.{key}: want a string")
    value: str = parent[key]
    _need(among is None or value in among, f"{where}.{key}: {value!r} not in {among}")
    return value


def _cumulative(bounds: list[Any], counts: list[Any], count: int, where: str) -> None:
    _need(len(bounds) == len(counts), f"{where}: bounds and counts differ in length")
    _need(tuple(bounds) == BOUNDS, f"{where}: bounds {bounds} are not the fixed ones")
    _need(all(type(c) is int and c >= 0 for c in counts), f"{where}: counts not integers")
    _need(counts == sorted(counts), f"{where}: counts not cumulative")
    _need(all(c <= count for c in counts), f"{where}: a bucket above count")


def _histogram(h: dict[str, Any], where: str) -> int:
    bounds = _arr(h, "bounds_seconds", where)
    counts = _arr(h, "bucket_counts", where)
    count = _int(h, "count", where)
    _float(h, "sum_seconds", where)
    _cumulative(bounds, counts, count, where)
    return count


def _runtime(doc: dict[str, Any]) -> None:
    rt = _obj(doc, "runtime", "")
    _need(_str(rt, "schema_version", "runtime") != "", "runtime.schema_version: empty")
    _float(rt, "ping_seconds", "runtime")
    _bool(rt, "read_available", "runtime")
    _int(rt, "db_size_bytes", "runtime")
    _bool(rt, "db_size_available", "runtime")


def _collection(doc: dict[str, Any]) -> str:
    c = _obj(doc, "collection", "")
    state = _str(c, "state", "collection", among={"available", "unavailable"})
    _int(c, "last_success_at_ms", "collection", minimum=None)
    _float(c, "duration_seconds", "collection")
    code = _str(c, "error_code", "collection")
    if state == "available":
        _need(code == "", "collection.error_code: set while available")
    else:
        _need(code in COLLECTION_ERRORS, f"collection.error_code: {code!r}")
    return state


def _queues(doc: dict[str, Any], state: str) -> list[str]:
    _need("queues" in doc, ".queues: missing")
    rows = doc["queues"]
    if state == "unavailable":
        _need(rows is None, ".queues: must be null while the collection is unavailable")
        rows = []
    else:
        _need(isinstance(rows, list), ".queues: want an array while available")
    names, kinds = [], []
    for i, q in enumerate(rows):
        where = f"queues[{i}]"
        _need(isinstance(q, dict), f"{where}: want an object")
        name = _str(q, "queue", where)
        _need(name != "", f"{where}.queue: empty")
        kinds.append(_str(q, "kind", where, among={"queue", "subscription"}))
        parts = [
            _int(q, f, where)
            for f in ("active", "locked", "deferred", "scheduled", "dead_lettered", "unexpected")
        ]
        _need(_int(q, "total", where) == sum(parts), f"{where}.total: not the sum of the six")
        _int(q, "oldest_message_age_ms", where)
        names.append(name)
    _need(len(set(names)) == len(names), ".queues: a queue listed twice")
    _need(_int(doc, "queue_count", "") == kinds.count("queue"), ".queue_count: mismatch")
    count = _int(doc, "subscription_count", "")
    _need(count == kinds.count("subscription"), ".subscription_count: mismatch")
    return names


def _messages(doc: dict[str, Any], queues: list[str]) -> None:
    rows = _arr(doc, "messages", "")
    keys = []
    for i, m in enumerate(rows):
        where = f"messages[{i}]"
        _need(isinstance(m, dict), f"{where}: want an object")
        keys.append((_str(m, "queue", where), _str(m, "event", where, among=EVENTS)))
        _int(m, "count", where)
    _need(keys == sorted(set(keys)), ".messages: not sorted by queue then event, or repeated")
    known = set(queues) | {q for q, _ in keys}
    for queue in known:
        have = {e for q, e in keys if q == queue}
        _need(have == set(EVENTS), f".messages: {queue!r} lacks {set(EVENTS) - have}")


def _storage(doc: dict[str, Any]) -> None:
    s = _obj(doc, "storage", "")
    seen = set()
    for i, op in enumerate(_arr(s, "operations", "storage")):
        where = f"storage.operations[{i}]"
        _need(isinstance(op, dict), f"{where}: want an object")
        key = (
            _str(op, "operation", where, among=OPERATIONS),
            _str(op, "outcome", where, among={"ok", "error", "rejected", "outcome_unknown"}),
            _str(op, "error_code", where),
        )
        _need(key not in seen, f"{where}: {key} repeated")
        seen.add(key)
        _histogram(_obj(op, "duration", where), where + ".duration")
        _int(op, "retries", where)
    _need(seen >= DIMENSIONS, f"storage.operations: missing {DIMENSIONS - seen}")
    pool = _obj(s, "pool", "storage")
    for f in ("max_open", "open", "in_use", "idle", "wait_count"):
        _int(pool, f, "storage.pool")
    _float(pool, "wait_duration_seconds", "storage.pool")


def _maintenance(doc: dict[str, Any]) -> None:
    local = doc.get("backend") == "local"
    tasks = []
    for i, t in enumerate(_arr(doc, "maintenance", "")):
        where = f"maintenance[{i}]"
        _need(isinstance(t, dict), f"{where}: want an object")
        task = _str(t, "task", where, among=TASKS)
        enabled = _bool(t, "enabled", where)
        _need(not (task == "reclaim" and enabled and not local), f"{where}: reclaim off-file")
        runs, failures = _int(t, "runs", where), _int(t, "failures", where)
        interrupted = _int(t, "interrupted", where)
        _need(failures <= runs, f"{where}: failures above runs")
        _need(interrupted <= runs - failures, f"{where}: interrupted above runs - failures")
        _int(t, "last_success_at_ms", where, minimum=None)
        count = _histogram(_obj(t, "duration", where), where + ".duration")
        _need(count == runs, f"{where}.duration.count: {count} != runs {runs}")
        tasks.append(task)
    _need(sorted(tasks) == sorted(TASKS), f".maintenance: tasks {tasks}")


def _filters(doc: dict[str, Any]) -> None:
    stages = []
    for i, f in enumerate(_arr(doc, "filters", "")):
        _need(isinstance(f, dict), f"filters[{i}]: want an object")
        stages.append(_str(f, "stage", f"filters[{i}]"))
        _int(f, "count", f"filters[{i}]")
    _need(sorted(stages) == ["compile", "evaluate"], f".filters: stages {stages}")


def _http(doc: dict[str, Any]) -> None:
    h = _obj(doc, "http", "")
    state = _str(h, "state", "http", among={"available", "not_applicable"})
    requests = _arr(h, "requests", "http")
    authentication = _arr(h, "authentication", "http")
    latency = _arr(h, "handler_latency", "http")
    if state == "not_applicable":
        _need(not (requests or authentication or latency), "http: rows while not_applicable")
        return
    pairs = set()
    for i, r in enumerate(requests):
        where = f"http.requests[{i}]"
        _need(isinstance(r, dict), f"{where}: want an object")
        pairs.add((_str(r, "rpc", where), _str(r, "code", where)))
        _int(r, "count", where)
        _float(r, "duration_seconds", where)
    missing = {(r, c) for r in RPCS for c in CODES} - pairs
    _need(not missing, f"http.requests: missing {sorted(missing)[:5]}…")
    outcomes = set()
    for i, a in enumerate(authentication):
        outcomes.add(_str(a, "outcome", f"http.authentication[{i}]"))
        _int(a, "count", f"http.authentication[{i}]")
    _need(set(AUTH_OUTCOMES) <= outcomes, f"http.authentication: {outcomes}")
    rpcs = []
    for i, row in enumerate(latency):
        where = f"http.handler_latency[{i}]"
        rpcs.append(_str(row, "rpc", where))
        count = _int(row, "count", where)
        _float(row, "sum_seconds", where)
        buckets = _arr(row, "buckets", where)
        _need(all(isinstance(b, dict) for b in buckets), f"{where}.buckets: want objects")
        bounds = [_float(b, "upper_bound_seconds", where) for b in buckets]
        counts = [_int(b, "count", where) for b in buckets]
        _cumulative(bounds, counts, count, where)
    _need(len(set(rpcs)) == len(rpcs), "http.handler_latency: an rpc listed twice")


def decode(body: bytes) -> dict[str, Any]:
    """The decoded answer, or ``Refused`` with the first rule it breaks."""
    _need(len(body) <= MAX_BYTES, "answer above 32 MiB")
    parsed = json.loads(body)
    _need(isinstance(parsed, dict), "want an object")
    doc: dict[str, Any] = parsed
    _int(doc, "sampled_at_ms", "")
    _int(doc, "started_at_ms", "")
    _str(doc, "backend", "", among=BACKENDS)
    _need(_str(doc, "version", "") != "", ".version: empty")
    _str(doc, "access", "", among=ACCESS)
    _runtime(doc)
    state = _collection(doc)
    queues = _queues(doc, state)
    _messages(doc, queues)
    _storage(doc)
    _maintenance(doc)
    _filters(doc)
    _http(doc)
    return doc
