"""The API's session views, as records the local renderers take.

The API sends views of a session (``SessionSummary``, ``SessionDetail``: server/schemas.py), never
the record itself (it holds what a teammate must not read). To print them exactly as the local
commands do, :func:`record_of` rebuilds a :class:`~workflows.models.SessionRecord` from a view: the
fields the view has, defaults for the rest (which the renderers then leave out, as they do for a
session that never set them).
"""

from __future__ import annotations

from workflows.models import RuleSet, RuleSpec, SessionRecord

#: View fields that are a record's field of the same name.
_SAME = ("id", "title", "state", "workspace", "model", "permission_mode", "turns", "cost_usd", "created_at",
         "updated_at", "parent_session_id", "agent_type", "children", "git_branch", "usage", "cost_by_model",
         "cost_by_kind", "max_turns", "max_budget_usd", "fallback_model", "additional_directories", "todos",
         "last_error", "context_tokens", "token", "budget_stop")


def record_of(view: dict) -> SessionRecord:
    """A session record holding what ``view`` (a summary or a detail from the API) says."""
    fields = {k: view[k] for k in _SAME if view.get(k) is not None}
    rules = view.get("rules") or {}
    fields["rules"] = RuleSet(**{kind: [RuleSpec(rule=r) for r in rules.get(kind, [])]
                                 for kind in ("allow", "ask", "deny")})
    fields["permission_requests"] = view.get("pending_requests") or []
    return SessionRecord.model_validate(fields)


__all__ = ["record_of"]
