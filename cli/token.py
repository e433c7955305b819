"""``mainsail token``: API tokens of the team server (create, list, revoke).

A token is shown once, when created; Redis keeps only its SHA-256 (workflows/store/api_tokens.py).
"""

from __future__ import annotations

from datetime import datetime

import click

from cli.connect import connect
from workflows.settings import load_settings
from workflows.store.api_tokens import TokenStore


def _tokens() -> TokenStore:
    return connect(load_settings()).store.tokens()


@click.group("token")
def token() -> None:
    """API tokens for `mainsail serve` (who may read, decide and act through the HTTP API)."""


@token.command("create")
@click.option("--name", required=True, help="Who or what uses it (alice, ci-nightly): shown in approvals.")
@click.option("--read-only", is_flag=True, help="May list, show and watch; never send, cancel, approve or deny.")
@click.option("--workspace", "workspaces", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Only sessions in this directory (and below); repeatable. Default: every workspace.")
@click.option("--allow-bypass", is_flag=True,
              help="May start (and send to) sessions in bypassPermissions mode. Default: refused (403).")
@click.option("--admin", is_flag=True,
              help="May approve writes to .claude/, .mcp.json, .mainsail/, .git/ and settings files (and "
                   "'always' rules allowing them). Default: refused (403).")
@click.option("--trust-project", is_flag=True,
              help="Its sessions trust their workspace's own settings (hooks, sandbox, env, allow rules, MCP "
                   "servers), as --trust-project at a terminal. Needs --workspace.")
def create(name: str, read_only: bool, workspaces: tuple[str, ...], allow_bypass: bool, admin: bool,
           trust_project: bool) -> None:
    """Create a token and print it (once: it cannot be shown again)."""
    secret, rec = _tokens().create(name, read_only=read_only, workspaces=list(workspaces),
                                   allow_bypass=allow_bypass, admin=admin, trust_project=trust_project)
    click.echo(secret)
    scope = ", ".join(rec.workspaces) if rec.workspaces else "every workspace"
    click.echo(f"Token {rec.name!r} ({_access(rec)}, {scope}). It is shown "
               "only now: keep it in a secret store. Use it as 'Authorization: Bearer <token>' or "
               "MAINSAIL_TOKEN for the CLI.", err=True)


@token.command("update")
@click.argument("name")
@click.option("--allow-bypass/--no-bypass", "allow_bypass", default=None,
              help="Let the token run sessions in bypassPermissions mode, or take that away.")
@click.option("--admin/--no-admin", "admin", default=None,
              help="Let the token approve protected writes (.claude/, .mcp.json, .mainsail/, .git/, settings), "
                   "or take that away.")
def update(name: str, allow_bypass: bool | None, admin: bool | None) -> None:
    """Change what token NAME may do (its secret stays the same)."""
    if allow_bypass is None and admin is None:
        raise click.UsageError("Say what to change: --allow-bypass/--no-bypass and/or --admin/--no-admin.")
    rec = _tokens().update(name, allow_bypass=allow_bypass, admin=admin)
    click.echo(f"Token {rec.name!r}: {_access(rec)}.")


def _access(rec) -> str:
    if rec.read_only:
        return "read-only"
    bypass = "bypassPermissions allowed" if rec.allow_bypass else "no bypassPermissions"
    admin = "admin (may approve protected writes)" if rec.admin else "not admin"
    return f"read-write, {bypass}, {admin}" + (", trusts its workspaces' settings" if rec.trust_project else "")


@token.command("list")
def list_tokens() -> None:
    """List tokens (names and rights; never the secrets)."""
    rows = _tokens().records()
    if not rows:
        click.echo("No API tokens. Create one with `mainsail token create --name NAME`.")
        return
    click.echo(f"{'NAME':<20} {'ACCESS':<10} {'BYPASS':<6} {'ADMIN':<5} {'CREATED':<17} {'LAST USED':<17} "
               "WORKSPACES")
    for t in rows:
        used = f"{datetime.fromtimestamp(t.last_used_at):%Y-%m-%d %H:%M}" if t.last_used_at else "never"
        bypass = "-" if t.read_only else ("yes" if t.allow_bypass else "no")
        admin = "-" if t.read_only else ("yes" if t.admin else "no")
        click.echo(f"{t.name:<20} {'read-only' if t.read_only else 'read-write':<10} {bypass:<6} {admin:<5} "
                   f"{datetime.fromtimestamp(t.created_at):%Y-%m-%d %H:%M}  {used:<17} "
                   f"{', '.join(t.workspaces) or '(all)'}")


@token.command("revoke")
@click.argument("name")
def revoke(name: str) -> None:
    """Revoke token NAME: every server refuses it from the next request on."""
    rec = _tokens().revoke(name)
    click.echo(f"Revoked token {rec.name!r}.")


__all__ = ["token"]
