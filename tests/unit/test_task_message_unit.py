"""The ``argsrepr`` header a send without Celery writes (tasks/message.py) is Celery's ``saferepr`` of the
arguments, over generated lists of strings (quotes, backslashes, spaces, long values cut at 1,024)."""

from __future__ import annotations

import random

import pytest
from celery.utils.saferepr import saferepr

from tasks.message import ARGSREPR_MAX, argsrepr

ALPHABET = "ab '\"\\\n\té€😀 -{}[],:"


def _text(rng: random.Random) -> str:
    n = rng.choice([0, 1, 5, 40, 300, 1000, 1023, 1024, 1025, 3000])
    return "".join(rng.choice(ALPHABET) for _ in range(n))


@pytest.mark.parametrize("seed", range(40))
def test_argsrepr_is_celerys_saferepr(seed):
    rng = random.Random(seed)
    for _ in range(25):
        args = [_text(rng) for _ in range(rng.choice([0, 1, 2, 3, 5]))]
        assert argsrepr(args) == saferepr(args, ARGSREPR_MAX), args
        small = rng.choice([1, 3, 10, 50])
        assert argsrepr(args, small) == saferepr(args, small), (args, small)
