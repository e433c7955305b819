"""The background shells' Redis contract on fakeredis."""

from __future__ import annotations

import pytest

from tests.shell_store_contract import ShellStoreContract


class TestShellStoreFakeRedis(ShellStoreContract):
    @pytest.fixture
    def r(self, fake_redis):
        return fake_redis
