"""Keys of Claude Code 2.1.332's stream-json lines beyond those the Agent SDK parses, for programs that read them.

Mainsail sends the ones it can tell truly (or whose value is fixed for it: no fast mode, no 1-hour cache
writes, one optional protocol capability); the rest are left out (docs/cli.md lists them).
"""

from __future__ import annotations

from workflows.model.tokens import model_limits
from workflows.models import SessionRecord, UserEntry, new_id

__all__ = ["RESULT_EXTRAS", "init_extras", "interrupt_diagnostic", "model_usage_extras", "permission_denied_lines",
           "result_usage"]

#: The result line's keys with values fixed for Mainsail (``api_error_status`` on a success only, as Claude Code's).
RESULT_EXTRAS = {"fast_mode_state": "off", "safety_stops": 0, "api_error_status": None, "queued_turn_count": 0}


def interrupt_diagnostic(stop_reason: str | None) -> str:
    """The one error Claude Code 2.1.332 reports for a run the user's interrupt stopped in its tool calls: its
    description of the run's last message (the interrupt's user message) and of the last reply's stop."""
    return f"[ede_diagnostic] result_type=user last_content_type=n/a stop_reason={stop_reason or 'null'}"


def init_extras(rec: SessionRecord) -> dict:
    """The ``system/init`` line's further keys."""
    return {
        # Of Claude Code's optional protocol capabilities, the one Mainsail has: an interrupt's answer lists
        # ``still_queued`` (cli/headless/stream.py)
        "capabilities": ["interrupt_receipt_v1"],
        "terminal_slash_commands": [],
        "analytics_disabled": True,
        "product_feedback_disabled": True,
        "sandbox_enabled": rec.sandbox.enabled,
        "original_cwd": rec.workspace,
        "additional_directories": list(rec.additional_directories),
        "fast_mode_state": "off",
        "per_turn_effort_active": False,
        "ultrathink_available": False,
        "ultrathink_typed_raises": False,
        "view_mode": "default",
    }


def model_usage_extras(model: str, u) -> dict:
    """One ``modelUsage`` entry's further keys (cache writes are 5-minute ones: Mainsail asks for no other)."""
    return {"maxOutputTokens": model_limits(model)[1], "thinkingTokens": 0,
            "cacheCreationEphemeral5mInputTokens": int(u.cache_creation_input_tokens),
            "cacheCreationEphemeral1hInputTokens": 0, "canonicalModel": model, "provider": "firstParty",
            "costBasis": "list"}


def result_usage(base: dict) -> dict:
    """The result line's ``usage``: ``base`` (the four token counts) with Claude Code's further keys."""
    return {**base, "output_tokens_details": {"thinking_tokens": 0},
            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}, "service_tier": "standard",
            "cache_creation": {"ephemeral_1h_input_tokens": 0,
                               "ephemeral_5m_input_tokens": base["cache_creation_input_tokens"]},
            "inference_geo": "", "iterations": [], "speed": "standard", "fallback_credit": None}


def permission_denied_lines(e: UserEntry, tool_names: dict[str, str]) -> list[dict]:
    """Claude Code's ``system/permission_denied`` lines for a refused call's result entry (before its line)."""
    return [{"type": "system", "subtype": "permission_denied", "tool_name": tool_names.get(b.tool_use_id, ""),
             "tool_use_id": b.tool_use_id, "message": b.text, "uuid": new_id(), "session_id": e.session_id}
            for b in e.message.blocks() if getattr(b, "type", "") == "tool_result"]
