"""The base of the engine's parts: each is handed the committer (and with it the store and settings) and
the other parts it declares, nothing more.

:class:`workflows.engine.Engine` makes every part with the one :class:`~workflows.commit.Committer`, then
connects each to the parts it uses (parts call each other both ways: a turn asks for approval, a decided
approval goes on with the turn's tool calls). A part names the others by their Protocols
(:mod:`workflows.commit.peers`), so no part's module imports another's.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workflows.commit.committer import Committer


class Part:
    """One part of the engine. The other parts it calls are its class's annotated attributes, named as the
    engine's and typed by their role (``turns: peers.Turns``, :mod:`workflows.commit.peers`); :meth:`connect`
    hands them over."""

    def __init__(self, committer: Committer) -> None:
        self.committer = committer
        self.store = committer.store
        self.settings = committer.settings

    @classmethod
    def uses(cls) -> list[str]:
        """The names of the other parts this part calls: the annotated attributes of its classes."""
        names: list[str] = []
        for klass in reversed(cls.__mro__[:cls.__mro__.index(Part)]):
            names += [name for name in inspect.get_annotations(klass) if name not in names]
        return names

    def connect(self, parts: dict[str, Part]) -> None:
        """Hand this part the other parts it calls (:meth:`uses`), from the engine's ``parts`` by name."""
        for name in self.uses():
            setattr(self, name, parts[name])
