FROM python:3.11-slim
# bubblewrap: the OS sandbox of Bash commands. It needs user namespaces: run the worker container with
# --security-opt seccomp=unconfined --security-opt apparmor=unconfined (the worker warns at start-up otherwise).
RUN apt-get update && apt-get install -y --no-install-recommends git ripgrep bubblewrap && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY statemachines statemachines
COPY workflows workflows
COPY tasks tasks
COPY cli cli
RUN pip install --no-cache-dir .
ENTRYPOINT []
CMD ["mainsail", "worker"]
