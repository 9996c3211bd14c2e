"""What the players see of a commit: the activity stream, their match indexes, their turns.

For a commit of a match with a seat bound to a player (a JoinMatch that carried a
session), the authority:
- appends a notice per event to the game's activity stream (``keys.activity``; fields in
  docs/players.md): "match_started", "your_turn" when the set of active seats grows to
  include a seat (not again for every move of a seat that keeps the turn), "timed_out",
  "match_ended". The notifier and ratings workers read it with consumer groups. The entries
  are made before the commit and written by the commit script itself, so a commit never
  stands without them (services/runtime/outbox.py: on a cluster, through the match's outbox).
- writes the match's facts into each bound player's index (``keys.player_matches`` and
  ``keys.player_match_facts``), newest revision wins, skipped once the player is deleted;
  ListMyMatches reads only these.
- publishes each notice to the player's channel (``keys.player_turns``) for WatchMyTurns.

Matches without a bound seat cost nothing here. The index and the channel's notices follow
the commit (other hash slots), in one pipelined round trip on one Redis. The commit leaves its
notices marked in the match's outbox until then, so a process that dies between the two
leaves them to the scheduler's sweep, which indexes the match and pushes the notices still
current (``Activity.tell_again``; services/runtime/outbox.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import redis.asyncio as aioredis
import structlog

from services.runtime import keys, redis_client
from services.runtime.history import StoredEvent
from services.runtime.outbox import Notices, Outbox
from services.runtime.redis_client import RedisClient
from services.runtime.tables import Seats

log = structlog.get_logger("activity")

YOUR_TURN = "your_turn"
MATCH_STARTED = "match_started"
MATCH_ENDED = "match_ended"
TIMED_OUT = "timed_out"

_json = msgspec.json.Encoder().encode
_INDEX_SCRIPT = "index"

# KEYS: the player's profile, matches (sorted set), facts (hash). ARGV: member, rev, score
# (ms of the commit), facts JSON. A deleted player (no profile) is not indexed again; an
# older revision (a slower replica's write) never replaces a newer one.
_INDEX = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local old = redis.call('HGET', KEYS[3], ARGV[1])
if old then
  local rev = tonumber(string.match(old, '^(%d+)|'))
  if rev and rev >= tonumber(ARGV[2]) then return 0 end
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2] .. '|' .. ARGV[4])
redis.call('ZADD', KEYS[2], tonumber(ARGV[3]), ARGV[1])
return 1
"""


LIVE_STATUSES = ("WAITING_FOR_PLAYERS", "IN_PROGRESS")


async def live_matches(redis: RedisClient, player_id: str) -> int:
    """How many of the player's indexed matches still wait or play: the count the per-player
    cap (``MOGAMES_MAX_MATCHES_PER_PLAYER``) holds JoinMatch to. The index follows each commit,
    so a join racing another join of the same player may pass the cap by one."""
    facts = await redis.hvals(keys.player_match_facts(player_id))
    return len([value for value in facts if _status(value) in LIVE_STATUSES])


def _status(value: bytes | str) -> str:
    """The match status in an index entry (``<rev>|<summary JSON>``)."""
    summary = msgspec.json.decode(redis_client.text(value).partition("|")[2])
    return str(summary.get("match", {}).get("status", ""))


def index_member(game: str, match_id: str) -> str:
    return f"{game}/{match_id}"


def notice_id(match_id: str, version: int, notice: str, player_id: str) -> str:
    """The idempotency key of one player's notice: the same for a retried append."""
    return f"{match_id}:{version}:{notice}:{player_id}"


def _told(
    notice: str, match_id: str, version: int, player_id: str, summary: dict[str, Any]
) -> tuple[str, bytes]:
    """A notice as pushed to the player's WatchMyTurns streams: its channel and message."""
    message = {
        "notice": notice,
        "notice_id": notice_id(match_id, version, notice, player_id),
        "summary": summary,
    }
    return keys.player_turns(player_id), _json(message)


@dataclass(frozen=True)
class Pending:
    """What a commit about to be made changes for the players (``Activity.before_commit``)."""

    players: list[str]
    bots: list[str]
    # Players bound to a seat before that are no longer (they left a waiting match).
    gone: list[str]
    # The match's public facts as the commit leaves them, and the commit's time (Unix ms).
    facts: Any
    now_ms: int
    # Each notice with the seats it concerns, and their activity entries (None: no notice).
    notices: list[tuple[str, list[int]]]
    entries: Notices | None


def notices_of(pending: Pending | None) -> Notices | None:
    """The activity entries the commit script writes with the commit (services/runtime/store.py)."""
    return None if pending is None else pending.entries


class Activity:
    def __init__(self, redis: RedisClient, game: str, maxlen: int) -> None:
        self.redis = redis
        self.game = game
        self.maxlen = maxlen
        self._index = redis.register_script(_INDEX)
        self.outbox = Outbox(redis, game)

    def concerns(self, seats: Seats) -> bool:
        """Whether a commit of a match whose seats are as ``seats`` tells the players anything:
        a seat is bound to a player, or was (``before_commit`` unindexes a player who left)."""
        return any(seats.players()) or bool(seats.lifecycle.get("indexed"))

    def before_commit(
        self,
        seats: Seats,
        active: Callable[[], list[int]],
        facts: Callable[[], Any],
        events: list[StoredEvent],
        now_ms: int,
    ) -> Pending | None:
        """Before the commit of a match whose seats are as ``seats`` leaves them, with
        ``events``: remember its active seats (``active()``) in the record, so the next commit
        knows whose turn is new, and make the commit's notices from its public facts as it
        leaves them (``facts()``). None (and nothing to do) when no seat is bound to a player."""
        if not self.concerns(seats):
            return None
        players = seats.players()
        lifecycle = seats.lifecycle
        indexed = [str(p) for p in lifecycle.get("indexed", [])]
        gone = [p for p in indexed if p not in players]
        lifecycle["indexed"] = [p for p in players if p]
        before = [int(s) for s in lifecycle.get("turns", [])]
        after = active()
        lifecycle["turns"] = after
        deadlines = {int(c["seat"]): int(c["deadline_unix_ms"]) for c in seats.clocks()}
        bots = seats.bots()
        public = facts()
        notices = self._notices(before, after, public, events) if any(players) else []
        entries = [
            self._entry(notice, concerned, players, bots, deadlines, public, now_ms)
            for notice, concerned in notices
        ]
        outbox = Notices.of(self.game, entries, self.maxlen) if entries else None
        return Pending(players, bots, gone, public, now_ms, notices, outbox)

    async def after_commit(self, pending: Pending, rev: int) -> None:
        """After the commit that made revision ``rev``."""
        try:
            await self._write(pending, rev)
        except Exception:
            # The commit stands, its notices with it (a cluster's sweep delivers them); the
            # index catches up at the next one.
            facts = pending.facts
            log.exception("activity_write_failed", match_id=facts.match_id, version=facts.version)

    def _notices(
        self, before: list[int], after: list[int], facts: Any, events: list[StoredEvent]
    ) -> list[tuple[str, list[int]]]:
        every = list(range(facts.players))
        notices: list[tuple[str, list[int]]] = []
        bodies = [e.body for e in events]
        if any(MATCH_STARTED in b for b in bodies):
            notices.append((MATCH_STARTED, every))
        for body in bodies:
            if TIMED_OUT in body:
                notices.append((TIMED_OUT, [int(body[TIMED_OUT]["seat"])]))
        new_turns = [s for s in after if s not in before]
        if new_turns:
            notices.append((YOUR_TURN, new_turns))
        if any(MATCH_ENDED in b for b in bodies):
            notices.append((MATCH_ENDED, every))
        return notices

    def _entry(
        self,
        notice: str,
        concerned: list[int],
        players: list[str],
        bots: list[str],
        deadlines: dict[int, int],
        facts: Any,
        now_ms: int,
    ) -> dict[str, str]:
        """One activity entry (docs/notifications.md)."""
        humans = ["" if bot else player for player, bot in zip(players, bots, strict=True)]
        return {
            "notice": notice,
            "game": self.game,
            "match_id": facts.match_id,
            "version": str(facts.version),
            "at_ms": str(now_ms),
            "players": _json(humans).decode(),
            "bots": _json([s for s, bot in enumerate(bots) if bot]).decode(),
            "seats": _json(concerned).decode(),
            "deadlines": _json({str(s): d for s, d in deadlines.items()}).decode(),
            "status": facts.status,
            "scores": _json(facts.scores if notice == MATCH_ENDED else []).decode(),
            "winners": _json(facts.winners if notice == MATCH_ENDED else []).decode(),
            "table": _json({"players": facts.players, "options": facts.table}).decode(),
        }

    async def _write(self, pending: Pending, rev: int) -> None:
        facts, now_ms, notices = pending.facts, pending.now_ms, pending.notices
        # What clears the outbox and its mark once the players are told (nothing if it failed).
        settle: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        if pending.entries is not None:
            try:
                await self.outbox.append(pending.entries)
                settle = self.outbox.settle(facts.match_id, rev - 1, pending.entries)
            except Exception:
                # Still in the outbox, and marked: the scheduler's sweep delivers them.
                log.exception("outbox_deliver_failed", match_id=facts.match_id, version=facts.version)
        humans = ["" if bot else player for player, bot in zip(pending.players, pending.bots, strict=True)]
        ended = facts.status in ("FINISHED", "ABANDONED")
        # In order: the indexes, then the notices, so a client told of a notice lists its
        # matches as of that commit at least; last, the outbox and its mark are cleared.
        commands: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        member = index_member(self.game, facts.match_id)
        for player in pending.gone:
            commands.append(("zrem", (keys.player_matches(player), member), {}))
            commands.append(("hdel", (keys.player_match_facts(player), member), {}))
        facts_dict = dataclasses.asdict(facts)
        told: list[tuple[str, bytes]] = []
        for seat, player in enumerate(pending.players):
            if not player:
                continue
            summary = {"game": self.game, "seat": seat, "updated_ms": now_ms, "match": facts_dict}
            commands.append(self._index_command(player, member, rev, now_ms, summary))
            if not humans[seat]:
                continue
            for notice, seats in notices:
                if seat in seats and not (notice == YOUR_TURN and ended):
                    told.append(_told(notice, facts.match_id, facts.version, player, summary))
        commands += [("publish", (channel, message), {}) for channel, message in told]
        await self._send(commands + settle)

    async def tell_again(
        self, facts: Any, rev: int, players: list[str], at_ms: int, entries: list[dict[str, str]]
    ) -> None:
        """What a committer that died after its commit did not do, from the match as stored
        (``facts`` at revision ``rev``, last committed at ``at_ms``) and the activity
        ``entries`` it left in the outbox (services/runtime/outbox.py): index the match for
        its bound ``players`` (a newer revision indexed meanwhile stays), then push the
        notices that are still current. A "your_turn" is current only while no later commit
        was made (the turn may have passed since); the other notices always are."""
        member = index_member(self.game, facts.match_id)
        facts_dict = dataclasses.asdict(facts)
        summaries = {
            seat: {"game": self.game, "seat": seat, "updated_ms": at_ms, "match": facts_dict}
            for seat, player in enumerate(players)
            if player
        }
        commands = [
            self._index_command(player, member, rev, at_ms, summaries[seat])
            for seat, player in enumerate(players)
            if player
        ]
        for entry in entries:
            notice, version = entry["notice"], int(entry["version"])
            if notice == YOUR_TURN and version != facts.version:
                continue
            humans: list[str] = msgspec.json.decode(entry["players"])
            for seat in msgspec.json.decode(entry["seats"]):
                if seat < len(players) and humans[seat] and humans[seat] == players[seat]:
                    channel, message = _told(notice, facts.match_id, version, humans[seat], summaries[seat])
                    commands.append(("publish", (channel, message), {}))
        await self._send(commands)

    def _index_command(
        self, player: str, member: str, rev: int, at_ms: int, summary: dict[str, Any]
    ) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        index_keys = [
            keys.player_profile(player),
            keys.player_matches(player),
            keys.player_match_facts(player),
        ]
        return (_INDEX_SCRIPT, (index_keys, [member, rev, at_ms, _json(summary)]), {})

    async def _send(self, commands: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> None:
        """One round trip on one Redis (a pipeline); on a cluster, where the keys live on
        several nodes, one command after another."""
        if isinstance(self.redis, aioredis.RedisCluster):
            for name, args, kwargs in commands:
                if name == _INDEX_SCRIPT:
                    await self._index(keys=args[0], args=args[1])
                else:
                    await getattr(self.redis, name)(*args, **kwargs)
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for name, args, kwargs in commands:
                if name == _INDEX_SCRIPT:
                    await self._index(keys=args[0], args=args[1], client=pipe)
                else:
                    getattr(pipe, name)(*args, **kwargs)
            await pipe.execute()
