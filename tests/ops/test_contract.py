"""ops/metric-contract.json itself: the 32 canonical families of the spec, the 3 of
replication (issue #19) and the 2 of cron schedules (issue 33), counter and histogram
naming, and the vocabularies that must follow the code base."""

from __future__ import annotations

from ops_support import canonical_families, contract, deprecated_families

from mqlite import errors


def all_error_codes() -> set[str]:
    seen, todo = set(), [errors.MQLiteError]
    while todo:
        cls = todo.pop()
        seen.add(cls.code)
        todo.extend(cls.__subclasses__())
    return seen


def test_families_and_naming() -> None:
    fams = canonical_families()
    assert len(fams) == 39  # + the two push families (docs/push.md)
    for name, fam in fams.items():
        assert name.startswith("mqlite_"), name
        assert fam.type in {"gauge", "counter", "histogram"}, name
        assert name.endswith("_total") == (fam.type == "counter"), name
        if fam.type == "histogram":
            assert name.endswith("_seconds"), name
    for name, alias in deprecated_families().items():
        assert name not in fams and alias.name == name


def test_rpc_codes_follow_the_error_vocabulary() -> None:
    for name in ("mqlite_rpc_requests_total", "mqlite_rpc_request_duration_seconds_total"):
        vocab = canonical_families()[name].labels["code"]
        assert vocab is not None and set(vocab) == {"ok"} | all_error_codes(), name


def test_storage_families_share_their_labels() -> None:
    fams = canonical_families()
    ops = fams["mqlite_storage_operations_total"].labels
    assert fams["mqlite_storage_operation_duration_seconds"].labels == ops
    assert fams["mqlite_storage_retries_total"].labels == ops
    assert contract()["target_labels"] == ["job", "instance"]
