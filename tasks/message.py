"""A Celery task message as kombu's Redis transport puts it on a queue, made without loading Celery or kombu.

A command that only sends steps (``mainsail -p``, ``run``, ``approve``, ``send``) would otherwise import
Celery, kombu and their dependencies (~50 ms of a command's start, bench/README.md) to push one JSON
document onto a Redis list. The message is Celery's task protocol 2 in kombu's envelope, field for field and
in the same order as ``app.send_task(name, args=..., queue=..., ignore_result=True)`` makes it on the
default exchange (the routing key is the queue's name; no priority: the queue's own list).
``tests/integration/test_task_message.py`` holds it to what kombu makes, on a real Redis, and has a Celery
worker run one.

Only what Mainsail sends: positional string arguments, no ETA, no expiry, no result.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import uuid

#: Celery's own ``argsrepr`` limit (``Celery.conf.task_protocol`` 2: ``saferepr(args, 1024)``).
ARGSREPR_MAX = 1024


def origin() -> str:
    """The sender's name as Celery's ``anon_nodename`` gives it (``gen<pid>@<host>``)."""
    return f"gen{os.getpid()}@{socket.gethostname()}"


def _truncate(s: str, maxlen: int) -> str:
    # celery.utils.text.truncate
    if maxlen and len(s) >= maxlen:
        return s[:maxlen].rsplit(" ", 1)[0] + "..."
    return s


def argsrepr(args: list[str], maxlen: int = ARGSREPR_MAX) -> str:
    """Celery's ``saferepr(args, maxlen)`` of a flat list of strings: its ``argsrepr`` header (what logs and
    Flower show). Strings are quoted as it quotes them (only ``'`` escaped) and the text is cut as it cuts it
    (``tests/unit/test_task_message_unit.py`` compares the two over generated lists)."""
    # Tokens: (text, skipped when cut, nesting direction) for the brackets and commas; the strings as they are.
    tokens: list[tuple[str, bool, int] | str] = [("[", False, +1)]
    for i, a in enumerate(args):
        if i:
            tokens.append((", ", True, 0))
        tokens.append(a)
    tokens.append(("]", False, -1))
    out: list[str] = []
    left = maxlen
    for i, tok in enumerate(tokens):
        if left <= 0:
            if isinstance(tok, tuple) and tok[2] < 0:
                out.append(tok[0])
                continue
            out.append(", ...")
            depth = 0
            for rest in tokens[i:]:  # (the closing brackets still owed)
                if isinstance(rest, tuple) and not rest[1]:
                    depth += rest[2]
                    if depth < 0:
                        depth = 0
                        out.append(rest[0])
            break
        text = tok[0] if isinstance(tok, tuple) else "'{}'".format(_truncate(tok, left).replace("'", "\\'"))
        out.append(text)
        left -= len(text)
    return "".join(out)


def task_message(task: str, args: list[str], queue: str, task_id: str | None = None) -> str:
    """The JSON kombu pushes for ``send_task(task, args=args, queue=queue, ignore_result=True)``.

    Raises:
        TypeError: an argument is not a string (Celery's ``argsrepr`` of anything else is not ``repr``).
    """
    if not all(isinstance(a, str) for a in args):
        raise TypeError(f"task_message takes string arguments only, not {[type(a).__name__ for a in args]}")
    tid = task_id or str(uuid.uuid4())
    body = json.dumps([list(args), {}, {"callbacks": None, "errbacks": None, "chain": None, "chord": None}])
    message = {
        "body": base64.b64encode(body.encode("utf-8")).decode("ascii"),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {
            "lang": "py", "task": task, "id": tid, "shadow": None, "eta": None, "expires": None, "group": None,
            "group_index": None, "retries": 0, "timelimit": [None, None], "root_id": tid, "parent_id": None,
            "argsrepr": argsrepr(list(args)), "kwargsrepr": "{}", "origin": origin(), "ignore_result": True,
            "replaced_task_nesting": 0, "stamped_headers": None, "stamps": {},
        },
        "properties": {
            "correlation_id": tid,
            "reply_to": str(uuid.uuid4()),
            "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue},
            "priority": 0,
            "body_encoding": "base64",
            "delivery_tag": str(uuid.uuid4()),
        },
    }
    return json.dumps(message)


__all__ = ["argsrepr", "origin", "task_message"]
