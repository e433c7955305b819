"""The raw Redis client stays inside the store modules (issue 27): every other module says what it means
through a named store verb.

A static check over the product packages, by the syntax tree. Outside :data:`STORE_MODULES` a module may
not import redis-py (the errors it catches come from :mod:`workflows.store.resilience`, the clients from
:mod:`workflows.store.client`), call a Redis command on a name that holds a client (``r``, ``client``,
``redis``...), or reach into a store for its client (``store.r``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("workflows", "tasks", "server", "cli", "statemachines")

#: The modules that hold the Redis client: the store and the feature stores (once gathered into a
#: ``workflows/store/`` package, everything under it counts too).
STORE_MODULES = frozenset({
    "workflows/store/redis_store.py", "workflows/store/streams.py", "workflows/store/steps.py", "workflows/store/client.py",
    "workflows/store/memory.py", "workflows/store/checkpoints.py", "workflows/store/live.py",
    "workflows/store/keys.py", "workflows/store/fenced.py", "workflows/store/leases.py", "workflows/store/registry.py",
    "workflows/store/resilience.py", "workflows/store/schedules.py", "workflows/store/shells.py",
    "workflows/store/api_tokens.py", "workflows/store/metrics.py",
})
STORE_PACKAGE = "workflows/store/"


#: Names a Redis client goes by in this code base.
CLIENT_NAMES = frozenset({"r", "redis", "client", "rc", "ar", "aredis"})
#: redis-py's command methods (the common ones; enough to catch a raw call).
COMMANDS = frozenset("""
    get set getset mget mset setnx incr incrby expire pexpire ttl pttl exists delete unlink keys scan scan_iter
    dump type rename hget hset hsetnx hmget hgetall hkeys hvals hdel hexists hincrby hlen
    lpush rpush lpop rpop lrange lrem llen ltrim sadd srem smembers sismember scard
    zadd zrem zrange zrevrange zrangebyscore zrevrangebyscore zscore zcard zcount zscan_iter
    xadd xrange xrevrange xread xlen xdel xtrim publish eval evalsha pipeline lock ping info client_list
    memory_usage flushdb flushall
""".split())
#: A ``client`` may be an HTTP client (cli/remote): its verbs are not counted on that name.
HTTP_VERBS = frozenset({"get", "delete"})


def _last_name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def raw_uses(tree: ast.AST) -> list[str]:
    """Where a module's syntax tree uses Redis directly: ``line: what``."""
    out = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "redis" for a in node.names):
            what = "imports redis"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "redis":
            what = f"imports from {node.module}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in COMMANDS:
            name = _last_name(node.func.value)
            if name in CLIENT_NAMES and not (name == "client" and node.func.attr in HTTP_VERBS):
                what = f"calls {name}.{node.func.attr}()"
        elif isinstance(node, ast.Attribute) and node.attr in ("r", "redis"):
            name = _last_name(node.value)
            if name and name.endswith("store"):
                what = f"takes {name}.{node.attr}"
        if what:
            out.append(f"{getattr(node, 'lineno', 0)}: {what}")
    return out


def _modules() -> dict[str, list[str]]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in STORE_MODULES or rel.startswith(STORE_PACKAGE):
                continue
            found[rel] = raw_uses(ast.parse(path.read_text(encoding="utf-8"), rel))
    return found


def test_no_module_outside_the_store_uses_the_redis_client():
    offenders = {rel: uses for rel, uses in _modules().items() if uses}
    assert not offenders, "raw Redis use outside the store modules (add a named store verb instead):\n" + "\n".join(
        f"  {rel}:{use}" for rel, uses in sorted(offenders.items()) for use in uses)


def test_the_check_sees_each_kind_of_raw_use():
    code = """
import redis
from redis.exceptions import RedisError
r.hgetall("k")
self.store.r.zrem("k", "m")
client.pipeline(transaction=False)
x = engine.store.r
"""
    uses = sorted(u.split(": ", 1)[1] for u in raw_uses(ast.parse(code)))
    assert uses == ["calls client.pipeline()", "calls r.hgetall()", "calls r.zrem()", "imports from redis.exceptions",
                    "imports redis", "takes store.r", "takes store.r"]
    assert raw_uses(ast.parse("store.tokens().records()\nclient.get('/api/sessions')\nrow.get('x')")) == []


def test_every_store_module_exists():
    missing = sorted(rel for rel in STORE_MODULES if not (ROOT / rel).exists())
    assert not missing or (ROOT / STORE_PACKAGE).is_dir(), f"no such module (the list is out of date): {missing}"
