"""Shape declarations agree with the Python values they build."""

from __future__ import annotations

from typing import Any

import pytest

from mqlite import wire
from mqlite.wire.openapi import _collect
from mqlite.wire.shape import Shape

SHAPES: dict[str, Shape[Any]] = {}
for _r in wire.ROUTES:
    _collect(_r.request, SHAPES)
    _collect(_r.response, SHAPES)


@pytest.mark.parametrize("shape", SHAPES.values(), ids=list(SHAPES))
def test_absent_fields_build_their_declared_default(shape: Shape[Any]) -> None:
    """Decoding ``{}`` then encoding leaves only the always-present fields: every optional
    field's declared default is exactly what the built value holds when it was absent."""
    value = shape.decoder(True)({})
    required = {f.key for f in shape.fields if f.required and f.attr is not None}
    assert set(shape.encode(value)) == required


@pytest.mark.parametrize("shape", SHAPES.values(), ids=list(SHAPES))
def test_field_keys_are_unique(shape: Shape[Any]) -> None:
    keys = [f.key for f in shape.fields]
    assert len(keys) == len(set(keys))


def test_shape_names_are_unique_per_shape() -> None:
    assert len({id(s) for s in SHAPES.values()}) == len(SHAPES)


def test_strict_and_lenient_decoders_are_compiled_once() -> None:
    shape = wire.SEND.request
    assert shape.decoder(False) is shape.decoder(False)
    assert shape.decoder(True) is shape.decoder(True)
    assert shape.decoder(True) is not shape.decoder(False)
