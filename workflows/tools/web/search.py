"""WebSearch (Claude Code's tool: ``query``, ``allowed_domains``, ``blocked_domains``): the Messages API's
server-side web search, passed through.

The worker asks the session's model with only the ``web_search`` server tool; the API runs the
searches and answers with ``web_search_tool_result`` blocks and text. The tool result lists the links
found (title and URL) and the model's summary, as Claude Code's does, so they are in the transcript.
"""

from __future__ import annotations

import json

from pydantic import Field, model_validator

from workflows.exceptions import ToolError
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register

DESCRIPTION = """
- Allows Claude to search the web and use the results to inform responses
- Provides up-to-date information for current events and recent data
- Returns search result information formatted as search result blocks, including links as markdown hyperlinks
- Use this tool for accessing information beyond Claude's knowledge cutoff
- Searches are performed automatically within a single API call

CRITICAL REQUIREMENT - You MUST follow this:
  - After answering the user's question, you MUST include a "Sources:" section at the end of your response
  - In the Sources section, list all relevant URLs from the search results as markdown hyperlinks: [Title](URL)

Usage notes:
  - Domain filtering is supported to include or block specific websites
""".strip()


class WebSearchInput(ToolInput):
    query: str = Field(min_length=2, description="The search query to use")
    allowed_domains: list[str] | None = Field(default=None, description="Only include search results from these domains")
    blocked_domains: list[str] | None = Field(default=None, description="Never include search results from these domains")

    @model_validator(mode="after")
    def _one_filter(self):
        if self.allowed_domains and self.blocked_domains:
            raise ValueError("give allowed_domains or blocked_domains, not both")
        return self


def links_and_text(blocks: list[dict]) -> tuple[list[dict], list[str], str]:
    """The search results' links, the searches' error codes, and the model's text, from a reply's blocks."""
    links, errors, text = [], [], []
    for b in blocks:
        if b.get("type") == "web_search_tool_result":
            content = b.get("content")
            if isinstance(content, list):
                links += [{"title": hit.get("title", ""), "url": hit.get("url", "")} for hit in content
                          if isinstance(hit, dict) and hit.get("type") == "web_search_result"]
            elif isinstance(content, dict):
                errors.append(str(content.get("error_code") or "unknown_error"))
        elif b.get("type") == "text" and b.get("text"):
            text.append(b["text"])
    return links, errors, "".join(text).strip()


@register
class WebSearchTool(Tool):
    name = "WebSearch"
    description = DESCRIPTION
    input_model = WebSearchInput
    idempotent = True

    def summary(self, args: dict) -> str:
        q = args.get("query") if isinstance(args, dict) else None
        return q if isinstance(q, str) else ""

    def run(self, args: WebSearchInput, ctx: ToolContext) -> ToolOutput:
        if ctx.web is None:
            raise ToolError("WebSearch is not available here: it runs on a worker of a session.")
        answer = ctx.web.web_search(args.query, args.allowed_domains, args.blocked_domains)
        links, errors, text = links_and_text(answer.blocks)
        searches = sum(b.get("type") == "server_tool_use" for b in answer.blocks)
        if errors and not links:
            raise ToolError(f"Web search failed for {args.query!r}: {', '.join(errors)}.")
        body = (f'Web search results for query: "{args.query}"\n\nLinks: {json.dumps(links, ensure_ascii=False)}\n\n'
                + (text + "\n\n" if text else "")
                + "REMINDER: You MUST include the sources above in your response to the user using markdown "
                  "hyperlinks.")
        n = max(searches, 1)
        return ToolOutput(content=body, display=f"Did {n} search{'es' if n != 1 else ''} · {len(links)} results",
                          usage=answer.usage, model=answer.model, duration_ms=answer.duration_ms)


__all__ = ["WebSearchInput", "WebSearchTool", "links_and_text"]
