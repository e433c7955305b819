"""Preload as the warm server does (cli/warm/preload.py), then write every loaded module's state as JSON.

Run by tests/integration/test_warm_preload.py in processes of different environments, directories and
argv: a value that differs between them was computed at import from what a command's process will have
otherwise, and the warm server would hand the server's to every command.

    python warm_state_dump.py OUT [ENV_JSON DIR]

With ENV_JSON and DIR, the process then becomes a command as the server's fork does (cli/warm/server.py's
``_become``): the environment ENV_JSON names, DIR as its directory, ``preload.after_fork``; and dumps that.
"""

from __future__ import annotations

import enum
import functools
import json
import os
import re
import sys
import types
from pathlib import PurePath

ADDRESS = re.compile(r" at 0x[0-9a-f]+|0x[0-9a-f]{6,}")
SIMPLE = (str, bytes, int, float, bool, type(None), complex)
CODE = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType, type,
        functools.partial, staticmethod, classmethod, property, types.MethodDescriptorType,
        types.WrapperDescriptorType, types.GetSetDescriptorType, types.MemberDescriptorType)


def state(value, depth: int = 0, seen: set | None = None):
    """A JSON picture of ``value``: simple values as they are, containers and objects' attributes to a depth."""
    seen = set() if seen is None else seen
    if isinstance(value, SIMPLE):
        return value if not isinstance(value, bytes) else value.decode("latin-1")
    if isinstance(value, (PurePath, enum.Enum)):
        return str(value)
    if isinstance(value, CODE) or callable(value) and hasattr(value, "__code__"):
        return "<code>"
    if hasattr(value, "cache_info") and callable(value.cache_info):
        return f"<cached: {value.cache_info().currsize} entries>"
    if depth > 3 or id(value) in seen:
        return f"<{type(value).__name__}>"
    seen.add(id(value))
    if isinstance(value, dict):
        return {str(k): state(v, depth + 1, seen) for k, v in list(value.items())[:200]}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)[:200]
        if isinstance(value, (set, frozenset)):
            items = sorted(items, key=lambda v: ADDRESS.sub("", repr(v)))  # (addresses vary run to run)
        return [state(v, depth + 1, seen) for v in items]
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        return {"<type>": type(value).__name__, **{k: state(v, depth + 1, seen) for k, v in list(attrs.items())[:200]}}
    return ADDRESS.sub("", repr(value))[:500]


def main(out: str, become: list[str]) -> None:
    import time

    from cli.warm import preload

    preload.begin()
    preload.load()
    if become:
        env, directory = json.loads(become[0]), become[1]
        os.chdir(directory)
        os.environ.clear()
        os.environ.update(env)
        time.tzset()
        preload.after_fork()
    dump = {"sys.path": sys.path, "environ_keys": None}
    for name, module in sorted(sys.modules.items()):
        if module is None or name == "__main__":
            continue
        for attr, value in sorted(vars(module).items()):
            if attr.startswith("__") and attr not in ("__all__",):
                continue
            try:
                dump[f"{name}.{attr}"] = json.loads(json.dumps(state(value), default=str))
            except Exception as exc:  # (a value whose picture cannot be taken is named, not skipped)
                dump[f"{name}.{attr}"] = f"<unpictured: {type(exc).__name__}>"
    extensions = sorted({name for name, m in sys.modules.items() if m is not None
                         and str(getattr(m, "__file__", "")).endswith((".so", ".pyd"))})
    with open(out, "w") as f:
        json.dump({"state": dump, "extensions": extensions, "pid": os.getpid()}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
