"""One tool call = one round trip to the broker, through the SDK's HTTP client.

``Forwarder.call`` drops ``null`` optional arguments (absent, as on the wire), validates
the arguments against the tool's input schema (so an agent reads a mistake in the names
it used, and a value out of the tool's bounds), builds the wire request with the broker's own
strict decoder, sends it with ``HttpClient.exchange`` (the route's retry class applies)
and shapes the answer. Every failure, the broker's or the arguments', comes back as an
``Outcome`` carrying an ``MQLiteError``: the MCP layer turns it into a tool error with
the wire code and message, never a protocol failure, so the model can read and correct.

Each call logs one JSON line on stderr: tool, route, outcome code, duration. Never the
arguments or the result: they hold message bodies, lock tokens and new key secrets.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mqlite import errors

from . import convert
from .tool import Tool

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

    from mqlite.sdk.http import HttpClient

log = logging.getLogger("mqlite.mcp")


@dataclass(frozen=True, slots=True)
class Outcome:
    """A tool call's result (JSON object) or its error (never both)."""

    result: Any = None
    error: errors.MQLiteError | None = None


class Forwarder:
    """Turns tool calls into broker round trips. Thread-safe (the MCP server runs each
    call on a worker thread, so a long-poll receive never holds its event loop)."""

    def __init__(self, client: HttpClient) -> None:
        self._client = client
        self._validators: dict[str, Validator] = {}

    def _validator(self, tool: Tool) -> Validator:
        found = self._validators.get(tool.name)
        if found is None:
            # Imported on first use: jsonschema costs startup time every session pays.
            from jsonschema import Draft202012Validator

            found = self._validators[tool.name] = Draft202012Validator(tool.input_schema)
        return found

    def check(self, tool: Tool, arguments: dict[str, Any]) -> None:
        """``InvalidArgument`` naming the first argument that breaks the input schema."""
        from jsonschema.exceptions import best_match

        error = best_match(self._validator(tool).iter_errors(arguments))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path)
            raise errors.InvalidArgument(f"{where}: {error.message}" if where else error.message)

    def call(self, tool: Tool, arguments: dict[str, Any]) -> Outcome:
        started = time.monotonic()
        route_name = tool.route.name
        try:
            arguments = convert.without_nulls(tool.input_schema, arguments)
            self.check(tool, arguments)
            route, request = tool.request(arguments)
            route_name = route.name
            wait_ms = int(getattr(request, "wait_time_ms", 0) or 0)
            response = self._client.exchange(route, request, wait_ms)
            outcome = Outcome(result=tool.result(response))
        except errors.MQLiteError as exc:
            outcome = Outcome(error=exc)
        except Exception as exc:  # a bug of ours: still a tool error, never a dead session
            log.exception("tool call failed", extra={"tool": tool.name, "route": route_name})
            outcome = Outcome(error=errors.Internal(f"mqlite-mcp failed: {type(exc).__name__}"))
        code = outcome.error.code if outcome.error is not None else "ok"
        log.log(
            logging.INFO if outcome.error is None else logging.WARNING,
            "tool call",
            extra={
                "tool": tool.name,
                "route": route_name,
                "code": code,
                "duration_ms": round((time.monotonic() - started) * 1000, 1),
            },
        )
        return outcome
