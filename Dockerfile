FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends git ripgrep && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY statemachines statemachines
COPY workflows workflows
COPY tasks tasks
COPY cli cli
RUN pip install --no-cache-dir .
ENTRYPOINT []
CMD ["mainsail", "worker"]
