"""Notifications that find people: webhooks when a session starts waiting for approval, finishes or fails.

- :mod:`workflows.notify.subscriptions`: who wants which events, where (a Slack incoming webhook, or any URL
  that takes a POST signed with a shared secret), for one API token's sessions or one workspace's.
- :mod:`workflows.notify.events`: the events, read off each landed commit's entries by an observer of the
  committer in every process that commits; it hands each (event, subscription) to a sender (tasks/notify.py
  sends a Celery task that delivers it, with retries and backoff, once per subscription).
- :mod:`workflows.notify.delivery`: the bodies (Slack ``text``/``blocks``; the generic JSON), the signature
  and the POST (no redirects followed).
"""
