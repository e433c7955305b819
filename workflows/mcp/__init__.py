"""MCP servers: their tools join a session's as ``mcp__<server>__<tool>``.

Modules (this package imports none of them, nor the MCP SDK: the record's models import
:mod:`~workflows.models.mcp` and must stay light):

* :mod:`~workflows.models.mcp`: a server's configuration (Claude Code's entries, ``${VAR}``), the record's
  ``McpServer`` and ``McpToolDef``;
* :mod:`~workflows.mcp.sources`: every place a server is configured, scopes, ``.mcp.json`` approval;
* :mod:`~workflows.mcp.trusted`: an ``.mcp.json`` server held to the entry that was trusted;
* :mod:`~workflows.mcp.settings`: the settings files' MCP keys;
* :mod:`~workflows.mcp.scopes`: the files ``mainsail mcp add`` and ``remove`` change;
* :mod:`~workflows.mcp.connection` and :mod:`~workflows.mcp.pool`: SDK clients on the process's MCP loop,
  one per workspace and resolved server, shared by sessions, started on first use, started again after a
  crash, stopped when idle;
* :mod:`~workflows.mcp.calls`: discovery and tool calls from a step;
* :mod:`~workflows.mcp.tools` and :mod:`~workflows.mcp.catalog`: ``McpTool`` and a session's tool list;
* :mod:`~workflows.mcp.commits`: the engine's MCP events (discovery before the prompt);
* :mod:`~workflows.mcp.client`: servers in an Agent SDK client's process, listed and called through its
  connection (cli/headless/sdk_mcp.py).
"""
