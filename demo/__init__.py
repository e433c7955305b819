"""The demo and testing model: ``scripted:NAME`` models, answered in-process by a scripted Messages API.

Not part of the domain: :mod:`workflows` never imports it. Importing this package registers the
``scripted:`` provider (workflows/model/providers.py), which the program's composition roots do: the
CLI (``mainsail demo``, and any command given a scripted model) and the worker start-up. A scripted
model needs no credentials, costs nothing, has a 200k-token window, and answers a session's side calls
(its title, its memory forks) itself. The SDK and the scripts are imported at the first call only.
"""

from __future__ import annotations

from workflows.model.providers import ModelProvider, register

#: The prefix of the scripted models' names: ``scripted:demo``, ``scripted:read_loop:5``, ...
PREFIX = "scripted:"


def _client(model: str, settings):
    """A real SDK client whose calls the scripted API named by ``model`` answers in-process."""
    from demo import scripted

    return scripted.make_client(scripted.get_api(model.removeprefix(PREFIX)), max_retries=settings.api_max_retries)


#: The scripted models' provider.
PROVIDER = ModelProvider(PREFIX, _client, local=True, limits=(200_000, 64_000), prices=(0.0, 0.0, 0.0, 0.0))

register(PROVIDER)

__all__ = ["PREFIX", "PROVIDER"]
