FROM python:3.11-slim
# bubblewrap: the OS sandbox of Bash commands. It needs user namespaces: run the worker container with
# --security-opt seccomp=unconfined --security-opt apparmor=unconfined (the worker warns at start-up otherwise).
RUN apt-get update && apt-get install -y --no-install-recommends git ripgrep bubblewrap strace && rm -rf /var/lib/apt/lists/*
# chromium: only for running the web console's browser tests in this image (--build-arg WITH_CHROMIUM=1);
# the server and workers never need a browser, so it stays out of the default image.
ARG WITH_CHROMIUM=0
RUN if [ "$WITH_CHROMIUM" = "1" ]; then apt-get update && apt-get install -y --no-install-recommends chromium \
    && rm -rf /var/lib/apt/lists/*; fi
WORKDIR /app
COPY pyproject.toml README.md ./
COPY statemachines statemachines
COPY workflows workflows
COPY tasks tasks
COPY cli cli
COPY demo demo
COPY server server
# EXTRAS=flower adds Flower (the compose file's optional `flower` profile builds its image so).
ARG EXTRAS=""
RUN pip install --no-cache-dir ".${EXTRAS:+[$EXTRAS]}"
# Not root: a process the sandbox or the checker let through gets an unprivileged user, not the container's
# root. /workspaces (the compose file's `workspaces` volume: a new named volume takes this folder's owner)
# and the user's home (the data dir, MCP and Claude Code settings) are its own.
RUN useradd --create-home --uid 10001 --user-group mainsail \
    && mkdir -p /workspaces && chown mainsail:mainsail /workspaces
USER mainsail
ENV HOME=/home/mainsail
# A worker's health (the image's default command): one of this container's workers is registered in Redis
# and renews its registration. docker-compose.yml sets the server's, the beat's and Flower's own.
HEALTHCHECK --interval=15s --timeout=10s --start-period=30s --retries=3 CMD ["python", "-m", "cli.health", "worker"]
ENTRYPOINT []
CMD ["mainsail", "worker"]
