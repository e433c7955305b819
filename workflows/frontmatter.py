"""Markdown files with YAML frontmatter (memory records, agent files, custom commands): one reader.

The file opens with a line ``---``, then the frontmatter, then a line ``---``, then the body (a byte
order mark before it is ignored). Each kind of file says what its fields mean; this module only
finds the block and, for the strict kinds, reads it as a YAML mapping.
"""

from __future__ import annotations

import re

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)


def split_frontmatter(text: str) -> tuple[str, str] | None:
    """``(frontmatter, body)`` of ``text``, or None when it does not open with a closed ``---`` block."""
    text = text.lstrip("\ufeff")
    m = _FRONTMATTER.match(text)
    if m is None:
        return None
    return m.group(1), text[m.end():]


def yaml_mapping(block: str, where: str, error: type[Exception]) -> dict:
    """The frontmatter ``block`` as a YAML mapping (empty: ``{}``).

    Raises:
        error: the block is not YAML, or not ``key: value`` lines; the message names ``where``.
    """
    import yaml  # (~20 ms to load: where a frontmatter is read, not in every process that imports this)

    try:
        fields = yaml.safe_load(block) if block.strip() else {}
    except yaml.YAMLError as exc:
        raise error(f"{where}: the frontmatter is not valid YAML ({exc}).") from None
    if fields is None:
        return {}
    if not isinstance(fields, dict):
        raise error(f"{where}: the frontmatter must be 'key: value' lines.")
    return fields


def flag(value, key: str, where: str, error: type[Exception]) -> bool:
    """A true/false field (``key``) as YAML or as the text ``true``/``false``; absent: False.

    Raises:
        error: any other value; the message names ``where``, ``key`` and the value.
    """
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise error(f"{where}: '{key}' must be true or false, not {value!r}.")


def read_file(path, limit: int, problems: list[str]) -> str | None:
    """The text of a markdown file of at most ``limit`` bytes; None, with a problem naming it, for a bigger or
    unreadable one (it is left out)."""
    try:
        if path.stat().st_size > limit:
            problems.append(f"{path}: left out: larger than {limit // 1024} KiB.")
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: left out: cannot be read as UTF-8 text ({exc}).")
        return None


__all__ = ["flag", "read_file", "split_frontmatter", "yaml_mapping"]
