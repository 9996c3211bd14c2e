"""What the authority answers (a match's facts, a seat taken, a move's result) and the statuses
a match goes through: plain values, shared by the authority's modules and their callers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from services.runtime.history import StoredEvent

WAITING = "WAITING_FOR_PLAYERS"
IN_PROGRESS = "IN_PROGRESS"
FINISHED = "FINISHED"
ABANDONED = "ABANDONED"
# A match still to be played: seats can be taken, left, rejoined and handed to bots.
LIVE = (WAITING, IN_PROGRESS)
# The last event of every match (an abandonment too ends with it).
FINAL_EVENT = "match_ended"


class WatchSink(Protocol):
    """Where ``MatchService.attach_watch`` hands a watch's events (PlayMatch's outbox)."""

    def started(self, version: int) -> None: ...

    def event(self, event: StoredEvent) -> None: ...

    def ended(self) -> None: ...

    def revoked(self) -> None: ...


@dataclass(frozen=True)
class MatchFacts:
    """Public facts of a match (the ``Match`` message)."""

    match_id: str
    game: str
    players: int
    status: str
    version: int
    seats: list[str | None]
    scores: list[int]
    winners: list[int]
    active_seats: list[int]
    # Bot level of each seat ("" for a player) and the turn clocks (services/runtime/tables.py).
    bots: list[str] = field(default_factory=list)
    # Each seat's presence (tables.Seats.connected / disconnected_since).
    connected: list[bool] = field(default_factory=list)
    disconnected_since: list[int] = field(default_factory=list)
    clocks: list[dict[str, int]] = field(default_factory=list)
    table: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Joined:
    seat: int
    token: str
    rejoin_key: str
    token_expires_ms: int
    facts: MatchFacts


@dataclass(frozen=True)
class MoveResult:
    version: int
    events: list[StoredEvent]
    active_seats: list[int]
    status: str
    # The caller's legal moves when it still has a decision.
    next_moves: list[dict[str, Any]] = field(default_factory=list)
