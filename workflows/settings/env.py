"""One settings object, read from the environment (``MAINSAIL_*``) and flags.

pydantic-settings does the parsing and validation so every setting has one
name, one type and one default, and an invalid value is reported by name.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from workflows.exceptions import ConfigurationError


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "mainsail"


class Settings(BaseSettings):
    """Mainsail's configuration. Every field reads ``MAINSAIL_<NAME>`` unless noted."""

    # An empty variable is an unset one (``env_ignore_empty``): docker-compose's ``X: ${X:-}`` passes "" for
    # everything the host leaves unset, and "" is never a useful URL, key, model or number.
    model_config = SettingsConfigDict(env_prefix="MAINSAIL_", extra="ignore", populate_by_name=True,
                                      env_ignore_empty=True)

    redis_url: str | None = Field(
        default=None,
        description="Redis for store, queues and locks. Unset: localhost:6379 if it answers, else embedded.",
    )
    server: str | None = Field(
        default=None,
        description="A team server (https://host:8750): the session commands (submit, watch, sessions, show, "
        "send, cancel, pending, approve, deny) go through its HTTP API instead of Redis (cli/remote/).",
    )
    token: SecretStr | None = Field(
        default=None, description="The API token (mst_...) sent to MAINSAIL_SERVER; never printed.")
    allow_http: bool = Field(
        default=False,
        description="Let MAINSAIL_SERVER be plain http:// to a host other than this machine (the token then "
        "crosses the network unencrypted: only on a network you trust).",
    )
    task_events: bool = Field(
        default=False,
        description="Workers send Celery task events and answer remote control, for Flower (off by default: "
        "every task then publishes a few more messages to Redis; docs/metrics.md).",
    )
    local_redis_url: str | None = Field(
        default=None,
        description="A Redis tried when MAINSAIL_REDIS_URL is unset, before the embedded one. Unset: none, not "
        "even localhost:6379: a Redis found there is another application's (often without a password, so "
        "anyone on the machine could read the sessions or queue commands), never used unless named.",
    )
    redis_ca_file: Path | None = Field(
        default=None,
        description="CA certificates (PEM) that signed a rediss:// server's certificate; unset: the system's CAs.",
    )
    redis_server_bin: str = Field(
        default="redis-server",
        description="The binary for the embedded Redis; `none`: use an in-process fakeredis server instead.",
    )
    model: str = Field(
        default="default",
        description="Model for new sessions. The default is Claude Code's (2.1.332, with an API key): the `default` "
        "alias, which is opus (claude-opus-5-5, or ANTHROPIC_DEFAULT_OPUS_MODEL).")
    anthropic_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_API_KEY", "MAINSAIL_ANTHROPIC_API_KEY")
    )
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL", "MAINSAIL_ANTHROPIC_BASE_URL")
    )
    anthropic_custom_headers: str | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_CUSTOM_HEADERS", "MAINSAIL_ANTHROPIC_CUSTOM_HEADERS"),
        description="Headers sent with every model call, one `Name: Value` a line (as Claude Code's).")
    max_tokens: int = Field(default=8192, ge=1, description="max_tokens of each model call.")
    api_max_retries: int = Field(default=4, ge=0, description="SDK retries on 429/5xx/529 (honours retry-after).")
    api_timeout_seconds: float = Field(default=600.0, gt=0)

    lease_seconds: float = Field(default=30.0, gt=0, description="How long a claimed step is ours without a heartbeat.")
    heartbeat_seconds: float | None = Field(default=None, gt=0, description="Default: a third of the lease.")
    pickup_timeout_seconds: float = Field(
        default=60.0, gt=0, description="A pending step nobody claimed by then is dispatched again."
    )
    max_attempts: int = Field(default=3, ge=1, description="Attempts of one step before it fails for good.")
    reaper_interval_seconds: float = Field(default=5.0, gt=0)
    lock_timeout_seconds: float = Field(default=30.0, gt=0, description="Session lock expiry.")
    lock_wait_seconds: float = Field(default=10.0, gt=0, description="How long to wait for the session lock.")

    # Scheduled sessions (`mainsail beat`, docs/schedules.md).
    beat_max_interval_seconds: float = Field(
        default=5.0, gt=0,
        description="How often the beat reads the schedules from Redis at most (a new or changed schedule is "
        "seen within this time); the follower beats try to take the leader's lock this often too.")
    beat_lock_timeout_seconds: float | None = Field(
        default=None, gt=0,
        description="The leader's lock expiry: a dead leader is replaced within this time. Default: 5 x "
        "MAINSAIL_BEAT_MAX_INTERVAL_SECONDS.")
    beat_late_seconds: float = Field(
        default=30.0, gt=0,
        description="A firing this much later than its due time says so in its session (it was missed while "
        "the beat or the workers were down).")

    bash_default_timeout_ms: int = Field(default=120_000, gt=0)
    bash_max_timeout_ms: int = Field(default=600_000, gt=0)
    bash_max_output_chars: int = Field(default=30_000, gt=0)
    bash_background_output_chars: int = Field(
        default=1_000_000, gt=0,
        description="Characters of a background shell's output Redis keeps (its latest); BashOutput says when "
        "unread output was dropped.")
    shell_ttl_seconds: float = Field(
        default=5.0, gt=0,
        description="A background shell whose worker has not renewed it for this long is lost.")
    mcp_timeout_seconds: float = Field(
        default=30.0, gt=0, description="How long an MCP server may take to start and answer (connect, list tools).")
    mcp_tool_timeout_seconds: float = Field(default=600.0, gt=0, description="How long one MCP tool call may run.")
    mcp_idle_seconds: float = Field(
        default=600.0, gt=0,
        description="A worker stops a pooled MCP server (shared by a workspace's sessions) unused this long.")
    mcp_max_output_chars: int = Field(
        default=100_000, gt=0,
        description="An MCP tool result past this is saved in the workspace; the model gets a preview and the path.")

    checkpoint_max_bytes: int = Field(
        default=2 * 1024 * 1024, ge=0,
        description="Files up to this size are checkpointed before an edit tool changes them (/rewind); a larger "
        "one is not kept, and a rewind names it as not restored (0: no content is kept; created files are still "
        "noted).")
    max_turns: int | None = Field(default=None, ge=1, description="Stop a session after this many model turns.")
    auto_compact: bool = Field(default=True, description="Compact automatically past the threshold.")
    autocompact_pct_override: float | None = Field(
        default=None, gt=0, le=100, description="Auto-compact at this percentage of the effective window."
    )
    compact_max_failures: int = Field(default=3, ge=1, description="Auto-compact stops after this many failures.")
    tool_result_limits: dict[str, int] = Field(
        default={"Bash": 30_000, "Grep": 20_000, "Glob": 20_000},
        description="Past this many characters a tool's full result is saved and the model gets a preview.",
    )
    permission_mode: str | None = Field(
        default=None, description="Mode of new sessions; unset: the settings files' defaultMode, else default."
    )
    approval_timeout_seconds: float | None = Field(
        default=None, gt=0, description="Deny a permission request nobody answered in this time."
    )
    session_memory: bool = Field(default=True, description="Keep a running session summary (a background fork).")
    session_titles: bool = Field(
        default=True, description="After a session's first turn, ask the small model for its title (else: the prompt).")
    quick_tools: bool = Field(
        default=True,
        description="A model step whose worker serves the tools queue runs the reply's quick calls (Read) "
        "itself and records them with the reply, in one commit; false: every call runs on a tool step.",
    )
    session_memory_init_tokens: int = Field(
        default=10_000, ge=0, description="Context tokens before the first session-memory update.")
    session_memory_update_tokens: int = Field(
        default=5_000, ge=0, description="Context growth (tokens) between session-memory updates.")
    session_memory_tool_calls: int = Field(
        default=10, ge=0, description="Tool calls between updates (or a turn without tool calls).")
    auto_memory: bool = Field(default=True, description="Extract durable memories after each final answer.")
    claude_transcripts: bool = Field(
        default=True, description="Also write each session made at a terminal as Claude Code's JSONL under "
        "~/.claude/projects ($CLAUDE_CONFIG_DIR/projects), where `claude --resume` and the Agent SDK find it.")
    memory_fork_max_turns: int = Field(default=5, ge=1, description="Model turns of one memory fork.")
    extract_wait_seconds: float = Field(
        default=2.0, gt=0, description="Retry delay of an extraction while another of the project runs.")
    memory_index_lines: int = Field(default=200, ge=0, description="Lines of MEMORY.md loaded into new sessions.")
    retention_days: float | None = Field(
        default=None, gt=0,
        description="Workers remove idle sessions inactive for this many days (at most hourly); unset: never.")
    data_dir: Path = Field(default_factory=_default_data_dir, description="Embedded Redis data, logs.")
    embedded_worker: bool = Field(default=True, description="Run a worker in the CLI when none is listening.")
    worker_concurrency: int = Field(default=8, ge=1)
    worker_heartbeat_seconds: float = Field(
        default=0.5, gt=0, description="How often a worker refreshes its liveness (its registration).")
    worker_ttl_seconds: float = Field(
        default=2.0, gt=0,
        description="A worker silent this long is dead: the reaper takes back the steps it held at once.")
    worker_dead_confirm_seconds: float = Field(
        default=2.0, ge=0,
        description="A worker's registration must stay expired this long before its reaper-side take-back: a "
                    "live worker starved of CPU (its registration late) is not mistaken for a dead one, whose "
                    "model calls would then be made twice.")
    public_url: str = Field(
        default="http://127.0.0.1:8750",
        description="Where people reach the team server's console (https://mainsail.example.com): the base of "
        "the links notifications carry (a link opens the session in the console; never with a token).")
    notify_backoff_seconds: float = Field(
        default=5.0, ge=0,
        description="A failed notification is sent again after this, doubled at each attempt (5 s, 10 s, 20 s...).")
    notify_outbox_grace_seconds: float = Field(
        default=10.0, ge=0,
        description="A notification its committing process did not send (it died right after the commit) is "
                    "sent by the reaper's sweep this long after the commit.")
    notify_attempts: int = Field(
        default=8, ge=1, description="A notification is tried at most this many times per subscription.")
    worker_lost_seconds: float = Field(
        default=30.0, gt=0,
        description="A worker whose registration stays expired this long while its Redis connection stays open "
                    "is taken for a lost host (whose connections never close) and its steps are taken back; "
                    "a worker whose process dies closes its connection and is taken back at once.")
    durable_claims: bool = Field(
        default=True,
        description="Before a mutating call's effect (Bash, Edit...), wait until its step's claim is on Redis's "
                    "disk (WAITAOF, or appendfsync always). Off, a host crash that loses the AOF's last second can "
                    "run a command twice: only for measuring that (bench/host_crash.py --no-durable).")
    redis_retry_seconds: float = Field(
        default=30.0, ge=0,
        description="How long the step path (claim, commit, dispatch) retries a Redis error, and a CLI command waits "
                    "for a Redis that is there but silent (paused, stopped, loading), before it gives up.")
    standby_check_seconds: float = Field(
        default=2.0, gt=0, description="How often a waiting CLI checks that a live worker serves its queues.")

    @property
    def heartbeat_interval(self) -> float:
        return self.heartbeat_seconds or max(self.lease_seconds / 3.0, 0.05)


def load_settings(**overrides) -> Settings:
    """Settings from the environment, with non-None ``overrides`` (from flags) on top.

    Raises:
        ConfigurationError: a value does not validate; the message names the variable.
    """
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**clean)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            name = "MAINSAIL_" + "_".join(str(p) for p in err["loc"]).upper()
            lines.append(f"{name}: {err['msg']} (got {err.get('input')!r})")
        raise ConfigurationError("Invalid configuration:\n  " + "\n  ".join(lines)) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return load_settings()
