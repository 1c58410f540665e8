"""Fast construction of the frozen, slotted dataclasses the hot path returns by the dozen.

A frozen dataclass's ``__init__`` sets every field through ``object.__setattr__``: a slot
wrapper called with a fresh argument tuple, ~1,600 CPU instructions per field. A
``Message`` has 22 fields: ~36,000 instructions to build one, more than SQLite spends
claiming it (callgrind, issue 29). ``constructor(cls)`` returns a class with the same
fields and the same slot layout but a plain ``__init__`` (one ``STORE_ATTR`` per field),
whose ``__post_init__`` turns the new object into a ``cls`` by ``__class__`` assignment --
which CPython allows only between layouts it checks are identical, so a drift between the
two classes fails at the first call, never silently. The result IS a ``cls`` (``type()``,
equality, ``replace``, pickling, hashing all as built by ``cls(...)``): ~6,600
instructions for a Message.

Use: ``make_message = constructor(Message)``, then ``make_message(*every field, in
order)`` -- positional, every field given (no defaults, no ``__post_init__`` of ``cls``
runs; none of the classes it is used for has one).

The one loop that builds most of them (a claim's, rows.py ``receive_message``) skips even
that call: ``m = object.__new__(make_message)``, one plain store per field, then
``m.__class__ = Message`` (~60 bytecodes and no Python call, where the constructor's
call passes 22 arguments through two frames). Such a builder must store EVERY field (a
slot left empty raises AttributeError on read): its test compares it field by field with
the constructor's result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def constructor(cls: type[T]) -> Callable[..., T]:
    """A positional constructor of the frozen slotted dataclass ``cls`` (module docstring)."""
    if not (dataclasses.is_dataclass(cls) and hasattr(cls, "__slots__")):
        raise TypeError(f"{cls.__name__} is not a slotted dataclass")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__ this constructor would skip")

    def become(self: Any) -> None:
        self.__class__ = cls

    parts = dataclasses.make_dataclass(
        f"_{cls.__name__}Parts",
        [f.name for f in dataclasses.fields(cls)],
        namespace={"__post_init__": become},
        slots=True,
        eq=False,
        repr=False,
        match_args=False,
    )
    if getattr(parts, "__slots__", None) != getattr(cls, "__slots__", ()):
        raise TypeError(f"{cls.__name__}: slot layout differs from its fields' order")
    return parts
