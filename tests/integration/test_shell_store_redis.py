"""The background shells' Redis contract on a real redis-server (the suite's private one)."""

from __future__ import annotations

import pytest

from tests.shell_store_contract import ShellStoreContract

pytestmark = pytest.mark.integration


class TestShellStoreRealRedis(ShellStoreContract):
    @pytest.fixture
    def r(self, real_redis):
        return real_redis
