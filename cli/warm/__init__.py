"""Warm start: a command runs in a fork of an interpreter that has the engine loaded already.

``mainsail`` spends most of its start importing (Celery, the SDK, pydantic's schemas, ~950 modules).
The warm server (server.py) is a Python process that imported all of that once and then only waits on a
Unix socket. The ``mainsail`` console script (client.py, standard library only) connects, hands over its
argv, its environment, its umask, its current directory and its standard streams (the descriptors
themselves, SCM_RIGHTS), and the server forks a child that becomes the command: same arguments, same
environment, same directory, same terminal. The client forwards its signals to that child and leaves with
its exit status. Nothing runs in the server itself: a fork per command, and the command's code is the one
``mainsail`` runs without the server (cli.main.main), so there is no second way into a session.

The server serves only the same user in the same confinement (namespaces, root, cgroup, credentials,
capabilities, seccomp, limits, security label: confinement.py); anything else runs without it, as it would
have. See docs/warm-start.md.
"""
