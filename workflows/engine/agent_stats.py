"""The result line's ``subagent_stats``: running totals of the sub-agents a session's Agent calls started.

Claude Code 2.1.332 sends them on every ``result`` line (zeros in a session without sub-agents): how many were
spawned, by the ``run_in_background`` value the model passed, how many started in the background, by agent type,
and how many completed, failed or were killed. Mainsail keeps them on the session record, counted by the commits
that start a child and record its end (each once: the end is fenced on the parent's agent step), and copies them
into each result entry. Mainsail's sub-agents start no sub-agents and are refused no launch, so ``max_depth`` is
at most 1 and ``spawned_by_subagents`` and ``refused`` stay 0.
"""

from __future__ import annotations

import copy


def blank() -> dict:
    """Claude Code's shape, all zeros."""
    return {"spawned": 0, "requested": {"background": 0, "foreground": 0, "unset": 0}, "started_in_background": 0,
            "max_depth": 0, "spawned_by_subagents": 0, "completed": 0, "failed": 0,
            "killed": {"parent": 0, "user": 0, "system": 0},
            "refused": {"depth_limit": 0, "concurrency_limit": 0, "budget": 0}, "by_type": {}}


def current(rec) -> dict:
    """A session record's totals so far (a copy)."""
    return copy.deepcopy(rec.subagent_stats) if rec.subagent_stats else blank()


def spawned(rec, tool_input: dict, agent_type: str, background: bool) -> None:
    """A child started for an Agent call with ``tool_input`` (in the commit that writes it)."""
    stats = current(rec)
    stats["spawned"] += 1
    asked = tool_input.get("run_in_background")
    stats["requested"]["unset" if asked is None else "background" if asked is True else "foreground"] += 1
    stats["started_in_background"] += int(background)
    stats["max_depth"] = 1
    stats["by_type"][agent_type] = stats["by_type"].get(agent_type, 0) + 1
    rec.subagent_stats = stats


def ended(rec, status: str, stopped_by: str = "user") -> None:
    """A child's end was recorded with task status ``status`` (completed, failed, killed); ``stopped_by``: who
    killed it (``parent``: a TaskStop call; ``user``: anyone else)."""
    stats = current(rec)
    if status == "killed":
        stats["killed"][stopped_by] += 1
    else:
        stats["completed" if status == "completed" else "failed"] += 1
    rec.subagent_stats = stats
