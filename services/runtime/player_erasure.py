"""Taking a deleted player off the matches still stored (DeletePlayer, services/players).

Each match is rewritten through the store's commit (the same compare-and-set on the
revision as every move, no events): the seat's binding to the player and the seat's name
go, the seat itself stays (a deleted player's finished match keeps its scores). The events
already in the match's history keep the name the client chose at JoinMatch until the
match expires (``MOGAMES_FINISHED_TTL_S`` after it ends).
"""

from __future__ import annotations

from typing import Any

from services.runtime import keys
from services.runtime.errors import Aborted, Unauthenticated
from services.runtime.store import MatchStore

# The name a deleted player's seat shows from then on.
ERASED_NAME = "deleted player"
MAX_ATTEMPTS = 20


async def refuse_deleted(redis: Any, player_id: str) -> None:
    """Refuses a session of a deleted player: one signed before DeletePlayer stays valid
    until it expires, but must not bind its player to a seat (nor index it) again."""
    if await redis.exists(keys.player_deleted(player_id)):
        raise Unauthenticated("session: this player was deleted; sign in again", reason="player_deleted")


async def erase_player(store: MatchStore, match_id: str, player_id: str) -> bool:
    """Whether ``match_id`` held a seat of ``player_id`` that is now anonymous."""
    for _ in range(MAX_ATTEMPTS):
        record = await store.load(match_id)
        if record is None:
            return False
        seats = record.lifecycle.get("seats", [])
        mine = [seat for seat, data in enumerate(seats) if data.get("player") == player_id]
        if not mine:
            return False
        for seat in mine:
            seats[seat]["player"] = ""
            if record.seats[seat] is not None:
                record.seats[seat] = ERASED_NAME
        record.lifecycle["indexed"] = [p for p in record.lifecycle.get("indexed", []) if p != player_id]
        ttl_s = await store.redis.ttl(keys.match(match_id))
        result = await store.commit(record, [], max(int(ttl_s), 1))
        if result.outcome == "ok":
            return True
    raise Aborted(
        f"match {match_id!r} kept changing while a player was erased from it; retry", reason="contention"
    )
