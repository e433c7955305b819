"""The team server: ``mainsail serve``, an HTTP API (``/api``), live streams (Server-Sent Events), a web
console (``/``) and metrics (``/metrics``) in front of the same engine and store the CLI uses.

It sits beside ``cli/`` in the import direction (``cli/, server/ -> tasks/ -> workflows/``): every verb
it offers is an engine verb the CLI calls too, so a session approved in the browser is settled by
the same fenced commit as one approved at a terminal.
"""
