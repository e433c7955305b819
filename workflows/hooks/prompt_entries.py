"""Which transcript entry shows that a prompt's run began: what a client following a session it sent a prompt
to looks for. Kept apart from the hooks' runner (which loads the shell tool) so that a client loads only this."""

from __future__ import annotations

import hashlib

from workflows.models import HookEntry, SystemEntry, UserEntry
from workflows.models.valid_text import valid_str

__all__ = ["is_entry_of_prompt", "prompt_digest", "starts_run"]


def prompt_digest(prompt: str) -> str:
    """What a UserPromptSubmit ``hook`` entry keeps of its prompt: enough for a client to know its own."""
    return hashlib.sha256(valid_str(prompt).encode()).hexdigest()


def is_entry_of_prompt(entry, prompt: str) -> bool:
    """Whether ``entry`` shows that the run of ``prompt`` began: its user entry, its prompt hooks' verdict
    (a blocked prompt has no user entry), or, for a custom command, the entry that marks its start (its
    prompt comes once its lines ran, if they do). ``prompt`` as sent: the stored text is valid UTF-8
    (workflows/models/valid_text.py), so it is compared repaired as well."""
    prompt = valid_str(prompt)
    if isinstance(entry, UserEntry):
        return entry.origin in ("prompt", "inbox") and (entry.command or entry.message.text()) == prompt
    if isinstance(entry, SystemEntry):
        return entry.subtype == "command" and entry.content == prompt
    return isinstance(entry, HookEntry) and entry.prompt_sha256 == prompt_digest(prompt)


def starts_run(entry) -> bool:
    """Whether ``entry`` is where a run's own entries begin: its prompt, or a custom command's start."""
    if isinstance(entry, UserEntry):
        return entry.origin in ("prompt", "inbox") and entry.command is None
    return isinstance(entry, SystemEntry) and entry.subtype == "command" and entry.content.startswith(("/",
                                                                                                     "<bash-input>"))
