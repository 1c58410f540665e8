"""``mqlite-mcp``: the broker as agent tools over the Model Context Protocol.

A thin forwarder (original-behaviour §10): each tool call is ONE request to a broker
through the SDK's HTTP client (``mqlite.sdk.http``), never the engine or the server
(import-linter). Built on the official MCP Python SDK (the ``mqlite[mcp]`` extra), so
negotiation, schemas and errors follow the protocol.

- ``tools``: the tool table, one entry per tool, each naming the wire ``Route`` it
  forwards to; every route has a tool or a written reason why not (a test pins it);
- ``schema``: input schemas derived from the routes' request Structs (their ``Doc``s);
- ``convert``: tool arguments to wire requests, wire responses to structured results;
- ``overview``: the ``overview`` tool's few-KB summary of one Observe;
- ``forward``: one tool call = one round trip, broker errors as tool errors;
- ``server``: the MCP server over stdio; ``listener``: the same over streamable HTTP;
- ``settings`` / ``main``: configuration (``MQLITE_ENDPOINT``, ``MQLITE_TOKEN[_FILE]``),
  the startup probe, the ``mqlite-mcp`` command; ``logs``: JSON lines on stderr only.
"""
