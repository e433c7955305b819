"""Memory: a project's durable records and a session's running notes, where they may be read from, and the forks that write them."""
