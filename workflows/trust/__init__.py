"""Workspace trust: a project's own settings that can run code or widen access apply only once the person
trusted the workspace (:mod:`~workflows.settings.gated` says which keys, :mod:`~workflows.trust.gated` gathers them; :mod:`~workflows.trust.decide` decides;
:mod:`~workflows.trust.store` records it with a content hash; :mod:`~workflows.git.index` tells a
tracked ``settings.local.json`` without running git). :mod:`workflows.mcp.trusted` holds an ``.mcp.json``
server to the command that was trusted."""
