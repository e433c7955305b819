"""Settings: Mainsail's own (the environment, ``MAINSAIL_*``) and Claude Code's settings files.

Modules, lowest first (each imports only those above it in this list):

* :mod:`~workflows.settings.env`: the one :class:`Settings` object from the environment and flags
  (what ``from workflows.settings import Settings`` gives);
* :mod:`~workflows.settings.errors`: :class:`~workflows.settings.errors.SettingsError` and the helpers
  that name a file's line;
* :mod:`~workflows.settings.managed`: the machine's managed (policy) settings files;
* :mod:`~workflows.settings.layers`: which settings files a session reads, lowest precedence first;
* :mod:`~workflows.sessions.session_keys`: ``model``, ``env`` and ``additionalDirectories``;
* :mod:`~workflows.sessions.settings_files`: every layer read into one
  :class:`~workflows.sessions.settings_files.PermissionSettings`.

Two pieces they build on stay with the decisions they serve, so imports run one way:
:mod:`workflows.trust.gated` (the project keys read only in a trusted workspace; the trust decision
uses it, and it reads git's index) and :mod:`workflows.permissions.bypass` (``disableBypassPermissionsMode``
and whether a session may run in bypassPermissions, which :func:`~workflows.permissions.decide` asks).
"""

from workflows.settings.env import Settings, get_settings, load_settings

__all__ = ["Settings", "get_settings", "load_settings"]
