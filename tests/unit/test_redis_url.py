"""Redis URLs with credentials and TLS, without a server: masking, the TLS options the
store client and the Celery broker get, and the messages for each way a connection fails."""

from __future__ import annotations

import ssl

import pytest

from cli.redis_probe import RedisProblem, mask_url, redis_error
from tasks.app import broker_ssl
from workflows.exceptions import ConfigurationError, StoreUnavailable
from workflows.store.client import tls_options, without_tls_query


@pytest.mark.parametrize("url, shown", [
    ("redis://alice:s3cr%40t@host:6379/0", "redis://alice:***@host:6379/0"),
    ("redis://:pw@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
    ("rediss://u:p@h:6380/1?ssl_cert_reqs=none", "rediss://u:***@h:6380/1?ssl_cert_reqs=none"),
    ("redis://h:6379/0?password=x", "redis://h:6379/0?password=***"),
    ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    ("redis://alice@h/0", "redis://alice@h/0"),
])
def test_mask_url_hides_only_the_password(url, shown):
    assert mask_url(url) == shown


def test_a_plain_url_has_no_tls_options():
    assert tls_options("redis://:pw@h:6379/0", "/ca.pem") is None
    assert broker_ssl("redis://:pw@h:6379/0") is None


def test_rediss_verifies_the_certificate_by_default():
    assert tls_options("rediss://:pw@h:6380/0") == {"ssl_cert_reqs": "required"}
    assert broker_ssl("rediss://:pw@h:6380/0", "/ca.pem") == {"ssl_cert_reqs": ssl.CERT_REQUIRED,
                                                               "ssl_ca_certs": "/ca.pem"}


def test_the_url_query_overrides_the_defaults():
    url = "rediss://:pw@h:6380/0?ssl_cert_reqs=CERT_NONE&ssl_ca_certs=/url-ca.pem&ssl_certfile=/c&ssl_keyfile=/k"
    assert tls_options(url, "/settings-ca.pem") == {"ssl_cert_reqs": "none", "ssl_ca_certs": "/url-ca.pem",
                                                   "ssl_certfile": "/c", "ssl_keyfile": "/k"}
    assert broker_ssl(url)["ssl_cert_reqs"] == ssl.CERT_NONE
    assert without_tls_query(url) == "rediss://:pw@h:6380/0"
    assert without_tls_query("redis://h/0?socket_timeout=3&ssl_cert_reqs=none") == "redis://h/0?socket_timeout=3"


def test_an_unknown_ssl_cert_reqs_is_refused():
    with pytest.raises(ValueError, match="ssl_cert_reqs='maybe'"):
        tls_options("rediss://h/0?ssl_cert_reqs=maybe")


def test_messages_name_the_masked_url_the_problem_and_the_fix():
    url = "redis://alice:hunter2@10.0.0.5:6379/0"
    auth = redis_error(url, RedisProblem("auth", "invalid username-password pair"))
    assert isinstance(auth, ConfigurationError)
    assert str(auth).startswith("Redis at redis://alice:***@10.0.0.5:6379/0 refused the connection: "
                                "authentication failed (invalid username-password pair). Set MAINSAIL_REDIS_URL")
    down = redis_error(url, RedisProblem("unreachable", "Connection refused"))
    assert isinstance(down, StoreUnavailable)
    assert "Could not connect to Redis at redis://alice:***@10.0.0.5:6379/0: is it running?" in str(down)
    tls = redis_error("rediss://:x@h/0", RedisProblem("tls", "certificate verify failed"))
    assert "MAINSAIL_REDIS_CA_FILE" in str(tls)
    for error in (auth, down, tls):
        assert "hunter2" not in str(error)
