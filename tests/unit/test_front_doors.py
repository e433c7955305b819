"""Every front door calls the session service (issue 27): no module of cli/ or server/ calls an Engine verb
itself (``rt.engine.submit(...)``), so what a verb resolves, checks and dispatches is done in one place,
:class:`workflows.sessions.service.SessionService`. Reading ``engine.store`` or ``engine.settings`` is not a
verb and stays allowed."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from workflows.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
VERBS = frozenset(name for name, value in vars(Engine).items()
                  if not name.startswith("_") and (callable(value) or type(value).__name__ == "_Verb"))


def _engine_names(tree: ast.AST) -> set[str]:
    """Local names bound to an engine: ``eng = engine(request)``, ``e = rt.engine`` (also in tuple targets)."""
    names = {"engine"}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        pairs = []
        for target in node.targets:
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                pairs += zip(target.elts, node.value.elts)
            else:
                pairs.append((target, node.value))
        for target, value in pairs:
            if not isinstance(target, ast.Name):
                continue
            call = value.func if isinstance(value, ast.Call) else value
            name = call.id if isinstance(call, ast.Name) else call.attr if isinstance(call, ast.Attribute) else None
            if name == "engine":
                names.add(target.id)
    return names


def _engine_calls(tree: ast.AST) -> list[str]:
    out, names = [], _engine_names(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in VERBS):
            continue
        holder = node.func.value
        name = holder.id if isinstance(holder, ast.Name) else holder.attr if isinstance(holder, ast.Attribute) else None
        if name in names:
            out.append(f"{node.lineno}: engine.{node.func.attr}()")
    return out


def test_the_verbs_are_the_engines():
    assert {"submit", "decide_request", "create_session", "update_limits", "rewind"} <= VERBS
    assert "store" not in VERBS and "settings" not in VERBS


def test_no_front_door_calls_an_engine_verb_itself():
    found = {}
    for package in ("cli", "server"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if calls := _engine_calls(ast.parse(path.read_text(), str(path))):
                found[str(path.relative_to(ROOT))] = calls
    assert found == {}


def test_the_check_sees_a_direct_call():
    source = inspect.cleandoc("""
        def f(rt, ui):
            rt.engine.submit("s", "hi")
            ui.engine.store.get_session("s")
            engine.update_limits("s", permission_mode="plan")
            eng, notes = engine(request), []
            eng.clear_queue("s")
            e = rt.engine
            e.rewind("s", "u")
            e.store.inbox("s")
    """)
    assert _engine_calls(ast.parse(source)) == ["2: engine.submit()", "4: engine.update_limits()",
                                                "6: engine.clear_queue()", "8: engine.rewind()"]
