"""An edit's diff at the terminal (the prompt, ``pending``, ``watch``): the lines
:mod:`workflows.edits.preview` made when the call asked, coloured as ``git diff`` colours them
(on a terminal only: click and rich drop the colours elsewhere), then its note."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.text import Text

PAD = "    "


def styled_lines(diff: str, note: str) -> list[tuple[str, str]]:
    """(line, colour) for each line to show; colour is a click/rich colour name or ""."""
    out: list[tuple[str, str]] = []
    for line in diff.split("\n") if diff else []:
        if line.startswith(("+++", "---")):
            colour = "bright_black"
        elif line.startswith("+"):
            colour = "green"
        elif line.startswith("-"):
            colour = "red"
        elif line.startswith("@@"):
            colour = "cyan"
        else:
            colour = ""
        out.append((line, colour))
    if note:
        out.append((f"({note})", "yellow"))
    return out


def echo_diff(diff: str, note: str, *, err: bool = True, pad: str = PAD) -> None:
    """Print the diff and its note with click, indented by ``pad``."""
    for line, colour in styled_lines(diff, note):
        click.echo(pad + (click.style(line, fg=colour) if colour else line), err=err)


def diff_text(diff: str, note: str, *, pad: str = PAD) -> Text:
    """The diff and its note as one rich ``Text`` (for the renderer); empty when there is neither."""
    from rich.text import Text  # (here: `pending` prints diffs with click alone)

    text = Text()
    for line, colour in styled_lines(diff, note):
        text.append("\n" + pad)
        text.append(line, style=colour or None)
    return text
