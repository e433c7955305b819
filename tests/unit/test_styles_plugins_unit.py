"""Output styles and plugins: the loaders (workflows.styles, workflows.plugins) and the system prompt they shape."""

from __future__ import annotations

import json

import pytest

from workflows.commands import load_commands
from workflows.context.assemble import system_blocks
from workflows.context.files import DEFAULT_SYSTEM_PROMPT
from workflows.models import OutputStyle, SessionRecord
from workflows.agents import plugin_agents
from workflows.plugins import PluginError, load_plugins, plugin_hooks
from workflows.sessions.setup import pick_style
from workflows.settings.errors import SettingsError
from workflows.styles import OUTPUT_STYLE_INTRO, builtin_styles, load_styles, styled


def write(root, files: dict[str, str]):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_built_in_styles_are_claude_codes():
    styles = builtin_styles()
    assert list(styles) == ["Proactive", "Concise", "Explanatory", "Learning"]
    assert styles["Explanatory"].prompt.startswith("You are an interactive CLI tool that helps users with software "
                                                   "engineering tasks. In addition to software engineering tasks")
    assert "\u2605 Insight \u2500" in styles["Explanatory"].prompt and "TODO(human)" in styles["Learning"].prompt
    assert all(s.keep_coding_instructions and s.source == "built-in" for s in styles.values())


def test_project_styles_win_over_users_and_a_bad_file_is_left_out(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    write(home / ".claude/output-styles", {"pirate.md": "---\nname: Pirate\n---\nuser\n", "mine.md": "Mine only.\n",
                                           "bad.md": "---\nkeep-coding-instructions: maybe\n---\nx\n"})
    write(ws / ".claude/output-styles", {"p.md": "---\nname: Pirate\ndescription: Arr\n---\nproject\n"})
    found = load_styles(str(ws), str(home))
    assert found.names() == ["default", "Proactive", "Concise", "Explanatory", "Learning", "mine", "Pirate"]
    assert found.styles["Pirate"].prompt == "project" and found.styles["Pirate"].source == "projectSettings"
    assert found.styles["mine"].description == "Mine only."
    assert len(found.problems) == 1 and "bad.md" in found.problems[0] and "true or false" in found.problems[0]


def test_an_unknown_style_name_keeps_the_default_with_a_warning(tmp_path):
    style, warnings = pick_style(tmp_path, tmp_path, "Nope")
    assert style is None and "'Nope' names no output style" in warnings[0] and "Explanatory" in warnings[0]
    assert pick_style(tmp_path, tmp_path, "default") == (None, [])
    assert pick_style(tmp_path, tmp_path, "Concise")[0].name == "Concise"


def test_a_style_shapes_the_system_prompt_as_claude_codes(tmp_path):
    style = ("Pirate", "Always talk like a pirate.")
    prompt, env = styled(None, DEFAULT_SYSTEM_PROMPT, "<env>", style)
    assert prompt.startswith(OUTPUT_STYLE_INTRO + "\n\n# Tone and style")
    assert env == "<env>\n\n# Output Style: Pirate\nAlways talk like a pirate."
    # (the SDK's --system-prompt "": the style all the same)
    assert styled("", DEFAULT_SYSTEM_PROMPT, "<env>", style) == ("", env)
    assert styled(None, DEFAULT_SYSTEM_PROMPT, "<env>", None) == (None, "<env>")
    rec = SessionRecord(id="s", model="m", workspace=str(tmp_path), system_context="<env>",
                        output_style=OutputStyle(name="Pirate", prompt="Arr."))
    blocks = system_blocks(rec)
    assert blocks[0]["text"].startswith(OUTPUT_STYLE_INTRO) and blocks[-1]["text"].endswith("# Output Style: Pirate\nArr.")
    assert "Output Style" not in json.dumps(system_blocks(rec.model_copy(update={"output_style": None})))


PLUGIN = {".claude-plugin/plugin.json": json.dumps({"name": "kit", "version": "2.0", "description": "A kit"}),
          "commands/hello.md": "Say hello to $ARGUMENTS\n", "commands/git/log.md": "Show the log\n",
          "skills/sk/SKILL.md": "---\nname: sk\ndescription: A skill\n---\nDo it.\n",
          "agents/rev.md": "---\nname: rev\ndescription: Reviews\n---\nYou review.\n",
          "output-styles/terse.md": "Be terse.\n",
          "hooks/hooks.json": json.dumps({"hooks": {"Stop": [{"hooks": [
              {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/bin/stop"}]}]}})}


def test_a_plugins_parts_are_named_plugin_colon_name(tmp_path):
    root = write(tmp_path / "kit-dir", PLUGIN)
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    plugins = load_plugins(["kit-dir"], str(tmp_path))
    assert [(p.name, p.path, p.version) for p in plugins] == [("kit", str(root), "2.0")]
    commands = load_commands(str(ws), str(home), plugins).commands
    assert set(commands) == {"kit:hello", "kit:git:log", "kit:sk"}
    assert commands["kit:sk"].skill_dir == str(root / "skills" / "sk") and commands["kit:hello"].scope == "plugin"
    assert list(plugin_agents(plugins)) == ["kit:rev"]
    assert "kit:terse" in load_styles(str(ws), str(home), tuple(plugins)).styles
    hooks, warnings = plugin_hooks(plugins, str(ws), vouched=False)  # (outside the workspace: the person named it)
    assert warnings == [] and f"{root}/bin/stop" in hooks.model_dump_json()


def test_a_plugin_inside_the_workspace_is_the_projects_code(tmp_path):
    root = write(tmp_path / "ws" / "kit", PLUGIN)
    plugins = load_plugins([str(root)], "/")
    hooks, warnings = plugin_hooks(plugins, str(tmp_path / "ws"), vouched=False)
    assert "bin/stop" not in hooks.model_dump_json() and "--trust-project" in warnings[0]
    assert "bin/stop" in plugin_hooks(plugins, str(tmp_path / "ws"), vouched=True)[0].model_dump_json()
    assert load_commands(str(tmp_path / "ws"), str(tmp_path), plugins).commands["kit:hello"].scope == "project"


def test_a_plugin_dir_that_cannot_be_loaded_is_refused_by_name(tmp_path):
    with pytest.raises(PluginError, match="is not a directory"):
        load_plugins(["nowhere"], str(tmp_path))
    write(tmp_path / "a", {".claude-plugin/plugin.json": "{bad"})
    with pytest.raises(PluginError, match=r"Invalid JSON in the plugin manifest .*plugin.json, line 1"):
        load_plugins(["a"], str(tmp_path))
    write(tmp_path / "b", {".claude-plugin/plugin.json": json.dumps({"name": "x y"})})
    with pytest.raises(PluginError, match="'x y'"):
        load_plugins(["b"], str(tmp_path))
    write(tmp_path / "c", {})
    (tmp_path / "c").mkdir(exist_ok=True)
    assert load_plugins(["c"], str(tmp_path))[0].name == "c"  # (no manifest: the folder's name, as Claude Code)
    with pytest.raises(PluginError, match="loaded already"):
        load_plugins(["c", str(tmp_path / "c")], str(tmp_path))
    write(tmp_path / "d", {"hooks/hooks.json": json.dumps({"hooks": {"Stop": "no"}})})
    with pytest.raises(SettingsError, match="hooks.json"):
        plugin_hooks(load_plugins(["d"], str(tmp_path)), str(tmp_path / "ws"), vouched=True)
