"""One entry of a game's activity stream, as the game services write it after a commit.

Every field is a string (JSON for the lists and objects). Only seats bound to a player
(a non-empty player id, not a bot's seat) ever produce a notification or a rating.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from services.runtime.redis_client import text

NOTICES = ("your_turn", "match_started", "match_ended", "timed_out")
FINISHED = "FINISHED"
ABANDONED = "ABANDONED"


class BadEntry(ValueError):
    """An entry missing a field or carrying one that does not parse: logged and acknowledged."""


@dataclass(frozen=True)
class ActivityEntry:
    entry_id: str
    notice: str
    game: str
    match_id: str
    version: int
    at_ms: int
    players: list[str]
    bots: list[int]
    seats: list[int]
    deadlines: dict[int, int]
    status: str
    scores: list[int]
    winners: list[int]
    table: dict[str, Any]

    @classmethod
    def parse(cls, entry_id: Any, fields: dict[Any, Any]) -> ActivityEntry:
        raw = {text(k): text(v) for k, v in fields.items()}
        try:
            notice = raw["notice"]
            if notice not in NOTICES:
                raise BadEntry(f"notice: {notice!r} is none of {', '.join(NOTICES)}")
            return cls(
                entry_id=text(entry_id),
                notice=notice,
                game=raw["game"],
                match_id=raw["match_id"],
                version=int(raw["version"]),
                at_ms=int(raw["at_ms"]),
                players=[str(p) for p in json.loads(raw["players"])],
                bots=[int(s) for s in json.loads(raw.get("bots") or "[]")],
                seats=[int(s) for s in json.loads(raw.get("seats") or "[]")],
                deadlines={int(s): int(t) for s, t in json.loads(raw.get("deadlines") or "{}").items()},
                status=raw.get("status", ""),
                scores=[int(s) for s in json.loads(raw.get("scores") or "[]")],
                winners=[int(s) for s in json.loads(raw.get("winners") or "[]")],
                table=dict(json.loads(raw.get("table") or "{}")),
            )
        except (KeyError, ValueError, TypeError, AttributeError) as error:
            if isinstance(error, BadEntry):
                raise
            raise BadEntry(f"activity entry {text(entry_id)}: {error!r}") from None

    def player_of(self, seat: int) -> str:
        """The player bound to ``seat``, or "" for an anonymous seat or a bot's."""
        if seat in self.bots or not 0 <= seat < len(self.players):
            return ""
        return self.players[seat]

    def bound_seats(self) -> list[int]:
        """Every seat bound to a player, in seat order."""
        return [seat for seat in range(len(self.players)) if self.player_of(seat)]

    def notice_key(self, player_id: str) -> str:
        """The idempotency key of this notice for one player: the same for a retried append."""
        return f"{self.match_id}:{self.version}:{self.notice}:{player_id}"
