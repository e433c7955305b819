"""Skills (``.claude/skills/NAME/SKILL.md``) and the Skill tool, through the engine (fakeredis, steps inline):
what the model is offered and gets, checked against what Claude Code 2.1.332 sends for the same files
(``Launching skill: NAME`` as the result, the skill's text as a block of its own after it, its folder first)."""

from __future__ import annotations

import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.inline import Inline, api_of, scripted_model
from tests.session_kw import create as create_session
from workflows.commands import load_commands
from workflows.models import SessionRecord, UserEntry
from workflows.models.commands import CommandDefinition
from workflows.tools.skill import LISTING_HEADER, Skill, SkillInput, skill_listing

GREET = "---\nname: greet\ndescription: Greets the user warmly.\n---\n\n# Greet\n\nSay Ahoy to $ARGUMENTS\n"


def skill(root, folder: str, text: str):
    path = root / ".claude" / "skills" / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def command(root, name: str, text: str):
    path = root / ".claude" / "commands" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def home(tmp_path):
    d = tmp_path / "home"
    d.mkdir()
    return d


# ---------------------------------------------------------------------------------------------- files


def test_skills_are_read_from_their_folders_and_listed_before_the_commands(tmp_path, home):
    ws = tmp_path / "ws"
    skill(ws, "greet", GREET)
    skill(ws, "folder-name", "---\ndescription: Named by its folder\n---\nbody\n")
    command(ws, "bye", "---\ndescription: Say bye\n---\nSay bye to $ARGUMENTS\n")
    found = load_commands(str(ws), str(home))
    assert list(found.commands) == ["folder-name", "greet", "bye"] and found.problems == []
    greet = found.commands["greet"]
    assert greet.skill_dir == str(ws / ".claude" / "skills" / "greet") and greet.description == "Greets the user warmly."
    assert found.commands["bye"].skill_dir == ""


def test_a_skill_wins_over_a_command_and_a_user_skill_over_a_project_skill(tmp_path, home):
    ws = tmp_path / "ws"
    skill(ws, "review", "---\ndescription: project skill\n---\nx\n")
    command(ws, "review", "y\n")
    skill(home, "review", "---\ndescription: user skill\n---\nz\n")
    found = load_commands(str(ws), str(home))
    assert found.commands["review"].description == "user skill"
    assert any("a skill wins over a command" in p for p in found.problems)
    assert any("a user skill wins over a project skill" in p for p in found.problems)


def test_a_skill_with_a_bad_name_or_frontmatter_is_left_out_with_a_reason(tmp_path, home):
    ws = tmp_path / "ws"
    skill(ws, "bad", "---\nname: no spaces allowed\n---\nx\n")
    skill(ws, "broken", "---\ndescription: never closed\nx\n")
    (ws / ".claude" / "skills" / "no-file").mkdir()
    found = load_commands(str(ws), str(home))
    assert found.commands == {}
    assert any("bad/SKILL.md: left out" in p and "'name'" in p for p in found.problems)
    assert any("broken/SKILL.md" in p and "never closed" in p for p in found.problems)


# ---------------------------------------------------------------------------------------------- the tool


def defs(tmp_path, home, **files) -> dict[str, CommandDefinition]:
    for name, text in files.items():
        skill(tmp_path / "ws", name, text)
    return load_commands(str(tmp_path / "ws"), str(home)).commands


def test_the_tool_loads_the_skill_text_with_its_folder_first(tmp_path, home):
    commands = defs(tmp_path, home, greet=GREET)
    out = Skill().apply(SessionRecord(id="s", model="m", workspace="/ws"), SkillInput(skill="greet", args="Jo"), commands=commands)
    assert out.content == "Launching skill: greet" and not out.is_error
    assert out.followup == (f"Base directory for this skill: {tmp_path / 'ws' / '.claude' / 'skills' / 'greet'}\n\n"
                            "# Greet\n\nSay Ahoy to Jo\n")


def test_unknown_person_only_and_shell_line_skills_are_refused_with_the_reason(tmp_path, home):
    from workflows.exceptions import ToolError

    commands = defs(tmp_path, home, greet=GREET, deploy="---\ndisable-model-invocation: true\n---\nDeploy\n",
                    status="Status: !`git status`\n")
    rec = SessionRecord(id="s", model="m", workspace="/ws")
    with pytest.raises(ToolError, match=r"^Unknown skill: gret\. Did you mean greet\?$"):
        Skill().apply(rec, SkillInput(skill="gret"), commands=commands)
    with pytest.raises(ToolError, match="disable-model-invocation"):
        Skill().apply(rec, SkillInput(skill="deploy"), commands=commands)
    with pytest.raises(ToolError, match=r"ask the user to type /status"):
        Skill().apply(rec, SkillInput(skill="status"), commands=commands)
    assert "deploy" not in skill_listing(commands) and "- greet: Greets the user warmly." in skill_listing(commands)


def test_allowed_tools_hold_for_the_run_but_not_from_an_untrusted_repository(tmp_path, home):
    commands = defs(tmp_path, home, lint="---\nallowed-tools: Bash(ruff check:*)\n---\nLint it\n")
    rec = SessionRecord(id="s", model="m", workspace="/ws")
    Skill().apply(rec, SkillInput(skill="lint"), commands=commands)
    assert [r.rule for r in rec.run_allow] == ["Bash(ruff check:*)"]
    untrusted = SessionRecord(id="t", model="m", workspace="/ws", untrusted_workspace=True)
    out = Skill().apply(untrusted, SkillInput(skill="lint"), commands=commands)
    assert untrusted.run_allow == [] and "not trusted" in out.display


# ---------------------------------------------------------------------------------------------- the engine


def test_a_skill_call_sends_the_result_and_the_skill_text_in_one_user_message(engine, tmp_path, home):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    skill(ws, "greet", GREET)
    model = scripted_model(Script(turns=[Turn(tool_uses=[ToolUse(name="Skill", input={"skill": "greet",
                                                                                        "args": "Jo"})]),
                                         Turn(text="Ahoy Jo")]))
    rec = create_session(engine, str(ws), model=model, auto_memory=False, home=str(home))
    assert engine.refresh_commands(rec.id) == []
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "greet me"))
    inline.drain()
    first, second = api_of(model).requests
    assert "Skill" in [t["name"] for t in first["tools"]]
    listing = [b["text"] for b in first["messages"][0]["content"] if LISTING_HEADER in b.get("text", "")]
    assert listing and "- greet: Greets the user warmly." in listing[0]
    result, text = second["messages"][-1]["content"]
    assert result["type"] == "tool_result" and result["content"] == "Launching skill: greet"
    assert text["type"] == "text" and text["text"].startswith("Base directory for this skill: ")
    assert text["text"].endswith("# Greet\n\nSay Ahoy to Jo\n")
    skills = [e for e in engine.store.entries(rec.id) if isinstance(e, UserEntry) and e.origin == "skill"]
    assert len(skills) == 1 and engine.store.get_session(rec.id).state.value == "idle"


def test_without_skills_or_commands_no_skill_tool_is_offered(engine, tmp_path, home):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    model = scripted_model(Script(turns=[Turn(text="hi")]))
    rec = create_session(engine, str(ws), model=model, auto_memory=False, home=str(home))
    engine.refresh_commands(rec.id)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "hello"))
    inline.drain()
    (request,) = api_of(model).requests
    assert "Skill" not in [t["name"] for t in request["tools"]]
    assert not any(LISTING_HEADER in b.get("text", "") for b in request["messages"][0]["content"])


def test_a_person_typing_the_skill_gets_its_folder_first_too(tmp_path, home):
    from workflows.commands import expand

    commands = defs(tmp_path, home, greet=GREET)
    run = expand(commands["greet"], "/greet Jo", "Jo")
    assert run.texts == [f"Base directory for this skill: {tmp_path / 'ws' / '.claude' / 'skills' / 'greet'}\n\n"
                         "# Greet\n\nSay Ahoy to Jo\n"]
