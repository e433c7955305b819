"""The web console at ``/``: server-rendered pages (Jinja2) with a little plain JavaScript.

- ``/signin``: paste a token; it is kept in an HttpOnly, SameSite=Strict cookie (:mod:`.signin`).
- ``/``: the sessions table; ``/sessions/{id}``: a session live; ``/approvals``: the inbox (:mod:`.pages`).
- ``/overview``: sessions by state, cost per day and model, queues and workers (:mod:`.overview`).
- ``/console/pulse``: the header's live counts and the sessions that just ended (:mod:`.pulse`).
- ``/static/console/*``: the script and stylesheet (:mod:`.static`).

The pages' scripts act through the HTTP API with the cookie (and the ``X-Mainsail-Console`` header
on changes), so the console can do nothing the API would not let its token do.
"""

from fastapi import APIRouter

from server.console import overview, pages, pulse, signin, static

router = APIRouter(include_in_schema=False)
router.include_router(signin.router)
router.include_router(pages.router)
router.include_router(overview.router)
router.include_router(pulse.router)
router.include_router(static.router)

__all__ = ["router"]
