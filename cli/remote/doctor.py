"""``mainsail doctor`` through ``MAINSAIL_SERVER``: the server and the token, not this machine.

Commands then go through the server, so this machine's Redis, workers, key and sandbox do not
matter; they are skipped, and the report says so. What is checked: the server answers (and its
version against this CLI's), the token is valid (its name and scopes), and what the server reports
(``GET /api/status``) about its Redis, its live workers and whether they can call the model.
Same lines as the local doctor (cli/doctor.py): ✓ fine, ! worth fixing, ✗ broken (exit 1).
"""

from __future__ import annotations

from cli.doctor import FAIL, OK, WARN, Check, report
from cli.remote.client import Client, RemoteError, check_server_url
from server.api.status import version as cli_version
from workflows.exceptions import ConfigurationError
from workflows.settings import load_settings

#: The mark of a check not run (it counts neither as fine nor as a problem).
SKIP = "-"
SKIPPED = ("local checks (Redis, workers, API key, sandbox of this machine) skipped: MAINSAIL_SERVER is set, so "
           "commands run on the server; unset it to check this machine")


def doctor() -> None:
    report(server_checks())


def server_checks() -> list[Check]:
    """The checks of the server MAINSAIL_SERVER names, with MAINSAIL_TOKEN."""
    settings = load_settings()
    checks = [Check(SKIP, "Local", SKIPPED)]
    try:
        url = check_server_url(settings.server or "", settings.allow_http)
    except ConfigurationError as exc:
        return [*checks, Check(FAIL, "Server", str(exc))]
    token = settings.token.get_secret_value().strip() if settings.token is not None else ""
    with Client(url, token if token.isascii() and token.isprintable() else "") as client:
        try:
            status = client.get("/api/status")
        except RemoteError as exc:
            return [*checks, *_refused(url, exc, token)]
    return [*checks, *_reported(url, status)]


def _refused(url: str, exc: RemoteError, token: str) -> list[Check]:
    if exc.status is None or exc.status >= 500:
        return [Check(FAIL, "Server", str(exc)), Check(WARN, "Token", "cannot tell: the server did not answer")]
    reachable = Check(OK, "Server", f"{url} answers")
    if exc.status == 401:
        fix = ("MAINSAIL_TOKEN is not set: set it to your API token (the server's admin creates one with "
               "`mainsail token create --name NAME`)" if not token else str(exc))
        return [reachable, Check(FAIL, "Token", fix)]
    if exc.status == 404:
        return [Check(WARN, "Server", f"{url} answers but has no /api/status: it runs an older Mainsail than this "
                                      f"CLI ({cli_version()}); upgrade the server for a full report"),
                Check(WARN, "Token", "cannot tell on this server version")]
    return [reachable, Check(FAIL, "Token", str(exc))]


def _reported(url: str, s: dict) -> list[Check]:
    mine = cli_version()
    same = s["version"] == mine
    checks = [Check(OK if same else WARN, "Server", f"{url} answers: Mainsail {s['version']}"
                    + ("" if same else f", this CLI is {mine}: upgrade the older one"))]
    t = s["token"]
    scopes = ["read-only" if t["read_only"] else "read-write"]
    scopes += ["admin"] if t["admin"] else []
    scopes += ["bypassPermissions allowed"] if t["allow_bypass"] else []
    scopes += ["trusts its workspaces' settings"] if t["trust_project"] else []
    scopes.append("workspaces " + ", ".join(t["workspaces"]) if t["workspaces"] else "every workspace")
    checks.append(Check(OK, "Token", f"valid: {t['name']} ({'; '.join(scopes)})"))
    r = s["redis"]
    if r["version"] is None:
        checks.append(Check(WARN, "Redis", f"the server reaches its Redis; {r['detail'] or 'version unknown'}"))
    elif r["aof"]:
        checks.append(Check(OK, "Redis", f"the server's Redis {r['version']} answers; AOF is on"))
    else:
        checks.append(Check(WARN, "Redis", f"the server's Redis {r['version']} answers, but AOF is off: a Redis "
                                           "restart loses sessions (run it with --appendonly yes)"))
    checks += [_workers(s), _key(s)]
    return checks


def _workers(s: dict) -> Check:
    workers, missing = s["workers"], s["unserved_queues"]
    listed = ", ".join(f"{w['name']} ({','.join(w['queues'])})" for w in workers[:6])
    listed += f" and {len(workers) - 6} more" if len(workers) > 6 else ""
    if not missing:
        return Check(OK, "Workers", f"{len(workers)} live on the server: {listed}")
    have = f"{len(workers)} live: {listed}; " if workers else "none live; "
    return Check(FAIL, "Workers", f"{have}no worker serves {', '.join(missing)}, so sessions' steps wait: start "
                                  f"`mainsail worker` on the server's side (or `docker compose up`)")


def _key(s: dict) -> Check:
    model = [w for w in s["workers"] if "model" in w["queues"]]
    if not model:
        return Check(WARN, "API key", "cannot tell: no live worker serves queue model")
    able = [w for w in model if w["api_key"] is not False or w["base_url"]]
    if able:
        return Check(OK, "API key", f"{len(able)} of {len(model)} model worker(s) hold an API key or base URL")
    return Check(FAIL, "API key", "no worker serving queue model holds ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL: "
                                  "set it in the workers' environment and restart them")
