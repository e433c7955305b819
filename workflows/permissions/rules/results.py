"""What a permission check returns: the decision, why, what decided, and the standard results (a rule's deny,
ask or allow, a mode's, plan mode's deny, and the deny that stands for an ask nobody can answer)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from workflows.models import PermissionMode

if TYPE_CHECKING:
    from workflows.permissions.rules.rules import Rule

__all__ = ["Decision", "PermissionResult", "PROTECTED_TEXT", "OUTSIDE", "allow_by_mode", "allow_by_rule", "ask",
           "ask_by_mode", "ask_by_rule", "deny_by_rule", "deny_plan", "dont_ask", "nobody_to_ask", "outside_work_area",
           "rule_source"]


class Decision(str, Enum):
    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


@dataclass(frozen=True)
class PermissionResult:
    """The outcome for one tool call.

    ``reason``: for DENY, the message for the model (why, and what to do); for
    ASK, one line saying why it asks. ``source``: what decided (``rule X from
    FILE`` or ``mode M``). ``display``: one short line for the user. ``rule``:
    the raw rule text that decided, if a rule did.
    """

    decision: Decision
    reason: str = ""
    source: str = ""
    display: str = ""
    rule: str | None = None
    asked: str = ""  # a deny standing for an ask nobody can answer (print mode, dontAsk): why it would ask
    #: A deny standing for an ask only because nobody answers (print mode): a PreToolUse hook still runs
    #: first and its allow still counts, as Claude Code's (unless an ask rule asked: ``asked_rule``).
    nobody: bool = False
    asked_rule: str | None = None

    @property
    def hook_may_allow(self) -> bool:
        """Whether a PreToolUse hook's allow runs this call: the mode or the checker asks (not an ask rule),
        here or where nobody can be asked."""
        return (self.decision is Decision.ASK and not self.rule) or (self.nobody and not self.asked_rule)


PROTECTED_TEXT = "a protected path: .git/, .mainsail/, .claude/ and .mcp.json are never auto-approved"


def _from(source: str) -> str:
    return f" (from {source})" if source else ""


def rule_source(rule: Rule, source: str) -> str:
    return f"rule {rule.raw}" + (f" from {source}" if source else "")


def deny_by_rule(tool: str, rule: Rule, source: str, what: str = "") -> PermissionResult:
    what = f": `{what}` matches" if what else " by"
    return PermissionResult(
        Decision.DENY,
        reason=(f"Permission to use {tool} was denied{what} the deny rule {rule.raw}{_from(source)}. "
                "Do not retry this call or try to work around the rule; continue without it, "
                "or tell the user what you need and why."),
        source=rule_source(rule, source), display=f"denied by rule {rule.raw}", rule=rule.raw)


#: The source of an ask for a path outside the workspace and its added directories.
OUTSIDE = "path outside the workspace and its added directories"


def outside_work_area(path: str, *, write: bool) -> PermissionResult:
    """A path tool's call outside the workspace and its added directories asks, as in Claude Code; its reason is
    Claude Code's words, which are the whole message when nobody can be asked (:func:`nobody_to_ask`)."""
    return ask(f"Claude requested permissions to {'write to' if write else 'read from'} {path}, but you haven't "
               "granted it yet.", OUTSIDE, f"{path} is outside the workspace (--add-dir adds a directory)")


def ask_by_rule(rule: Rule, source: str) -> PermissionResult:
    return PermissionResult(Decision.ASK, reason=f"matches ask rule {rule.raw}{_from(source)}",
                            source=rule_source(rule, source), display=f"asks: rule {rule.raw}", rule=rule.raw)


def allow_by_rule(rule: Rule, source: str) -> PermissionResult:
    return PermissionResult(Decision.ALLOW, source=rule_source(rule, source),
                            display=f"allowed by rule {rule.raw}", rule=rule.raw)


def allow_by_mode(mode: PermissionMode) -> PermissionResult:
    return PermissionResult(Decision.ALLOW, source=f"mode {mode.value}", display=f"allowed ({mode.value} mode)")


def ask(reason: str, source: str, display: str = "") -> PermissionResult:
    return PermissionResult(Decision.ASK, reason=reason, source=source, display=display or reason[:80])


def ask_by_mode(tool: str, what: str, mode: PermissionMode) -> PermissionResult:
    what = what if len(what) <= 80 else what[:79] + "…"
    return ask(f"{tool}({what}) needs approval in {mode.value} mode", f"mode {mode.value}",
                f"needs approval ({mode.value} mode)")


def deny_plan(tool: str) -> PermissionResult:
    return PermissionResult(
        Decision.DENY,
        reason=(f"Permission to use {tool} was denied: the session is in plan mode, which is read-only. "
                "Do not make changes or run commands that change anything; explore with read-only tools "
                "and present your plan instead. The user will leave plan mode to carry it out."),
        source="mode plan", display="denied: plan mode (read-only)")


def nobody_to_ask(tool: str, asked: PermissionResult) -> PermissionResult:
    """An ask in a session nobody answers (print mode without a permission prompt tool). A path outside the
    work area gets Claude Code's own words (:func:`outside_work_area`)."""
    if asked.source == OUTSIDE:
        return PermissionResult(Decision.DENY, reason=asked.reason, source=f"no one to ask ({OUTSIDE})",
                                display=f"denied: {asked.display}", asked=asked.reason)
    return PermissionResult(
        Decision.DENY,
        reason=(f"Permission to use {tool} was denied: this call needs approval ({asked.reason}), and this "
                "session runs without anyone to ask (print mode). Do not retry it; continue without it, or "
                "tell the user which permission rule (--allowedTools) would allow it."),
        source="no one to ask" + (f" ({asked.source})" if asked.source else ""),
        display="denied: needs approval, and print mode asks no one", asked=asked.reason or asked.source,
        nobody=True, asked_rule=asked.rule)


def dont_ask(tool: str, asked: PermissionResult) -> PermissionResult:
    return PermissionResult(
        Decision.DENY,
        reason=(f"Permission to use {tool} was denied: this session does not ask for permission "
                f"(dontAsk mode) and only pre-approved tools run; this call needs approval "
                f"({asked.reason}). Do not retry it; continue without it, or tell the user which "
                "permission rule would allow it."),
        source="mode dontAsk" + (f" ({asked.source})" if asked.source else ""),
        display="denied: not pre-approved (dontAsk mode)", asked=asked.reason or asked.source)
