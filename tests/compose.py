"""docker-compose.yml as Compose reads it, without Docker: the YAML (anchors and merge keys) and
Compose's variable interpolation, for the tests of the compose file (tests/e2e/test_compose.py,
tests/unit/test_compose_env.py)."""

from __future__ import annotations

import re

import yaml

from tests.conftest import ROOT


def load_compose(name: str = "docker-compose.yml") -> dict:
    return yaml.safe_load((ROOT / name).read_text())


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}`` (which refuses to start)."""
    def sub(match: re.Match) -> str:
        name, op, arg = match.groups()
        if op == ":?" and not env.get(name):
            raise ValueError(f"required variable {name} is missing a value: {arg}")
        return env.get(name) or (arg if op == ":-" else "")

    return re.sub(r"\$\{(\w+)(?:(:[-?])([^}]*))?\}", sub, value)


def service_env(service: dict, host: dict[str, str]) -> dict[str, str]:
    """A service's environment as its container gets it, with ``host`` the variables set where Compose runs."""
    return {key: interpolate(str(value), host) for key, value in (service.get("environment") or {}).items()}


def mainsail_services(services: dict) -> dict:
    """The services that run the Mainsail image (all but redis)."""
    return {name: svc for name, svc in services.items() if "build" in svc}
