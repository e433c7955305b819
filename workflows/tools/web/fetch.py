"""WebFetch (Claude Code's tool: ``url`` and ``prompt``): fetch a page, make it markdown, and answer the
prompt about it with the session's small, fast model.

As Claude Code: ``http://`` is upgraded to ``https://`` (except for a loopback host, which has no
certificate to check), a URL with a user name or password or longer than 2,000 characters is
refused, a redirect to another host is reported to the model instead of followed (it may call
WebFetch again on the new URL, which is checked like any call), pages are kept 15 minutes (in Redis,
for every worker), at most 10 MB are read and 100,000 characters of markdown go to the model.
Permission: ``WebFetch(domain:HOST)`` rules (workflows/permissions; the host is
:func:`workflows.permissions.rules.hosts.host_of`), asked per host otherwise.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urljoin, urlsplit, urlunsplit

from pydantic import Field

from workflows.exceptions import ToolError
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register
from workflows.tools.web.html import to_markdown

MAX_URL_LENGTH = 2000
MAX_BYTES = 10 * 1024 * 1024
MAX_MARKDOWN = 100_000
MAX_REDIRECTS = 10
TIMEOUT_SECONDS = 60.0

DESCRIPTION = """- Fetches content from a specified URL and processes it using an AI model
- Takes a URL and a prompt as input
- Fetches the URL content, converts HTML to markdown
- Processes the content with the prompt using a small, fast model
- Returns the model's response about the content
- Use this tool when you need to retrieve and analyze web content

Usage notes:
  - IMPORTANT: If an MCP-provided web fetch tool is available, prefer using that tool instead of this one, as it may have fewer restrictions. All MCP-provided tools start with "mcp__".
  - The URL must be a fully-formed valid URL
  - HTTP URLs will be automatically upgraded to HTTPS
  - The prompt should describe what information you want to extract from the page
  - This tool is read-only and does not modify any files
  - Results may be summarized if the content is very large
  - Includes a self-cleaning 15-minute cache for faster responses when repeatedly accessing the same URL
  - When a URL redirects to a different host, the tool will inform you and provide the redirect URL in a special format. You should then make a new WebFetch request with the redirect URL to fetch the content."""

ANSWER_PROMPT = """Web page content:
---
{content}
---

{prompt}

Provide a concise response based only on the content above. Quote exact text only where the prompt asks for it, and keep quotes short."""


class WebFetchInput(ToolInput):
    url: str = Field(description="The URL to fetch content from", json_schema_extra={"format": "uri"})
    prompt: str = Field(description="The prompt to run on the fetched content")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def checked_url(raw: str) -> str:
    """The URL WebFetch fetches for ``raw`` (http upgraded to https but for a loopback host).

    Raises:
        ToolError: not an http(s) URL with a host, too long, or with credentials in it.
    """
    url = raw.strip()
    if len(url) > MAX_URL_LENGTH:
        raise ToolError(f"Invalid URL: it is {len(url):,} characters long; WebFetch takes at most {MAX_URL_LENGTH:,}.")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise ToolError(f"Invalid URL {url!r}: {exc}. Give a fully-formed URL such as https://example.com/page.") from None
    if parts.scheme not in ("http", "https") or not host:
        raise ToolError(f"Invalid URL {url!r}: WebFetch fetches http:// and https:// URLs with a host name, "
                        "such as https://example.com/page.")
    if parts.username is not None or parts.password is not None:
        raise ToolError(f"Invalid URL {url!r}: a URL with a user name or password is not fetched.")
    if "." not in host and not _loopback(host):
        raise ToolError(f"Invalid URL {url!r}: {host!r} is not a full host name (e.g. example.com).")
    if parts.scheme == "http" and not _loopback(host):
        parts = parts._replace(scheme="https")
    return urlunsplit(parts)


def _same_site(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    bare = lambda h: (h or "").lower().removeprefix("www.")  # noqa: E731
    return pa.scheme == pb.scheme and pa.port == pb.port and bare(pa.hostname) == bare(pb.hostname) \
        and pb.username is None and pb.password is None


def fetch_page(url: str, cancel=None) -> dict:
    """GET ``url`` following same-site redirects: ``{url, status, reason, type, bytes, markdown}``, or
    ``{redirect, status, url}`` for a redirect to another site.

    Raises:
        ToolError: the request failed, an error status, too large, or not text.
    """
    import httpx

    with httpx.Client(follow_redirects=False, timeout=TIMEOUT_SECONDS,
                      headers={"User-Agent": "Mainsail-WebFetch/1.0", "Accept": "text/markdown, text/html, */*"}) as client:
        for _ in range(MAX_REDIRECTS + 1):
            try:
                with client.stream("GET", url) as resp:
                    if resp.is_redirect and resp.headers.get("location"):
                        target = urljoin(url, resp.headers["location"])
                        if not _same_site(url, target):
                            return {"redirect": target, "status": resp.status_code, "url": url}
                        url = target
                        continue
                    if resp.status_code >= 400:
                        raise ToolError(f"Request failed with status code {resp.status_code} "
                                        f"({resp.reason_phrase or 'error'}) for {url}.")
                    body = bytearray()
                    for chunk in resp.iter_bytes():
                        body += chunk
                        if len(body) > MAX_BYTES:
                            raise ToolError(f"The page at {url} is larger than {MAX_BYTES // (1024 * 1024)} MB; "
                                            "it was not read.")
                        if cancel is not None and cancel.is_set():
                            raise ToolError("WebFetch was cancelled.")
                    kind = resp.headers.get("content-type", "").split(";")[0].strip().lower()
                    text = bytes(body).decode(resp.encoding or "utf-8", errors="replace")
                    return {"url": url, "status": resp.status_code, "reason": resp.reason_phrase, "type": kind,
                            "bytes": len(body), "markdown": _as_markdown(kind, text, url)}
            except httpx.HTTPError as exc:
                raise ToolError(f"Could not fetch {url}: {type(exc).__name__}: {exc or 'no detail'}.") from None
        raise ToolError(f"{url} redirected more than {MAX_REDIRECTS} times; it was not fetched.")


def _as_markdown(kind: str, text: str, url: str) -> str:
    if kind in ("text/html", "application/xhtml+xml") or (not kind and text.lstrip()[:1] == "<"):
        return to_markdown(text)
    if kind.startswith("text/") or kind in ("application/json", "application/xml", "application/javascript", ""):
        return text
    raise ToolError(f"The content at {url} is {kind}, not text; WebFetch reads text and HTML pages.")


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f}KB" if n < 1024 * 1024 else f"{n / (1024 * 1024):.1f}MB"


@register
class WebFetchTool(Tool):
    name = "WebFetch"
    description = DESCRIPTION
    input_model = WebFetchInput
    idempotent = True  # a GET: running it again after a lost worker repeats nothing that matters

    def summary(self, args: dict) -> str:
        url = args.get("url") if isinstance(args, dict) else None
        return url if isinstance(url, str) else ""

    def run(self, args: WebFetchInput, ctx: ToolContext) -> ToolOutput:
        url = checked_url(args.url)
        if ctx.web is None:
            raise ToolError("WebFetch is not available here: it runs on a worker of a session.")
        page = ctx.web.cached(url)
        if page is None:
            page = fetch_page(url, ctx.cancel)
            ctx.web.remember(url, page)
        if "redirect" in page:
            text = (f"REDIRECT DETECTED: The URL redirects to a different host.\n\nOriginal URL: {page['url']}\n"
                    f"Redirect URL: {page['redirect']}\nStatus: {page['status']}\n\nTo complete your request, I need "
                    f"to fetch content from the redirected URL. Please use WebFetch again with these parameters:\n"
                    f"- url: \"{page['redirect']}\"\n- prompt: \"{args.prompt}\"")
            return ToolOutput(content=text, display=f"redirects to {page['redirect']}"[:120])
        content = page["markdown"]
        if len(content) > MAX_MARKDOWN:
            content = content[:MAX_MARKDOWN] + "\n\n[Content truncated due to length...]"
        answer = ctx.web.ask_small_model(ANSWER_PROMPT.format(content=content, prompt=args.prompt))
        return ToolOutput(content=answer.text or "(the model gave no answer about this page)",
                          display=f"Received {_size(page['bytes'])} ({page['status']} {page.get('reason') or ''})"
                                  .strip(),
                          usage=answer.usage, model=answer.model, duration_ms=answer.duration_ms)


__all__ = ["WebFetchInput", "WebFetchTool", "checked_url", "fetch_page"]
