"""The terminal renderer shows a reply whole even when some of its streamed deltas never reached it."""

from __future__ import annotations

import io

from rich.console import Console

from cli.render import Renderer
from workflows.models import AssistantEntry, AssistantMessage, TextBlock


def reply(text: str) -> AssistantEntry:
    return AssistantEntry(session_id="s", step_id="st1", message=AssistantMessage(content=[TextBlock(text=text)]))


def render(deltas: list[str], text: str) -> str:
    buf = io.StringIO()
    r = Renderer(Console(file=buf, width=120, color_system=None))
    for d in deltas:
        r.delta("st1", 1, d)
    r.entry(reply(text))
    r.close()
    return buf.getvalue()


def test_all_deltas_then_the_entry_print_the_text_once():
    assert render(["Answer ", "to: x"], "Answer to: x") == "Answer to: x\n"


def test_missed_deltas_are_made_up_from_the_entry():
    assert render(["", "Answer "], "Answer to: x") == "Answer to: x\n"  # the tail was missed
    assert render(["other"], "Answer to: x") == "other\nAnswer to: x\n"  # nothing matches: the whole reply
    assert render([], "Answer to: x") == "Answer to: x\n"
