"""What the console's pages share: the Jinja2 environment, the security headers, who is signed in.

Every page is rendered on the server with autoescaping on, so anything a session holds (its title,
the model's text, a command) reaches the browser as text, never as markup. Pages carry a strict
Content-Security-Policy: scripts only from this server's ``/static/console/`` files (no inline
script, no ``eval``), no styles but the stylesheet, no frames, forms post only here.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from server.auth import COOKIE, Caller

HERE = Path(__file__).resolve().parent

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
#: Headers of every console response (pages, redirects, static files).
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # not no-referrer: with it a browser sends `Origin: null`
    "X-Frame-Options": "DENY",
}

env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, undefined=StrictUndefined,
                  trim_blocks=True, lstrip_blocks=True)


def money(usd: float | None) -> str:
    """``$0.0123``; ``?`` for a cost that is unknown (as the CLI prints it)."""
    return "?" if usd is None else f"${usd:.4f}"


def ago(ts: float, now: float | None = None) -> str:
    """``12s ago``, ``5m ago``, ``3h ago``, ``2d ago``."""
    secs = max(0, int((now or time.time()) - ts))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit} ago"
    return f"{secs}s ago"


env.filters["money"] = money
env.filters["ago"] = ago


def page(template: str, status: int = 200, **context) -> HTMLResponse:
    """``template`` rendered, with the console's security headers and no caching."""
    html = env.get_template(template).render(**context)
    return HTMLResponse(html, status_code=status, headers={**SECURITY_HEADERS, "Cache-Control": "no-store"})


def signed_in(request: Request) -> Caller | None:
    """The caller whose token the console's cookie holds, or None (no cookie, unknown or revoked token)."""
    token = request.cookies.get(COOKIE)
    if not token:
        return None
    tokens = request.app.state.engine.store.tokens()
    rec = tokens.find(token)
    if rec is None:
        return None
    tokens.touch(rec)
    return Caller(rec, by_cookie=True)


def to_signin(request: Request) -> RedirectResponse:
    """A redirect to the sign-in page that comes back to this page (its path only) afterwards."""
    from urllib.parse import quote

    nxt = request.url.path
    target = "/signin" if nxt == "/" else f"/signin?next={quote(nxt, safe='/')}"
    return RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)


def safe_next(value: str | None) -> str:
    """A local path to go to after signing in: ``/`` unless ``value`` is a plain path on this server."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    parts = urlsplit(value)
    return "/" if parts.scheme or parts.netloc else value


def same_origin(request: Request) -> bool:
    """Whether a form post comes from this server's own pages (not from another site's form).

    A browser sends ``Origin`` on every POST, and ``Sec-Fetch-Site`` on every request; a client that is
    not a browser sends neither and has nothing to forge.
    """
    origin = request.headers.get("origin")
    if origin is not None:
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc == request.headers.get("host")
    return request.headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")


__all__ = [
    "CSP",
    "SECURITY_HEADERS",
    "ago",
    "env",
    "money",
    "page",
    "safe_next",
    "same_origin",
    "signed_in",
    "to_signin",
]
