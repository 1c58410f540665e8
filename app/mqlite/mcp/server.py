"""The MCP server: the tool table on the MCP SDK's low-level ``Server``.

The SDK owns the protocol (version negotiation, the handshake, JSON-RPC framing, ping);
this module only lists the tools and answers ``tools/call``. A broker error, or a bad
argument, is a tool result with ``isError`` true, the wire code and message in its text
and in ``structuredContent.error`` (the spec's "errors inside the result, so the model
can see and self-correct"); an unknown tool name is the protocol's invalid-params error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from mqlite import errors
from mqlite.version import VERSION

from .forward import Forwarder
from .lanes import Lanes
from .tool import Tool
from .tools import TOOLS

NAME = "mqlite-mcp"

INSTRUCTIONS = (
    "Tools of an mqlite message broker (queues, topics with filtered subscriptions, "
    "peek-lock, dead letters). overview shows the broker's health and every queue's "
    "backlog in a few KB (observe is the complete, much larger snapshot); consume with "
    "receive, then settle each message by its "
    "seq_number and lock_token (complete, abandon, reject, defer; renew to keep it): "
    "delivery is at-least-once. Errors carry the broker's code (e.g. lock_lost, "
    "permission_denied, queue_not_found) and message."
)


def listing(tool: Tool) -> types.Tool:
    """The ``tools/list`` entry of a tool (annotations: MCP's behaviour hints)."""
    return types.Tool(
        name=tool.name,
        description=tool.full_description,
        input_schema=tool.input_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive,
            idempotent_hint=tool.idempotent,
            open_world_hint=False,
        ),
    )


def error_result(exc: errors.MQLiteError) -> types.CallToolResult:
    error: dict[str, str] = {"code": exc.code, "message": exc.message}
    if exc.reason:
        error["reason"] = exc.reason
    return types.CallToolResult(
        content=[types.TextContent(text=f"{exc.code}: {exc.message}")],
        structured_content={"error": error},
        is_error=True,
    )


def ok_result(result: Any) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(result, ensure_ascii=False))],
        structured_content=result,
    )


def build(forwarder: Forwarder, tools: Sequence[Tool] = TOOLS) -> Server[Any]:
    """A low-level MCP server forwarding ``tools`` through ``forwarder``."""
    by_name = {t.name: t for t in tools}
    listed = [listing(t) for t in tools]
    lanes = Lanes()  # parked long polls and short calls on separate thread bounds

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name}")
        arguments = dict(params.arguments or {})
        limiter = lanes.limiter(tool.name, arguments)
        outcome = await anyio.to_thread.run_sync(forwarder.call, tool, arguments, limiter=limiter)
        if outcome.error is not None:
            return error_result(outcome.error)
        return ok_result(outcome.result)

    def input_schema(name: str) -> dict[str, Any] | None:
        tool = by_name.get(name)
        return tool.input_schema if tool is not None else None

    return Server(
        NAME,
        version=VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one MCP session on stdin/stdout until the host closes stdin."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def listing_json(tools: Sequence[Tool] = TOOLS) -> list[dict[str, Any]]:
    """``tools/list`` as JSON, as a client receives it (``tests/golden/mcp_tools.json``)."""
    return [listing(t).model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
