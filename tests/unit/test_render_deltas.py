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


def test_a_late_read_of_a_prompt_and_its_replys_first_deltas_renders_them_in_order(fake_redis):
    """A follower whose first read comes after the model began streaming gets the prompt's entry and the
    reply's first deltas in one batch: printed by their stream ids, the prompt's line does not cut the
    reply in two ("Answer\\n to: x")."""
    from cli.follow import follow
    from workflows.models import Message, ResultEntry, UserEntry, entry_json
    from workflows.store import keys
    from workflows.store.redis_store import Store

    store = Store(fake_redis)
    sid = "s"
    prompt = UserEntry(sessionId=sid, message=Message(role="user", content="x"), origin="prompt")
    fake_redis.xadd(keys.log(sid), {"entry": entry_json(prompt)}, id="1000-0")
    store.publish(sid, {"type": "text", "step": "st1", "attempt": 1, "text": "Answer"})  # ids now: after 1000
    fake_redis.xadd(keys.live(sid), {"type": "text", "step": "st1", "attempt": "1", "text": " to: x"})
    done = ResultEntry(sessionId=sid, result="Answer to: x", num_turns=1)
    fake_redis.xadd(keys.log(sid), {"entry": entry_json(reply("Answer to: x"))})
    fake_redis.xadd(keys.log(sid), {"entry": entry_json(done)})
    buf = io.StringIO()
    r = Renderer(Console(file=buf, width=120, color_system=None))
    r.show_prompts = True
    from cli import feed as feed_module

    real = feed_module.Store.last_live_id
    feed_module.Store.last_live_id = lambda self, s: "0-0"  # the follower came late: every delta is news
    try:
        follow(store, sid, on_entry=r.entry, on_delta=r.delta, stop=lambda e: isinstance(e, ResultEntry),
               on_silence=lambda quiet: None)
    finally:
        feed_module.Store.last_live_id = real
    r.close()
    out = buf.getvalue()
    assert "> x\nAnswer to: x\n" in out, out


def test_a_memory_note_committed_while_a_reply_streams_waits_for_the_replys_line_to_end():
    """CI printed "Answer to: Say\\n✎ Memory extraction: ...\\n hello to you": the previous turn's extraction
    committed between two deltas of the next reply, and entries and deltas print in stream order."""
    from workflows.models import SystemEntry

    buf = io.StringIO()
    r = Renderer(Console(file=buf, width=120, color_system=None))
    r.delta("st1", 1, "Answer to: Say")
    r.entry(SystemEntry(session_id="s", subtype="memory", content="Memory extraction: nothing new to save."))
    r.delta("st1", 1, " hello to you")
    r.entry(reply("Answer to: Say hello to you"))
    r.close()
    assert buf.getvalue() == "Answer to: Say hello to you\n✎ Memory extraction: nothing new to save.\n"


def test_a_memory_note_held_for_a_reply_that_never_ended_still_prints_at_close():
    from workflows.models import SystemEntry

    buf = io.StringIO()
    r = Renderer(Console(file=buf, width=120, color_system=None))
    r.delta("st1", 1, "Answer")
    r.entry(SystemEntry(session_id="s", subtype="memory", content="Memory extraction: nothing new to save."))
    r.close()
    assert buf.getvalue() == "Answer\n✎ Memory extraction: nothing new to save.\n"
