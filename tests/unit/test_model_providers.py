"""The model providers' plug point (workflows/model/providers.py): the domain asks a model's provider
(its client, whether it is local, its window, its price) and never knows the demo's ``scripted:`` models,
which the demo package registers."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from demo import PREFIX, PROVIDER
from workflows.exceptions import MissingCredentials
from workflows.model import providers as model_providers
from workflows.model.client import require_credentials
from workflows.model.pricing import price_for
from workflows.model.providers import ModelProvider, is_local_model, provider_for
from workflows.model.tokens import model_limits

ROOT = Path(__file__).resolve().parents[2]


def test_a_provider_answers_for_its_prefix_the_longest_one_first(monkeypatch):
    assert provider_for("scripted:demo") is PROVIDER and provider_for("claude-opus-4-5") is None
    assert is_local_model("scripted:read_loop:3") and not is_local_model("claude-opus-4-5")
    other = ModelProvider("scripted:x", PROVIDER.make_client, local=False, limits=(1000, 10), prices=None)
    monkeypatch.setitem(model_providers._providers, "scripted:x", other)
    assert provider_for("scripted:xy") is other and provider_for("scripted:demo") is PROVIDER


def test_prices_windows_and_credentials_come_from_the_provider(monkeypatch, settings):
    assert price_for("scripted:demo") == (0.0, 0.0, 0.0, 0.0) and model_limits("scripted:demo") == (200_000, 64_000)
    settings.anthropic_api_key = settings.anthropic_base_url = None
    require_credentials(settings, "scripted:demo")
    monkeypatch.setitem(model_providers._providers, PREFIX, replace(PROVIDER, local=False, prices=None,
                                                                        limits=(1000, 10)))
    assert price_for("scripted:demo") is None and model_limits("scripted:demo") == (1000, 10)
    with pytest.raises(MissingCredentials):
        require_credentials(settings, "scripted:demo")


def test_the_domain_never_imports_the_demo():
    code = ("import sys, workflows.memory.records, workflows.model.client, workflows.steps.run, workflows.titles; "
            "print(sorted(m for m in sys.modules if m == 'demo' or m.startswith('demo.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "workflows").rglob("*.py")
                 if any(line.startswith(("import demo", "from demo")) or " from demo" in line or "import demo" in line
                        for line in p.read_text().splitlines())]
    assert offenders == []


def test_doctor_and_the_cli_need_no_key_for_a_local_model(settings, monkeypatch):
    from cli.doctor import FAIL, OK, check_api_key
    from cli.standby import require_model_access

    settings.anthropic_api_key = settings.anthropic_base_url = None
    settings.model = "scripted:demo"
    assert check_api_key(settings).status == OK
    require_model_access(None, settings, "scripted:demo")  # (asks no worker: a local model needs none)
    monkeypatch.setitem(model_providers._providers, PREFIX, replace(PROVIDER, local=False))
    assert check_api_key(settings).status == FAIL
