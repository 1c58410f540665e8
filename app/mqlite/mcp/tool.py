"""One MCP tool: the wire route it forwards to and what an agent is told about it.

Everything a tool needs besides its name, its words and its effect is derived from the
route's one declaration: the input schema from the request Struct (``schema``), the
credential it needs from ``Route.permission``, whether a repeat is harmless from the
call table's retry class (``mqlite.sdk.call.RETRY``), the request from the strict wire
decoder (so a bad argument gets the broker's own words, before anything is sent).

A tool may reshape the wire request, declaratively: ``fields`` offers a subset of the
request's fields, ``one`` offers one item of an array field as top-level arguments,
``rename`` offers a field under another name (the original tool's), ``narrow`` lays
tighter bounds or words over an argument, ``extra`` adds tool-only arguments that
``prepare`` consumes (choosing the route too), and ``finish`` turns the decoded response
into the result (default: the wire's JSON).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mqlite import wire
from mqlite.sdk import calls
from mqlite.sdk.call import RETRY

from . import convert
from . import schema as sch

Arguments = dict[str, Any]
Prepare = Callable[[Arguments], tuple[wire.Route[Any, Any], Arguments]]
Finish = Callable[[Any], Any]


class Effect(enum.Enum):
    """What a call does to the broker: the tool annotations' read-only/destructive hints."""

    READ = "read"  # changes nothing
    WRITE = "write"  # changes state, recoverably (a lock, a send, a setting)
    DESTRUCTIVE = "destructive"  # deletes or revokes something for good


@dataclass(frozen=True, eq=False)
class Tool:
    """A tool of ``mqlite-mcp``: ``route`` is the RPC it forwards to, ``also`` the other
    routes ``prepare`` may pick instead (send → Schedule)."""

    name: str
    route: wire.Route[Any, Any]
    effect: Effect
    description: str
    fields: tuple[str, ...] = ()
    one: str = ""
    extra: Mapping[str, sch.Schema] = field(default_factory=dict)
    rename: Mapping[str, str] = field(default_factory=dict)  # argument -> request field
    narrow: Mapping[str, sch.Schema] = field(default_factory=dict)
    prepare: Prepare | None = None
    finish: Finish | None = None
    also: tuple[wire.Route[Any, Any], ...] = ()
    repeatable: bool | None = None  # None = the route's retry class says

    @property
    def routes(self) -> tuple[wire.Route[Any, Any], ...]:
        return (self.route, *self.also)

    @cached_property
    def wire_schema(self) -> sch.Schema:
        """The request Struct's schema (what ``convert.to_wire`` walks)."""
        return sch.wire_schema(self.route.request)

    @cached_property
    def _item_wire_schema(self) -> sch.Schema:
        return dict(self.wire_schema["properties"][self.one]["items"]) if self.one else {}

    @cached_property
    def input_schema(self) -> sch.Schema:
        """What ``tools/list`` shows: the agent's view of the request Struct, reshaped."""
        offered = sch.agent_schema(self.wire_schema)
        if self.fields:
            offered = sch.keep(offered, self.fields)
        if self.one:
            offered = sch.flatten(offered, self.one)
        if self.rename:
            offered = sch.renamed(offered, self.rename)
        if self.narrow:
            offered = sch.narrowed(offered, self.narrow)
        for name, prop in self.extra.items():
            offered = sch.with_property(offered, name, prop)
        return offered

    @property
    def full_description(self) -> str:
        """The authored words plus what the route declares (the credential it needs)."""
        permission = str(self.route.permission)
        if permission == "manage":
            needs = "Needs an administrator credential (`manage`)."
        elif permission == "monitor":
            needs = "Needs a monitor credential (read-only) or an administrator one (`manage`)."
        elif permission in ("send", "listen"):
            needs = f"Needs a credential with `{permission}` (or `manage`)."
        else:
            needs = f"Needs a credential with `{permission}`."
        return f"{self.description} {needs}"

    @property
    def read_only(self) -> bool:
        return self.effect is Effect.READ

    @property
    def destructive(self) -> bool:
        return self.effect is Effect.DESTRUCTIVE

    @property
    def idempotent(self) -> bool:
        """A repeat of the same call has no further effect: the call table's SAFE class."""
        if self.repeatable is not None:
            return self.repeatable
        assert calls.STAND_INS, "importing the call table declares every retry class"
        return self.read_only or RETRY[self.route.name]

    def request(self, arguments: Arguments) -> tuple[wire.Route[Any, Any], Any]:
        """The route and decoded request Struct for validated ``arguments``; a wrong value
        is ``InvalidArgument`` in the broker's words (the same strict decoder)."""
        route = self.route
        if self.rename:
            arguments = convert.renamed(arguments, self.rename)
        if self.prepare is not None:
            route, arguments = self.prepare(dict(arguments))
        if self.one:
            arguments = convert.nest(arguments, self.one, self._item_wire_schema)
        body = wire.dumps(convert.to_wire(self.wire_schema, arguments))
        return route, wire.decode_request(route, body)

    def result(self, response: Any) -> Any:
        return self.finish(response) if self.finish is not None else convert.result_json(response)
