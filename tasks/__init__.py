"""Celery: the app, thin step tasks, dispatch, the reaper, worker start-up."""
