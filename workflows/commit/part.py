"""The base of the engine's parts: each is handed the committer (and with it the store and settings) and
the other parts it names in ``uses``, nothing more.

:class:`workflows.engine.Engine` makes every part with the one :class:`~workflows.commit.Committer`, then
connects each to the parts it uses (parts call each other both ways: a turn asks for approval, a decided
approval goes on with the turn's tool calls).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workflows.commit.committer import Committer


class Part:
    """One part of the engine. ``uses``: the names of the other parts it calls (the engine's attributes)."""

    uses: tuple[str, ...] = ()

    def __init__(self, committer: Committer) -> None:
        self.committer = committer
        self.store = committer.store
        self.settings = committer.settings

    def connect(self, parts: dict[str, object]) -> None:
        """Hand this part the other parts it ``uses`` (each becomes an attribute of the same name)."""
        for name in self.uses:
            setattr(self, name, parts[name])
