"""The house's structure, from its own imports (issue 27): imports run one way.

Read by the syntax tree, every import counts: at the top of a module, inside a function, and under
``if TYPE_CHECKING:`` (a type hint is a dependency a reader follows too). Three rules:

* **no circles** between modules: no module reaches itself through imports;
* **rooms in layers**: a room is a package of the product (``cli``, ``server``, ``tasks``,
  ``statemachines``, ``demo``) or a first-level folder or module of ``workflows/`` (``workflows/engine/``,
  ``workflows/store/``...). The rooms' import graph has no circle, so they stand in floors and no
  import runs back up; :data:`ABOVE` pins the packages' own order (the domain never imports a front door);
* **small rooms**: no product module over :data:`MAX_LINES` lines.

``python -m tests.unit.test_layers`` prints the floors, bottom first, as docs/design.md describes them.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("workflows", "tasks", "server", "cli", "statemachines", "demo")
MAX_LINES = 450
#: Package -> the packages it may never import (the front doors and the workers sit above the domain).
ABOVE = {
    "workflows": {"tasks", "server", "cli", "demo"},
    "statemachines": {"workflows", "tasks", "server", "cli", "demo"},
    "tasks": {"server", "cli"},
    "demo": {"tasks", "server", "cli"},
    "server": {"cli"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    """The product modules ``module`` imports, wherever the import stands."""
    found = set()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            names = [f"{base}.{alias.name}" for alias in node.names] or [base]
            names = [name if _resolve(name) != module else base for name in names]
        else:
            continue
        for name in names:
            target = _resolve(name)
            if target and target != module:
                found.add(target)
    return found


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def room(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "workflows" and len(parts) > 1 else parts[0]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def _room_graph() -> dict[str, dict[str, set[tuple[str, str]]]]:
    rooms: dict[str, dict[str, set[tuple[str, str]]]] = defaultdict(lambda: defaultdict(set))
    for module, targets in GRAPH.items():
        for target in targets:
            if room(module) != room(target):
                rooms[room(module)][room(target)].add((module, target))
    return rooms


def floors() -> list[list[str]]:
    """The rooms by floor, the ground first: a room stands one floor above the highest room it imports."""
    rooms = _room_graph()
    names = {room(m) for m in MODULES}
    level: dict[str, int] = {}

    def floor(name: str, seen: tuple[str, ...] = ()) -> int:
        if name not in level:
            below = [floor(t, seen + (name,)) for t in rooms.get(name, {}) if t not in seen]
            level[name] = 1 + max(below, default=-1)
        return level[name]

    out: dict[int, list[str]] = defaultdict(list)
    for name in sorted(names):
        out[floor(name)].append(name)
    return [out[i] for i in sorted(out)]


def test_no_module_reaches_itself_through_its_imports():
    assert _cycles(GRAPH) == []


def test_the_rooms_stand_in_floors_with_no_import_back_up():
    rooms = _room_graph()
    circles = _cycles({name: set(targets) for name, targets in rooms.items()})
    described = [
        "; ".join(f"{a} -> {b} ({', '.join(sorted(f'{m}->{t}' for m, t in rooms[a][b]))})"
                  for a in circle for b in circle if b in rooms.get(a, {}))
        for circle in circles
    ]
    assert described == []


def test_the_domain_never_imports_a_front_door():
    wrong = sorted(f"{module} -> {target}" for module, targets in GRAPH.items() for target in targets
                   if target.split(".")[0] in ABOVE.get(module.split(".")[0], set()))
    assert wrong == []


def test_no_product_module_is_over_the_size_of_a_sitting():
    big = sorted(f"{path.relative_to(ROOT)}: {n}" for path in MODULES.values()
                 if (n := len(path.read_text().splitlines())) > MAX_LINES)
    assert big == []


def test_the_checker_sees_a_circle_and_a_room_import_back_up():
    """The rules can fail: a made-up graph with a module circle and a room circle is caught."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"workflows.store": {"workflows.models"}, "workflows.models": set()}) == []
    assert room("workflows.store.keys") == "workflows.store" and room("cli.remote.verbs") == "cli"


if __name__ == "__main__":
    for number, names in enumerate(floors(), 1):
        print(f"floor {number:2}: {' '.join(names)}")
