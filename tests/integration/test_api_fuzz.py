"""The team server's API fuzzed from its own OpenAPI schema (schemathesis): every operation gets a bounded
number of generated requests (``EXAMPLES``, derandomized: the same requests on every run, no time
window), and every answer must be no server error and conform to the schema: a documented status, its
content type, headers and body. The app in-process (FastAPI's TestClient), a real Redis.

Two tokens: one for every workspace, which can create sessions and schedules (in ``/``, the one
directory a generator finds; the live stream is left out of its run, since a stream of a session that
exists never ends), and one restricted to a workspace the generator never names, for every operation.
schemathesis's own pytest plugin is not used: it does not run under pytest 9 (a node attribute it sets is
gone); each operation is a test here, and hypothesis runs its generated requests.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from server.app import create_app
from tasks.app import configure
from tests.integration.test_api_edges import tokens  # noqa: F401 (a fixture: a token for all, one for a workspace)
from workflows.engine import Engine
from workflows.store.redis_store import Store

pytestmark = pytest.mark.integration

#: Generated requests per operation and token: about 30 s for the whole API on a loaded 2-core machine,
#: the same requests on every run. MAINSAIL_FUZZ_EXAMPLES=300 (say) runs more, and new ones each time.
EXAMPLES = int(os.environ.get("MAINSAIL_FUZZ_EXAMPLES") or 30)
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance]


@pytest.fixture
def app(real_redis, redis_server, settings, monkeypatch):
    monkeypatch.setenv("MAINSAIL_REDIS_URL", redis_server.url)
    configure(redis_server.url)  # what a route dispatches goes to this test's Redis (no worker runs it)
    return create_app(Engine(Store(real_redis), settings), aredis=None)


#: The schema as the server serves it (its routes do not depend on the engine), an operation per test.
OPENAPI = create_app(None, aredis=None).openapi()
OPERATIONS = [(path, method.upper()) for path, ops in OPENAPI["paths"].items() for method in ops]
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="MAINSAIL_FUZZ_EXAMPLES" not in os.environ,
                database=None,
                suppress_health_check=list(HealthCheck))


def fuzz(app, path: str, method: str, headers: dict) -> None:
    """``EXAMPLES`` generated requests to one operation; the first failing check fails the test
    (hypothesis then shrinks it, and prints the request to reproduce)."""
    schema = schemathesis.openapi.from_dict(OPENAPI)
    schema.app = app  # requests go to the app in-process
    operation = schema[path][method]

    @FUZZ
    @given(case=operation.as_strategy())
    def run(case) -> None:
        case.call_and_validate(headers=headers, checks=CHECKS)

    run()


@pytest.mark.parametrize(("path", "method"), [op for op in OPERATIONS if not op[0].endswith("/events")],
                         ids=lambda v: v if v.startswith("/") else v)
def test_every_operation_answers_as_its_schema_says(app, tokens, path, method):
    fuzz(app, path, method, tokens["all"])


@pytest.mark.parametrize(("path", "method"), OPERATIONS, ids=lambda v: v if v.startswith("/") else v)
def test_every_operation_answers_a_restricted_token_as_its_schema_says(app, tokens, path, method):
    fuzz(app, path, method, tokens["scoped"])
