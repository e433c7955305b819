"""Notifications that find people: webhooks when a session starts waiting for approval, finishes or fails.

- :mod:`workflows.notify.subscriptions`: who wants which events, where (a Slack incoming webhook, or any URL
  that takes a POST signed with a shared secret), for one API token's sessions or one workspace's.
- :mod:`workflows.notify.events`: the events, read off each commit's entries;
- :mod:`workflows.notify.outbox`: the commit records them in an outbox in its own atomic write; the committing
  process, or the reaper's sweep if it died, sends a Celery task per (event, subscription) once (tasks/notify.py),
  which delivers it with retries and backoff.
- :mod:`workflows.notify.delivery`: the bodies (Slack ``text``/``blocks``; the generic JSON), the signature
  and the POST (no redirects followed).
"""
