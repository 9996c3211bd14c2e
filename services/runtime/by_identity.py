"""A bounded memo keyed by an object's identity, for values worked out from objects that
are not hashable (a dict, a frozen event holding one) and never change once made."""

from __future__ import annotations

from typing import Generic, TypeVar

V = TypeVar("V")


class ByIdentity(Generic[V]):
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        # id -> (the object itself, its value): holding the object keeps its id from being
        # reused by another one while the entry lives.
        self._entries: dict[int, tuple[object, V]] = {}

    def get(self, key: object) -> V | None:
        kept = self._entries.get(id(key))
        return kept[1] if kept is not None and kept[0] is key else None

    def put(self, key: object, value: V) -> None:
        if len(self._entries) >= self.capacity:
            self._entries.clear()  # simpler than LRU, and a miss only costs working it out again
        self._entries[id(key)] = (key, value)
