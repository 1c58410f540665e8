"""Each drill's short variant (``--quick``) as ``make test`` runs it: a real broker, real
processes, real SIGKILLs; the report must be PASS with every check and figure named in
issue 13 (docs/operations.md "Drills")."""

from __future__ import annotations

from drills_support import checks, drill


def test_restore_drill_quick_passes_with_rto_rpo_and_every_check() -> None:
    status, report, progress = drill("restore", "--quick")
    assert status == 0, report or progress[-3000:]
    assert report["result"] == "PASS"
    names = checks(report)
    for name in (
        "online snapshot (mqlite backup) while writers run",
        "every table of the restored file equals the snapshot",
        "integrity_check of the restored database",
        "every message identity and body hash",
        "orphaned locks recovered: to active below the bound, to the DLQ at it",
        "settlement receipts replay",
        "receive attempts replay",
        "the outbox business table, each row with its message",
        "canary send / receive / complete on the restored broker",
        "a snapshot beside a stale WAL is refused",
        "a schema-token mismatch is refused without modifying the file",
        "an older schema (5) restores and migrates",
        "every write acknowledged before the snapshot started is in it",
    ):
        assert names.get(name) is True, name
    for figure in (
        "recovery_time_s",
        "snapshot_age_s_at_restore",
        "rpo_acknowledged_writes_not_in_snapshot",
    ):
        assert figure in report["figures"]
    assert "[restore" in progress  # progress lines while it ran


def test_crash_drill_quick_passes_embedded_and_http_kills() -> None:
    status, report, progress = drill("crash", "--quick", "--seed", "13")
    assert status == 0, report or progress[-3000:]
    names = checks(report)
    assert all(names.values()) and len(names) >= 11, names
    assert report["figures"]["embedded_kills"] == 10
    assert report["figures"]["http_sends_acknowledged"] > 0
    assert "kill point commit.before" in progress and "kill point batch.call" in progress
    assert "leases" in progress and "kill point checkpoint" in progress


def test_soak_drill_quick_passes_with_throughput_latency_and_rss() -> None:
    status, report, progress = drill("soak", "--quick", "--seed", "13")
    assert status == 0, report or progress[-3000:]
    assert all(checks(report).values())
    for figure in (
        "throughput_msg_per_s",
        "redelivery_rate",
        "latency_ms_p50",
        "latency_ms_p99",
        "broker_rss_mib_over_time",
    ):
        assert figure in report["figures"]
    assert "broker SIGKILL" in progress and "broker SIGTERM" in progress
