"""A worker process, once ready, freezes what it built starting up and collects less often (tasks/worker.py)."""

from __future__ import annotations

import gc

from tasks import worker


def test_settle_heap_freezes_the_startup_objects_and_raises_the_thresholds():
    before = gc.get_threshold()
    try:
        worker.settle_heap()
        assert gc.get_freeze_count() > 10_000  # this process's modules, schemas and the like
        assert gc.get_threshold() == worker.GC_THRESHOLDS
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)

