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
COPY server server
# EXTRAS=flower adds Flower (the compose file's optional `flower` profile builds its image so).
ARG EXTRAS=""
RUN pip install --no-cache-dir ".${EXTRAS:+[$EXTRAS]}"
ENTRYPOINT []
CMD ["mainsail", "worker"]
