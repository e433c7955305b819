"""Settings: Mainsail's own (the environment, ``MAINSAIL_*``) and Claude Code's settings files.

Modules, lowest first (each imports only those above it in this list):

* :mod:`~workflows.settings.env`: the one :class:`Settings` object from the environment and flags
  (what ``from workflows.settings import Settings`` gives);
* :mod:`~workflows.settings.errors`: :class:`~workflows.settings.errors.SettingsError` and the helpers
  that name a file's line;
* :mod:`~workflows.settings.managed`: the machine's managed (policy) settings files;
* :mod:`~workflows.settings.reserved`: the ``env`` names a settings file never sets for a command;
* :mod:`~workflows.settings.gated`: the project keys read only in a trusted workspace, and whether a
  ``settings.local.json`` is the project's (it reads git's index);
* :mod:`~workflows.settings.layers`: which settings files a session reads, lowest precedence first.

Above them, in the session room: :mod:`~workflows.sessions.session_keys` (``model``, ``env`` and
``additionalDirectories``) and :mod:`~workflows.sessions.settings_files` (every layer read into one
:class:`~workflows.sessions.settings_files.PermissionSettings`).

Two pieces stay with the decisions they serve, so imports run one way: :mod:`workflows.trust.gated`
(what a workspace holds of the gated keys, which the trust decision hashes) and
:mod:`workflows.permissions.bypass` (``disableBypassPermissionsMode`` and whether a session may run in
bypassPermissions, which :func:`~workflows.permissions.decide` asks).
"""

from workflows.settings.env import Settings, get_settings, load_settings

__all__ = ["Settings", "get_settings", "load_settings"]
