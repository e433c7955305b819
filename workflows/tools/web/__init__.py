"""The web tools: WebFetch and WebSearch (workflows/tools/web/fetch.py, search.py)."""

from workflows.tools.web import fetch, search  # noqa: F401  (registers)
from workflows.tools.web.access import WebAccess
from workflows.tools.web.fetch import checked_url

__all__ = ["WebAccess", "checked_url"]
