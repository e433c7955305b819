"""What a session does: models, store, engine, tools, model calls. Never imports tasks/."""
