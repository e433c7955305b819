"""A model request's JSON body, each shared block encoded once.

A request is mostly what the previous one was: the same system blocks and tool schemas, and the
same messages with one turn more. Context assembly (``workflows/context/assemble.py``) builds those blocks
once per transcript entry (or per session) and shares them, read-only, as :class:`Block`; a Block
keeps its JSON text once encoded, so the body of the next call is those texts joined, plus the few
new or changed blocks, not the whole conversation encoded again. Given to the SDK as the request's
``content``, it also spares the SDK its own deep copy of the request tree before encoding it
(``anthropic._utils._prepare``), which grew with the conversation as well.

The bytes are what the SDK itself would send: ``json.dumps`` with ``ensure_ascii=False``, compact
separators and no NaN, UTF-8 encoded; but where the SDK would raise on text UTF-8 cannot encode (a lone
surrogate, which the store repairs but a value built in memory may still hold), each such code point is
sent as U+FFFD (workflows/models/valid_text.py): a request body can always be built.
"""

from __future__ import annotations

import copy
import json
from json.encoder import encode_basestring  # (the C one where there is one, as JSONEncoder uses)
from operator import is_

from workflows.models.valid_text import REPAIR_ERRORS

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                            default=lambda o: _jsonable(o))


def _jsonable(value: object) -> object:
    """What the SDK's preparation turns a non-JSON value into (a pydantic model: its JSON-mode dump)."""
    dump = getattr(value, "model_dump", None)
    if dump is None:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
    return dump(mode="json", exclude_none=True)


class Block(dict):
    """A dict shared by many requests, read-only: its JSON is encoded on first use and kept (as UTF-8).
    Changing one in place raises TypeError; put a changed copy in its place (``{**block, ...}``; a
    copy or deep copy of a Block is a plain dict)."""

    __slots__ = ("_json", "__weakref__")

    def json(self) -> bytes:
        try:
            return self._json
        except AttributeError:
            self._json = _utf8(_ENCODER.encode(self))
            return self._json

    def _read_only(self, *args, **kwargs):
        raise TypeError("a shared Block is read-only: put a changed copy in its place")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only

    def __copy__(self) -> dict:
        return dict(self)

    def __deepcopy__(self, memo: dict) -> dict:
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self):
        return (Block, (dict(self),))


class Messages(list):
    """A request's ``messages`` that comes with the JSON of its leading messages (see :func:`lead`).

    A long conversation's request repeats the previous request's messages, a thousand of them after
    a few hundred turns: walking them to find each one's JSON costs more with each turn. Context
    assembly keeps the JSON pieces of the messages that cannot change any more and hands them over
    with the list; the body takes them in one step and walks only the few messages after them. The
    pieces are used only while the list still starts with exactly those message objects (checked by
    identity: a list changed in place, or copied, is encoded message by message, as any list is)."""

    _lead: tuple = ()
    _lead_parts: tuple = ()


def lead(messages: list, first: tuple, parts: tuple) -> Messages:
    """``messages`` as :class:`Messages` whose first ``len(first)`` messages are the objects ``first``,
    ``parts`` their JSON in pieces (the messages' JSON and the commas between them)."""
    out = Messages(messages)
    out._lead, out._lead_parts = first, parts
    return out


def json_parts(messages, after: bool = False) -> list[bytes]:
    """The JSON of ``messages``, comma-separated, in pieces to join (with a comma first when they come
    ``after`` others)."""
    out: list[bytes] = []
    for m in messages:
        if out or after:
            out.append(b",")
        _parts(m, out)
    return out


def dumps(value: object) -> bytes:
    """``value`` as UTF-8 JSON, reusing the kept JSON of every :class:`Block` in it (the pieces are
    joined once, at the end: a long conversation's body is copied once, not once per nesting level)."""
    parts: list[bytes] = []
    _parts(value, parts)
    return b"".join(parts)


def _parts(value: object, out: list[bytes]) -> None:
    kind = type(value)
    if kind is Block:
        out.append(value.json())
    elif kind is Messages or (kind is list and value and type(value[0]) in (dict, Block)
                              and value[0].keys() == _MESSAGE_KEYS):
        _messages(value, out)
    elif kind is dict:
        out.append(b"{")
        for i, (k, v) in enumerate(value.items()):
            out.append(_key(k) if i == 0 else b"," + _key(k))
            _parts(v, out)
        out.append(b"}")
    elif kind is list or kind is tuple:
        out.append(b"[")
        for i, v in enumerate(value):
            if i:
                out.append(b",")
            _parts(v, out)
        out.append(b"]")
    elif kind is str:
        out.append(_utf8(encode_basestring(value)))
    else:
        out.append(_utf8(_ENCODER.encode(value)))


_MESSAGE_KEYS = {"role", "content"}
_ROLES = {"user": b'{"role":"user","content":[', "assistant": b'{"role":"assistant","content":['}


def _messages(messages: list, out: list[bytes]) -> None:
    """A ``messages`` list, on a short path for the usual message (a role, and content blocks that are
    all shared Blocks): one join per message; after the kept JSON of its leading messages, for a
    :class:`Messages` list that still starts with them."""
    out.append(b"[")
    start = 0
    first = messages._lead if type(messages) is Messages else ()
    if first and len(messages) >= len(first) and all(map(is_, messages, first)):
        out.extend(messages._lead_parts)
        start = len(first)
    for i in range(start, len(messages)):
        m = messages[i]
        if i:
            out.append(b",")
        if type(m) is Block:  # a message shared by every request of its transcript (workflows/context/assemble.py)
            out.append(m.json())
            continue
        content = m.get("content") if type(m) is dict and m.keys() == _MESSAGE_KEYS else None
        head = _ROLES.get(m.get("role")) if type(content) in (list, tuple) else None
        if head is not None and all(type(b) is Block for b in content):
            out.append(head + b",".join([b.json() for b in content]) + b"]}")
        else:
            _parts(m, out)
    out.append(b"]")


_KEYS: dict[str, bytes] = {}


def _key(key: str) -> bytes:
    """A key's JSON and its colon (the same few keys recur in every message)."""
    text = _KEYS.get(key)
    if text is None:
        text = _utf8(_ENCODER.encode(key) + ":")
        if len(_KEYS) < 1024:
            _KEYS[key] = text
    return text


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8, a code point it cannot encode as U+FFFD (the error handler runs only then)."""
    return text.encode("utf-8", REPAIR_ERRORS)


def body(request: dict) -> bytes:
    """The streaming Messages API body for ``request`` (the keyword arguments of ``messages.stream``)."""
    return dumps({**request, "stream": True})
