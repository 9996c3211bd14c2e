"""Decoded match states this replica served, so a move need not read and decode its match.

An entry is one match's record and engine state as of one ``rev`` (the compare-and-set
counter every write bumps). It is a hint, never the truth: a move applied to a cached state
commits with that rev's compare-and-set, so a stale entry (another replica wrote since)
costs a conflict and a reload, never a wrong move; a read checks the rev it reads from Redis
against the entry's before using it.

Whoever changes an entry's objects (a move applies to the state in place) ``take``s it out
first, so no other call of this process sees it half changed, and ``put``s the result back
only once it is committed. ``peek``ed entries are read, never changed.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from services.runtime.record import MatchRecord

# Matches whose decoded state a replica keeps (least recently used ones go first).
DEFAULT_CAPACITY = 4096


@dataclass(frozen=True)
class CachedMatch:
    record: MatchRecord
    state: Any  # the engine's State, decoded from ``record.state``

    @property
    def rev(self) -> int:
        return self.record.rev


class StateCache:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, CachedMatch] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def peek(self, match_id: str, rev: int | None = None) -> CachedMatch | None:
        """The entry to read (at ``rev`` when given), left in place."""
        entry = self._entries.get(match_id)
        if entry is None or (rev is not None and entry.rev != rev):
            return None
        self._entries.move_to_end(match_id)
        return entry

    def take(self, match_id: str) -> CachedMatch | None:
        """The entry, removed: its caller may change it, and puts back what it committed."""
        return self._entries.pop(match_id, None)

    def put(self, record: MatchRecord, state: Any) -> None:
        """Keep ``state`` as ``record`` (at its rev), unless a newer rev is kept already."""
        match_id = record.match_id
        kept = self._entries.get(match_id)
        if kept is not None and kept.rev > record.rev:
            return
        self._entries[match_id] = CachedMatch(record, state)
        self._entries.move_to_end(match_id)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def evict(self, match_id: str) -> None:
        self._entries.pop(match_id, None)
