"""The error envelope: the SDK re-raises exactly the class the server's engine raised."""

from __future__ import annotations

import json

import pytest

from mqlite import errors, wire

WIRE_CLASSES = sorted(errors.BY_CODE.items())


@pytest.mark.parametrize(("code", "cls"), WIRE_CLASSES, ids=[c for c, _ in WIRE_CLASSES])
def test_envelope_round_trip_for_every_wire_code(code: str, cls: type[errors.MQLiteError]) -> None:
    exc = cls("something precise")
    body = wire.error_body(exc)
    assert body.endswith(b"\n")
    extra = {"retry_after_s": 1} if cls is errors.ResourceExhausted else {}  # issue 35
    assert json.loads(body) == {"code": code, "message": "something precise", **extra}
    back = wire.error_from_response(exc.http_status, body)
    assert type(back) is cls
    assert back.message == "something precise"
    assert (back.code, back.http_status) == (code, cls.http_status)


@pytest.mark.parametrize(("code", "cls"), WIRE_CLASSES, ids=[c for c, _ in WIRE_CLASSES])
def test_default_messages_survive(code: str, cls: type[errors.MQLiteError]) -> None:
    back = wire.error_from_response(cls.http_status, wire.error_body(cls()))
    assert type(back) is cls and back.message == cls().message


def test_a_429_carries_its_retry_after_through_the_envelope() -> None:
    body = wire.error_body(errors.ResourceExhausted("slow down", retry_after_s=7))
    back = wire.error_from_response(429, body)
    assert type(back) is errors.ResourceExhausted and back.retry_after_s == 7
    for hostile in (b'"x"', b"-1", b"true", b"99999999"):
        forged = b'{"code":"resource_exhausted","message":"m","retry_after_s":' + hostile + b"}"
        back = wire.error_from_response(429, forged)
        assert back.retry_after_s == 1  # type: ignore[attr-defined]


def test_the_code_wins_over_the_status() -> None:
    body = wire.error_body(errors.LockLost())
    assert type(wire.error_from_response(500, body)) is errors.LockLost


def test_a_subclass_travels_as_its_code_plus_a_reason() -> None:
    body = wire.error_body(errors.QueueNotFound("queue 'q' not found"))
    assert json.loads(body) == {
        "code": "not_found",
        "message": "queue 'q' not found",
        "reason": "queue_not_found",
    }
    back = wire.error_from_response(404, body)
    assert type(back) is errors.QueueNotFound and back.message == "queue 'q' not found"


def test_an_envelope_without_a_reason_is_the_base_class_of_its_code() -> None:
    """The original broker sends no reason: whatever its English says, it is NotFound
    (no guessing from the message text)."""
    body = b'{"code":"not_found","message":"queue \'q\' not found"}'
    assert type(wire.error_from_response(404, body)) is errors.NotFound


@pytest.mark.parametrize(
    "body",
    [
        b'{"code":"lock_lost","message":"x","reason":"queue_not_found"}',
        b'{"code":"not_found","message":"x","reason":"a_newer_reason"}',
        b'{"code":"not_found","message":"x","reason":7}',
    ],
)
def test_a_reason_refines_only_its_own_code(body: bytes) -> None:
    back = wire.error_from_response(404, body)
    assert type(back) is errors.BY_CODE[json.loads(body)["code"]]


def test_only_subclasses_sharing_a_code_carry_a_reason() -> None:
    for cls in errors.BY_CODE.values():
        assert "reason" not in json.loads(wire.error_body(cls()))
    for reason, cls in errors.BY_REASON.items():
        assert cls.code in errors.BY_CODE and cls is not errors.BY_CODE[cls.code]
        assert json.loads(wire.error_body(cls()))["reason"] == reason


def test_in_process_only_errors_travel_as_internal() -> None:
    back = wire.error_from_response(500, wire.error_body(errors.DBLocked()))
    assert type(back) is errors.Internal
    assert "locked by another mqlite process" in back.message


def test_empty_message_takes_the_class_default() -> None:
    back = wire.error_from_response(409, b'{"code":"lock_lost","message":""}')
    assert type(back) is errors.LockLost and back.message == errors.LockLost().message


@pytest.mark.parametrize(("status", "cls"), sorted(wire.BY_STATUS.items()))
def test_fallback_by_status_without_an_envelope(status: int, cls: type[errors.MQLiteError]) -> None:
    back = wire.error_from_response(status, b"<html>Bad Gateway</html>")
    assert type(back) is cls
    assert back.message == f"HTTP {status}: <html>Bad Gateway</html>"


@pytest.mark.parametrize("status", [409, 418, 502, 504, 200])
def test_unmapped_status_without_code_is_internal(status: int) -> None:
    back = wire.error_from_response(status, b"")
    assert type(back) is errors.Internal and back.message == f"HTTP {status}"


def test_unknown_code_from_a_newer_broker_falls_back_by_status() -> None:
    body = b'{"code":"quota_exceeded","message":"slow down"}'
    back = wire.error_from_response(403, body)
    assert type(back) is errors.PermissionDenied and back.message == "slow down"


@pytest.mark.parametrize(
    "body",
    [b"[1]", b'{"code":5,"message":["x"]}', b"\xff\xfe", b"[" * 100_000, b'"just a string"'],
)
def test_garbage_bodies_never_raise(body: bytes) -> None:
    back = wire.error_from_response(400, body)
    assert type(back) is errors.InvalidArgument
    assert back.message.startswith("HTTP 400")


def test_long_bodies_are_clipped() -> None:
    back = wire.error_from_response(500, b"x" * 10_000)
    assert len(back.message) < 300
