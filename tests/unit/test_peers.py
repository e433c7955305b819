"""The engine's parts call each other through the Protocols of workflows/commit/peers.py: each Protocol
must describe the part the engine wires in, method for method, or a reader (and a type checker) is misled."""

from __future__ import annotations

import inspect

import pytest

from workflows.commit import peers

ATTRIBUTE = {"Turns": "turns", "Tools": "tools", "Approvals": "approvals", "Commands": "commands",
             "Compaction": "compaction", "Forks": "forks", "Subagents": "subagents", "Titles": "titles",
             "Prompts": "prompts", "Hooks": "hooks", "Mcp": "mcp"}


def _methods(protocol: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(fn) for name, fn in vars(protocol).items()
            if inspect.isfunction(fn) and not name.startswith("_")}


def test_every_protocol_names_an_engine_part():
    assert sorted(ATTRIBUTE) == sorted(peers.__all__)


@pytest.mark.parametrize("name", sorted(ATTRIBUTE))
def test_a_protocol_has_its_parts_methods_with_their_parameters(engine, name):
    part = getattr(engine, ATTRIBUTE[name])
    protocol = getattr(peers, name)
    assert _methods(protocol), f"{name} lists no method"
    for method, signature in _methods(protocol).items():
        concrete = getattr(type(part), method, None)
        assert concrete is not None, f"{type(part).__name__} has no {method}, which peers.{name} promises"
        real = inspect.signature(inspect.unwrap(concrete))
        assert list(real.parameters) == list(signature.parameters), f"{name}.{method}"
        assert [p.default for p in real.parameters.values()] == [p.default for p in signature.parameters.values()]
