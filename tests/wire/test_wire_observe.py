"""The Observe wire shape is the engine's observation, field for field (the engine may not
import the wire, so the two are declared apart and pinned together here), and the SDK's
consistency check refuses what cannot be a real observation."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import msgspec
import pytest

from mqlite import errors, wire
from mqlite.engine import Engine
from mqlite.engine import observation as o


def _fields(tp: Any) -> Any:
    """A comparable tree: {field: subtree} for dataclasses and Structs, else a kind."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in (tuple, typing.Union, types.UnionType) and args:
        return _fields(args[0])
    if typing.get_origin(tp) is typing.Annotated:
        return _fields(args[0])
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return {f.name: _fields(hints[f.name]) for f in dataclasses.fields(tp)}
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        hints = typing.get_type_hints(tp, include_extras=True)
        return {name: _fields(hints[name]) for name in tp.__struct_fields__}
    return "value"


def test_wire_mirrors_the_engine_observation() -> None:
    assert _fields(wire.ObserveResponse) == _fields(o.Observation)


def test_a_real_observation_round_trips() -> None:
    engine = Engine(":memory:")
    try:
        engine.create_queue("q")
        r = wire.ObserveResponse.of(engine.observe(), "manage").check()
    finally:
        engine.close()
    body = wire.encode_response(wire.OBSERVE, r)
    assert wire.decode_response(wire.OBSERVE, body).check() == r


Q = wire.observability.QueueGaugesJSON


@pytest.mark.parametrize(
    "change",
    [
        {"queues": ()},  # a failed collection cannot list healthy queues
        {"queue_count": 1},  # counts that contradict the rows
        {  # a total that is not the sum of the six counts
            "collection": wire.observability.CollectionJSON(state="available"),
            "queues": (Q("q", "queue", active=1, total=2),),
            "queue_count": 1,
        },
    ],
)
def test_inconsistent_observations_are_refused(change: dict[str, Any]) -> None:
    bad = msgspec.structs.replace(wire.ObserveResponse(), **change)
    with pytest.raises(errors.Internal):
        bad.check()


def test_non_cumulative_histograms_are_refused() -> None:
    o = wire.observability
    buckets = (o.LatencyBucketJSON(0.1, 5), o.LatencyBucketJSON(0.2, 3))
    handler = o.HandlerLatencyJSON("QueueService/Send", buckets, 5, 1.0)
    http = o.HttpJSON("available", (), (), (handler,))
    with pytest.raises(errors.Internal):
        msgspec.structs.replace(wire.ObserveResponse(), http=http).check()
    task = o.MaintenanceTaskJSON("locks", duration=o.HistogramJSON((0.1, 0.2), (1,), 1, 0.1))
    with pytest.raises(errors.Internal):  # bounds and counts of different lengths
        msgspec.structs.replace(wire.ObserveResponse(), maintenance=(task,)).check()
