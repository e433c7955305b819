"""Values computed once per object and kept exactly as long as the object lives.

Transcript entries are append-only and never changed once written, and the store's per-process
entry cache (``Store.cached_entries``) hands out the same entry objects step after step; so what
is derived from an entry (its API-shaped content blocks) can be computed once and reused. Entries
are pydantic models: not hashable, so they cannot key a ``WeakKeyDictionary``; an :class:`ObjectMemo`
keys by ``id()`` and checks identity through a weak reference, so a value is never served for
another object that came to reuse a dead one's id.
"""

from __future__ import annotations

import weakref
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class ObjectMemo(Generic[T]):
    """``get(obj)``: ``compute(obj)``, computed on first use and dropped when ``obj`` is collected.

    Thread-safe under the GIL: two threads may both compute a value for a new object (the same
    value: ``compute`` must be a pure function of an object that does not change); neither can get
    another object's value. Callers must treat the values as read-only: they are shared.
    """

    def __init__(self, compute: Callable[[object], T]) -> None:
        self._compute = compute
        self._values: dict[int, tuple[weakref.ref, T]] = {}

    def get(self, obj: object) -> T:
        key = id(obj)
        hit = self._values.get(key)
        if hit is not None and hit[0]() is obj:
            return hit[1]
        value = self._compute(obj)
        self._values[key] = (weakref.ref(obj, self._forget(key)), value)
        return value

    def __len__(self) -> int:
        return len(self._values)

    def _forget(self, key: int) -> Callable[[weakref.ref], None]:
        def drop(ref: weakref.ref) -> None:
            hit = self._values.get(key)
            if hit is not None and hit[0] is ref:  # not a newer object's value under a reused id
                self._values.pop(key, None)

        return drop
