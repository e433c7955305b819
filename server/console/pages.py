"""The console's pages: the sessions table (``/``, with a form that starts a session), a session
(``/sessions/{id}``), the approvals inbox (``/approvals``), costs and budgets (``/costs``).

Each page is the API's own answer (the same route functions, so the same checks and the same
views of a session) rendered on the server; its script then keeps it live through the API: the
table and the inbox poll ``/api/sessions`` and ``/api/approvals``, the session page follows
``/api/sessions/{id}/events``. A browser that is not signed in goes to ``/signin``.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request

from server.api.approvals import pending
from server.api.costs import budgets, costs
from server.api.schedules import list_schedules
from server.api.sessions import get_session, list_sessions
from server.console.web import page, signed_in, to_signin
from statemachines import State
from workflows.exceptions import MainsailError
from workflows.models import PermissionMode
from workflows.store.costs import day_of

router = APIRouter(include_in_schema=False)

#: Rows of the sessions table (the newest activity first).
TABLE_ROWS = 200
STATES = [s.value for s in State]
#: The permission modes the new-session form offers (those ``POST /api/sessions`` takes).
MODES = [m.value for m in PermissionMode]


@router.get("/")
def sessions_page(request: Request, state: str | None = None, q: str | None = None, workspace: str | None = None,
                  token: str | None = None, schedule: str | None = None):
    """Every session the token may see, searched and filtered as the query says (so a filtered view is a
    link to share); refreshed every few seconds."""
    caller = signed_in(request)
    if caller is None:
        return to_signin(request)
    chosen = State(state) if state in STATES else None
    given = {"q": (q or "").strip()[:200], "workspace": workspace or "", "token": token or "",
             "schedule": schedule or ""}
    problem = ""
    try:
        rows = list_sessions(request, caller, state=chosen, workspace=given["workspace"] or None, limit=TABLE_ROWS,
                             children=False, q=given["q"] or None, token=given["token"] or None,
                             schedule=given["schedule"] or None)
    except HTTPException as exc:  # a schedule this token does not see (or none of that name)
        rows, problem = [], str(exc.detail)
    everything = rows if not (chosen or any(given.values())) else list_sessions(
        request, caller, state=None, workspace=None, limit=TABLE_ROWS, children=False, q=None, token=None,
        schedule=None)
    options = {
        "workspaces": sorted({*(caller.token.workspaces or []), *(r.workspace for r in everything),
                              *([given["workspace"]] if given["workspace"] else [])}),
        "tokens": sorted({*(r.token for r in everything if r.token), *([given["token"]] if given["token"] else [])}),
        "schedules": [(s.id, s.name) for s in list_schedules(request, caller) if not s.broken],
    }
    if given["schedule"] and given["schedule"] not in {i for i, _ in options["schedules"]}:  # a name or a prefix
        options["schedules"].append((given["schedule"], given["schedule"]))
    # bypassPermissions only for a token that may start such a session (else the API's 403 would answer)
    modes = MODES if caller.token.allow_bypass else [m for m in MODES if m != PermissionMode.BYPASS.value]
    return page("sessions.html", caller=caller, rows=rows, states=STATES, state=chosen.value if chosen else "",
                given=given, options=options, problem=problem, modes=modes, active="sessions")


@router.get("/sessions/{session}")
def session_page(session: str, request: Request):
    """One session: its facts, its transcript live, a box to send a message, cancel."""
    caller = signed_in(request)
    if caller is None:
        return to_signin(request)
    try:
        detail = get_session(session, request, caller)
    except MainsailError as exc:
        return page("missing.html", status=404, caller=caller, message=str(exc), active="sessions")
    return page("session.html", caller=caller, s=detail, active="sessions")


@router.get("/approvals")
def approvals_page(request: Request):
    """The permission requests waiting for a person, with approve / always / deny buttons."""
    caller = signed_in(request)
    if caller is None:
        return to_signin(request)
    return page("approvals.html", caller=caller, requests=pending(request, caller), active="approvals")


@router.get("/costs")
def costs_page(request: Request):
    """What the sessions this token may see cost this month, by token, workspace, model and day, and budgets."""
    caller = signed_in(request)
    if caller is None:
        return to_signin(request)
    since = day_of()[:8] + "01"
    by = {d: costs(request, by=d, since=since, until=None, caller=caller)["groups"]
          for d in ("token", "workspace", "model", "day")}
    total = costs(request, by="day", since=since, until=None, caller=caller)["total"]
    return page("costs.html", caller=caller, by=by, total=total, since=since, budgets=budgets(request, caller),
                active="costs")


__all__ = ["router"]
