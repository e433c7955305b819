"""Valid text at the store boundary: every string Mainsail writes to Redis is valid UTF-8.

A Python ``str`` can hold what UTF-8 cannot encode: a lone surrogate (U+D800..U+DFFF), as JSON's
``"\\udc80"`` from the Messages API decodes, or as ``os`` and ``surrogateescape`` decode bytes that are
not UTF-8 (a file name, a command's output, an argv). Such a string stored as escaped JSON can never be
read back (JSON parsers refuse a lone surrogate escape), and sent raw it makes the Redis client raise.

The repair is decided here, once, for everything: each unencodable code point becomes U+FFFD, and the
caller is told where (a transcript entry keeps that in its ``repaired`` field, which ``show``, ``export``
and the console show). Lone surrogates are the only code points a ``str`` holds that UTF-8 cannot encode.

- :func:`repair`: a JSON-like value (dicts, lists, strings) repaired, with the places repaired.
- :class:`ValidJson`: the base of every stored model; its JSON is repaired if it has to be (the plain
  path costs nothing), and a transcript entry notes where.
- :func:`valid_str`: one string repaired.
- :data:`REPAIR_ERRORS`: a codec error handler (``"mainsail.repair"``) giving U+FFFD, set on every Redis
  client Mainsail makes (``encoding_errors``): the net under everything that writes a raw string.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticSerializationError

REPLACEMENT = "\ufffd"
_UNENCODABLE = re.compile("[\ud800-\udfff]")
#: Places named in a note, at most (a value with thousands of bad strings still gets a short note).
MAX_PLACES = 20
REPAIR_ERRORS = "mainsail.repair"
_REPLACEMENT_UTF8 = REPLACEMENT.encode()


def _replace_unencodable(exc: UnicodeError):
    # (As bytes: the UTF-8 encoder takes a str replacement only if it is ASCII.)
    if isinstance(exc, UnicodeEncodeError) and exc.encoding.replace("-", "").lower() == "utf8":
        return _REPLACEMENT_UTF8 * (exc.end - exc.start), exc.end
    raise exc


codecs.register_error(REPAIR_ERRORS, _replace_unencodable)


def valid_str(text: str) -> str:
    """``text`` with each code point UTF-8 cannot encode replaced by U+FFFD."""
    return _UNENCODABLE.sub(REPLACEMENT, text)


def repair(value: Any, where: str = "") -> tuple[Any, list[str]]:
    """``value`` (JSON-like: dicts, lists, tuples, strings, scalars) with every string, keys included,
    made valid (:func:`valid_str`), and the places repaired (``message.content.0.input.file_path``;
    a key's place ends with ``{key}``). Unchanged parts are returned as they are."""
    places: list[str] = []
    return _repair(value, where, places), places


def _repair(value: Any, where: str, places: list[str]) -> Any:
    if isinstance(value, str):
        if _UNENCODABLE.search(value) is None:
            return value
        places.append(where or "(text)")
        return valid_str(value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            here = f"{where}.{k}" if where else str(k)
            if isinstance(k, str) and _UNENCODABLE.search(k):
                places.append(f"{valid_str(here)}{{key}}")
                k, here = valid_str(k), valid_str(here)
            out[k] = _repair(v, here, places)
        return out
    if isinstance(value, (list, tuple)):
        return [_repair(v, f"{where}.{i}" if where else str(i), places) for i, v in enumerate(value)]
    return value


def note(places: list[str]) -> list[str]:
    """The places of a repair as kept in a note: the first :data:`MAX_PLACES`, then how many more."""
    if len(places) <= MAX_PLACES:
        return places
    return places[:MAX_PLACES] + [f"... and {len(places) - MAX_PLACES} more"]


def repair_note(places: list[str]) -> str:
    """What a transcript view says of an entry whose text was repaired."""
    return ("text repaired: characters UTF-8 cannot encode (lone surrogates) were stored as U+FFFD in "
            + ", ".join(places))


class ValidJson(BaseModel):
    """A stored model: its ``model_dump_json`` never fails on text UTF-8 cannot encode, it repairs it.

    Where pydantic's encoder refuses a string (a lone surrogate), the model's data is repaired
    (:func:`repair`), :meth:`note_repair` may note where, and that is the JSON. The plain path costs
    nothing (a ``try``). Every model Mainsail writes to Redis derives from it."""

    model_config = ConfigDict(defer_build=True)

    def model_dump_json(self, **dump: Any) -> str:
        try:
            return super().model_dump_json(**dump)
        except PydanticSerializationError:
            indent = dump.pop("indent", None)
            dump.pop("ensure_ascii", None)
            data, places = repair(self.model_dump(mode="json", **dump))
            # (pydantic's JSON mode already replaced what a dict key could not encode, with U+FFFD for
            # each byte of it: such a key's place is lost, and named "(a key)".)
            return dumps(self.note_repair(data, places or ["(a key)"]), indent)

    def note_repair(self, data: dict, places: list[str]) -> dict:
        """The repaired ``data`` as stored; a model that keeps a note of a repair adds it here."""
        return data


def dumps(data: Any, indent: int | None = None) -> str:
    """JSON with non-ASCII text as UTF-8, compact unless ``indent``, as pydantic writes it (``data``
    already valid)."""
    return json.dumps(data, ensure_ascii=False, indent=indent, separators=None if indent else (",", ":"))
