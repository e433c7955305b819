"""Git, read without running a program: a workspace's state, and keeping Mainsail's local files out of git."""
