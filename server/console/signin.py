"""Signing in and out of the console.

A person pastes an API token (``mainsail token create``) into the sign-in form; the server checks
it and keeps it in the ``mainsail_token`` cookie: ``HttpOnly`` (no script reads it), ``SameSite=Strict``
(no other site's page sends it), ``Secure`` when the request came over https (directly, or through a
proxy whose ``X-Forwarded-Proto`` uvicorn trusts), ``Path=/``. The token travels in the form's body,
never in a URL, and no page shows it. Signing out clears the cookie; revoking the token
(``mainsail token revoke``) signs every browser holding it out at its next request.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from server.auth import COOKIE
from server.console.web import SECURITY_HEADERS, page, safe_next, same_origin, signed_in

router = APIRouter(include_in_schema=False)

#: How long a browser keeps the cookie; the token itself stays valid until revoked.
COOKIE_MAX_AGE = 7 * 24 * 3600
MAX_FORM_BYTES = 4096


@router.get("/signin")
def signin_form(request: Request, next: str | None = None):
    """The sign-in form (or straight on, for a browser already signed in)."""
    if signed_in(request) is not None:
        return RedirectResponse(safe_next(next), status_code=303, headers=SECURITY_HEADERS)
    return page("signin.html", next=safe_next(next), error=None)


@router.post("/signin")
async def signin(request: Request):
    """Check the pasted token; on success set the cookie and go on to the page asked for."""
    if not same_origin(request):
        return page("signin.html", status=403, next="/", error="Sign in from this server's own sign-in page.")
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return page("signin.html", status=413, next="/", error="That form is too large to be a token.")
    form = parse_qs(body.decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0].strip()
    nxt = safe_next((form.get("next") or ["/"])[0])
    if not token:
        return page("signin.html", status=400, next=nxt, error="Paste an API token to sign in.")
    rec = request.app.state.engine.store.tokens().find(token)
    if rec is None:
        return page("signin.html", status=401, next=nxt,
                    error="That token is unknown or revoked. Ask the server's admin for one "
                          "(mainsail token create --name NAME).")
    response = RedirectResponse(nxt, status_code=303, headers=SECURITY_HEADERS)
    response.set_cookie(COOKIE, token, max_age=COOKIE_MAX_AGE, path="/", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


@router.post("/signout")
def signout(request: Request) -> Response:
    """Clear the cookie and go back to the sign-in page."""
    response = RedirectResponse("/signin", status_code=303, headers=SECURITY_HEADERS)
    if same_origin(request):
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict",
                               secure=request.url.scheme == "https")
    return response


__all__ = ["COOKIE_MAX_AGE", "router"]
