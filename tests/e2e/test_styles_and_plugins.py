"""Output styles (and plugins) as Claude Code 2.1.332 has them (issue 28, item 9): the installed ``mainsail`` and
the bundled CLI side by side on the same fake Messages API, and the real Agent SDK driving ``mainsail``. Oracles:
what the bundled CLI printed in ``system/init`` and sent the model for the same setup."""

from __future__ import annotations

import json

import pytest

from demo.scripted import Turn
from tests.e2e.test_agent_sdk import collect, options, serving
from tests.e2e.test_claude_code_parity import CLAUDE, MODEL, run_both

sdk = pytest.importorskip("claude_agent_sdk")
pytestmark = pytest.mark.e2e

INTRO = 'You are an interactive agent that helps users according to your \\"Output Style\\"'
PIRATE = "---\nname: Pirate\ndescription: Talk like a pirate\n---\nAlways talk like a pirate.\n"


def answer(body: dict) -> Turn:
    return Turn(text="Arr.")


@pytest.mark.skipif(not CLAUDE.exists(), reason="the SDK package has no bundled Claude Code CLI")
def test_a_project_output_style_matches_claude_codes_init_and_prompt(cluster, tmp_path):
    """``outputStyle`` naming a project's ``.claude/output-styles`` file: both name it in init's output_style, and
    both send Claude Code's style intro and ``# Output Style: Pirate`` with the file's text (the user's file of the
    same name loses to the project's)."""
    seen: dict = {}
    ws_files = {".claude/settings.json": json.dumps({"outputStyle": "Pirate"}),
                ".claude/output-styles/pirate.md": PIRATE}
    args = ["-p", "hi", "--output-format", "stream-json", "--verbose", "--model", MODEL]
    ours, theirs = run_both(cluster, tmp_path, answer, args, home_for_ours=True, ws_files=ws_files, seen=seen,
                            home_files={".claude/output-styles/pirate.md": PIRATE.replace("Always", "USER")})
    assert ours[0]["output_style"] == theirs[0]["output_style"] == "Pirate"
    for side in ("ours", "theirs"):
        sent = json.dumps(seen[side][-1])
        assert INTRO in sent, side
        assert "# Output Style: Pirate\\nAlways talk like a pirate." in sent and "USER talk" not in sent, side


def test_a_built_in_style_through_the_sdks_settings(cluster, workspace):
    """The SDK's ``settings`` (``--settings``) choosing Explanatory: init and initialize name it, and Claude Code's
    Explanatory text reaches the model."""
    from claude_agent_sdk import ClaudeSDKClient

    with serving(cluster, answer) as api:
        msgs = collect("hi", options(cluster, workspace, settings=json.dumps({"outputStyle": "Explanatory"})))
        assert msgs[0].data["output_style"] == "Explanatory"
        sent = json.dumps(api.requests[0]["system"])
        # (the SDK passes --system-prompt "": Claude Code then sends no intro, and the style all the same)
        assert "# Output Style: Explanatory\\nYou are an interactive CLI tool" in sent and INTRO not in sent
        assert "\\u2605 Insight" in sent  # (Claude Code's star, as its terminal shows it)

        async def info():
            async with ClaudeSDKClient(options(cluster, workspace, settings='{"outputStyle": "Learning"}')) as c:
                return await c.get_server_info()

        import asyncio

        server = asyncio.run(asyncio.wait_for(info(), 60))
    assert server["output_style"] == "Learning"
    assert server["available_output_styles"] == ["default", "Proactive", "Concise", "Explanatory", "Learning"]


def make_plugin(root) -> str:
    """A plugin with one of each part Mainsail loads; its UserPromptSubmit hook writes ``hook-ran`` in the
    session's folder (naming ${CLAUDE_PLUGIN_ROOT})."""
    files = {".claude-plugin/plugin.json": json.dumps({"name": "myplug", "version": "1.0.0"}),
             "commands/hello.md": "---\ndescription: Say hello\n---\nSay hello to $ARGUMENTS\n",
             "agents/rev.md": "---\nname: rev\ndescription: Reviews code\n---\nYou review.\n",
             "skills/sk/SKILL.md": "---\nname: sk\ndescription: A skill\n---\nDo the skill.\n",
             "hooks/hooks.json": json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [
                 {"type": "command", "command": "echo ${CLAUDE_PLUGIN_ROOT} > hook-ran"}]}]}})}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return str(root)


@pytest.mark.skipif(not CLAUDE.exists(), reason="the SDK package has no bundled Claude Code CLI")
def test_a_plugin_dir_matches_claude_codes_init_and_command(cluster, tmp_path):
    """``--plugin-dir``: both list the plugin alike in init, name its command, skill and agent ``myplug:NAME``,
    expand ``/myplug:hello world`` into the command's text, and run its hook."""
    plugin = make_plugin(tmp_path / "plugin")
    seen: dict = {}
    args = ["-p", "/myplug:hello world", "--output-format", "stream-json", "--verbose", "--model", MODEL,
            "--plugin-dir", plugin]
    ours, theirs = run_both(cluster, tmp_path, answer, args, seen=seen)
    assert ours[0]["plugins"] == theirs[0]["plugins"][:1] == [
        {"name": "myplug", "path": plugin, "source": "myplug@inline", "version": "1.0.0"}]
    for init in (ours[0], theirs[0]):
        assert [c for c in init["slash_commands"] if c.startswith("myplug:")] == ["myplug:hello", "myplug:sk"]
        assert "myplug:sk" in init["skills"] and "myplug:rev" in init["agents"]
    for side in ("ours", "theirs"):
        assert "Say hello to world" in json.dumps(seen[side][-1]["messages"]), side
    for ws in ("ours", "theirs"):
        assert (tmp_path / ws / "hook-ran").read_text().strip() == plugin, ws


def test_the_sdks_plugins_option_loads_a_plugin(cluster, workspace, tmp_path):
    """``plugins=[{"type": "local", "path": ...}]`` (the SDK passes --plugin-dir): the command runs, the agent type
    is offered to the model, the init line lists the plugin."""
    plugin = make_plugin(tmp_path / "plugin")
    with serving(cluster, answer) as api:
        msgs = collect("/myplug:hello sdk", options(cluster, workspace, plugins=[{"type": "local", "path": plugin}]))
    assert msgs[0].data["plugins"][0]["name"] == "myplug"
    assert "Say hello to sdk" in json.dumps(api.requests[0]["messages"])
    agent = next(t for t in api.requests[0]["tools"] if t["name"] == "Agent")
    assert "- myplug:rev: Reviews code" in agent["description"]
    assert (workspace / "hook-ran").read_text().strip() == plugin
