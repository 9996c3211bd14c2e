"""Matchmaking (Lobby.FindMatch): players asking for the same game and player count are
seated together in a new match.

The pool of one (game, players) lives in Redis under one hash tag, so one Lua script sees
it whole whichever gateway runs it: a queue of waiting tickets (oldest first) and a hash
per ticket and per group. Enqueueing a ticket that completes a group takes the group's
tickets off the queue in the same script, so no ticket is ever seated twice and every
gateway agrees on who plays with whom.

The group is then turned into a match with ordinary RPCs to the game's replicas: one
CreateMatch, and a JoinMatch per ticket with the ticket id as its request id. Any member's
gateway may do this (the one that formed the group first; another if that one is slow or
gone): the group keeps the first match id written, and a retried join answers the same
seat and token, so finishing a group twice changes nothing.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

import grpc
import structlog
from mogames.common.v1 import common_pb2

from gateway.backends import ReplicaPool
from services.engine import GameInfo
from services.runtime import keys
from services.runtime.auth import SESSION_METADATA
from services.runtime.codec import generated_modules
from services.runtime.errors import FailedPrecondition, InvalidArgument
from services.runtime.limits import FORWARDED_CLIENT
from services.runtime.redis_client import RedisClient

log = structlog.get_logger("matchmaker")

MAX_WAIT_S = 300
MAX_TICKET_ID = 100
MAX_PLAYER_NAME = 64
POLL_S = 0.05
# A group nobody has finished this long after it formed is finished by any member.
TAKE_OVER_AFTER_S = 3.0
# Ticket and group records outlive the wait by this much, for retries and late readers.
KEEP_S = 120
RPC_TIMEOUT_S = 10.0

# KEYS: queue, this ticket. ARGV: ticket id, player name, now ms, players, ttl s, group id,
# fewest waiting tickets that form a group now, key prefix of the pool, the caller's
# client id (for its CreateMatch/JoinMatch budgets). Returns the
# ticket's state ('waiting' or 'grouped') and its group id.
# The queue never holds a full group (the enqueue that completes one takes it), so the
# oldest tickets taken here always include this one.
_ENQUEUE = """
local queue, ticket = KEYS[1], KEYS[2]
local id, players, ttl, gid, prefix = ARGV[1], tonumber(ARGV[4]), ARGV[5], ARGV[6], ARGV[8]
local state = redis.call('HGET', ticket, 'state')
if state == 'grouped' then return {state, redis.call('HGET', ticket, 'group')} end
if state ~= 'waiting' then
  redis.call('HSET', ticket, 'state', 'waiting', 'name', ARGV[2], 'client', ARGV[9])
  redis.call('EXPIRE', ticket, ttl)
  redis.call('ZADD', queue, tonumber(ARGV[3]), id)
end
local waiting = redis.call('ZRANGE', queue, 0, players - 1)
if #waiting < tonumber(ARGV[7]) then return {'waiting', ''} end
for _, member in ipairs(waiting) do
  redis.call('ZREM', queue, member)
  redis.call('HSET', prefix .. 'ticket:' .. member, 'state', 'grouped', 'group', gid)
end
local group = prefix .. 'group:' .. gid
redis.call('HSET', group, 'tickets', cjson.encode(waiting))
redis.call('EXPIRE', group, ttl)
return {'grouped', gid}
"""

# KEYS: queue, ticket. ARGV: ticket id, the state to give a waiting ticket.
_WITHDRAW = """
if redis.call('HGET', KEYS[2], 'state') ~= 'waiting' then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'state', ARGV[2])
return 1
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class Ticket:
    game: GameInfo
    players: int
    ticket_id: str
    player_name: str
    # Who asked (limits.client_id): the match and the seats are made in that client's name.
    client: str = ""
    # The level of the bots that fill the group this ticket finishes.
    bot_level: str = "random"
    # A player's session (checked by the lobby): the seat is bound to that player.
    session: str = ""

    def key(self, part: str) -> str:
        return keys.matchmaking(self.game.name, self.players, part)


class Matchmaker:
    def __init__(self, redis: RedisClient, games: dict[str, GameInfo], pools: dict[str, ReplicaPool]) -> None:
        self.redis = redis
        self.games = games
        self.pools = pools
        self._enqueue = redis.register_script(_ENQUEUE)
        self._withdraw = redis.register_script(_WITHDRAW)

    def ticket(
        self, game: str, players: int, ticket_id: str, player_name: str = "x", client: str = ""
    ) -> Ticket:
        info = self.games.get(game)
        if info is None:
            raise InvalidArgument(f"game: {game!r} is not served here (see ListGames)", field="game")
        if not info.min_players <= players <= info.max_players:
            raise InvalidArgument(
                f"players: {info.title} takes {info.min_players} to {info.max_players} players",
                field="players",
            )
        if len(ticket_id) > MAX_TICKET_ID or ":" in ticket_id:
            raise InvalidArgument(f"ticket_id: at most {MAX_TICKET_ID} characters, no ':'", field="ticket_id")
        name = player_name.strip()
        if not name or len(name) > MAX_PLAYER_NAME:
            raise InvalidArgument(
                f"player_name: 1 to {MAX_PLAYER_NAME} characters required", field="player_name"
            )
        return Ticket(info, players, ticket_id or uuid.uuid4().hex, name, client)

    async def find(self, ticket: Ticket, wait_s: int, fill_with_bots: bool) -> common_pb2.JoinMatchResponse:
        if wait_s > MAX_WAIT_S:
            raise InvalidArgument(f"wait_seconds: at most {MAX_WAIT_S}", field="wait_seconds")
        deadline = time.monotonic() + wait_s
        if ticket.session:
            # On the ticket before it queues: whichever gateway seats the group passes it on.
            await self.redis.hset(ticket.key(f"ticket:{ticket.ticket_id}"), "session", ticket.session)
        state, group = await self._join_queue(ticket, wait_s, ticket.players)
        grouped_at = time.monotonic()
        while True:
            if state == "grouped":
                answer = await self.redis.hget(ticket.key(f"ticket:{ticket.ticket_id}"), "joined")
                if answer is not None:
                    return common_pb2.JoinMatchResponse.FromString(base64.b64decode(answer))
                if (
                    time.monotonic() - grouped_at > TAKE_OVER_AFTER_S
                    or group.partition(":")[0] == ticket.ticket_id
                ):
                    await self._finish_group(ticket, group)
                    continue
            elif state == "cancelled":
                raise FailedPrecondition(
                    "ticket_cancelled: CancelFindMatch withdrew this ticket", "ticket_cancelled"
                )
            elif time.monotonic() >= deadline:
                if fill_with_bots:
                    # Whoever is waiting now plays together, bots in the empty seats.
                    state, group = await self._join_queue(ticket, wait_s, 1)
                    if state == "grouped":
                        grouped_at = time.monotonic()
                        continue
                if await self._withdraw(keys=self._ticket_keys(ticket), args=[ticket.ticket_id, "expired"]):
                    raise FailedPrecondition(
                        f"no_match_found: no other players within {wait_s} s; retry, or set fill_with_bots",
                        "no_match_found",
                    )
            await asyncio.sleep(POLL_S)
            raw_state, raw_group = await self.redis.hmget(
                ticket.key(f"ticket:{ticket.ticket_id}"), ["state", "group"]
            )
            previous = state
            state, group = _text(raw_state or b"expired"), _text(raw_group or b"")
            if state == "grouped" and previous != "grouped":
                grouped_at = time.monotonic()

    async def cancel(self, ticket: Ticket) -> bool:
        return bool(
            await self._withdraw(keys=self._ticket_keys(ticket), args=[ticket.ticket_id, "cancelled"])
        )

    def _ticket_keys(self, ticket: Ticket) -> list[str]:
        return [ticket.key("queue"), ticket.key(f"ticket:{ticket.ticket_id}")]

    async def _join_queue(self, ticket: Ticket, wait_s: int, minimum: int) -> tuple[str, str]:
        # The group id starts with the forming ticket's id: that ticket's gateway finishes it.
        group_id = f"{ticket.ticket_id}:{uuid.uuid4().hex[:12]}"
        now_ms = int(time.time() * 1000)
        args: list[Any] = [
            ticket.ticket_id,
            ticket.player_name,
            now_ms,
            ticket.players,
            wait_s + KEEP_S,
            group_id,
        ]
        args += [minimum, ticket.key(""), ticket.client]
        reply = await self._enqueue(keys=self._ticket_keys(ticket), args=args)
        state, group = _text(reply[0]), _text(reply[1])
        if state == "grouped":
            log.info("match_found", ticket=ticket.ticket_id, group=group)
        return state, group

    async def _finish_group(self, ticket: Ticket, group_id: str) -> None:
        """Create the group's match (once) and seat each of its tickets in it."""
        group_key = ticket.key(f"group:{group_id}")
        raw_tickets, match_id = await self.redis.hmget(group_key, ["tickets", "match_id"])
        members: list[str] = json.loads(_text(raw_tickets or b"[]"))
        pb2, pb2_grpc = generated_modules(ticket.game)
        stub = getattr(pb2_grpc, f"{ticket.game.service}Stub")(self.pools[ticket.game.name].pick())

        def on_behalf(client: Any) -> tuple[tuple[str, str], ...]:
            return ((FORWARDED_CLIENT, _text(client)),) if client else ()

        if match_id is None:
            creator = await self.redis.hget(ticket.key(f"ticket:{members[0]}"), "client")
            bots = list(range(len(members), ticket.players))
            request = pb2.CreateMatchRequest(
                players=ticket.players,
                table=common_pb2.TableOptions(bot_seats=bots, bot_level=ticket.bot_level),
            )
            created = await stub.CreateMatch(
                request, metadata=on_behalf(creator), timeout=RPC_TIMEOUT_S, wait_for_ready=True
            )
            await self.redis.hsetnx(group_key, "match_id", created.match_id)
            match_id = await self.redis.hget(group_key, "match_id")
        for member in members:
            member_key = ticket.key(f"ticket:{member}")
            name, client, session = await self.redis.hmget(member_key, ["name", "client", "session"])
            join = common_pb2.JoinMatchRequest(
                match_id=_text(match_id), player_name=_text(name or member), request_id=f"mm:{member}"
            )
            try:
                bound = ((SESSION_METADATA, _text(session)),) if session else ()
                joined = await stub.JoinMatch(
                    join, metadata=(*on_behalf(client), *bound), timeout=RPC_TIMEOUT_S, wait_for_ready=True
                )
            except grpc.aio.AioRpcError as error:
                log.warning("matchmaking_join_failed", ticket=member, code=error.code().name)
                raise
            await self.redis.hset(member_key, "joined", base64.b64encode(joined.SerializeToString()))
