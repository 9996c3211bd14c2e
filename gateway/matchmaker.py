"""Matchmaking (Lobby.FindMatch): players asking for the same game and player count are
seated together in a new match.

The pool of one (game, players) lives in Redis under one hash tag, so one Lua script sees
it whole whichever gateway runs it: a queue of waiting tickets (oldest first) and a hash
per ticket and per group. Enqueueing a ticket that completes a group takes the group's
tickets off the queue in the same script, so no ticket is ever seated twice and every
gateway agrees on who plays with whom.

The group is then turned into a match with ordinary RPCs to the game's replicas: one
CreateMatch, and a JoinMatch per ticket with a request id derived from the group's random id
(a ticket id is known to others, and must not name a retry that hands out its seat). Any member's
gateway may do this (the one that formed the group first; another if that one is slow or
gone): the group keeps the first match id written, and a retried join answers the same
seat and token, so finishing a group twice changes nothing.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

import grpc
import structlog
from mogames.common.v1 import common_pb2

from gateway import rated_pairing
from gateway.backends import ReplicaPool
from services.engine import GameInfo
from services.runtime import keys
from services.runtime.auth import SESSION_METADATA
from services.runtime.codec import generated_modules, stub_class
from services.runtime.errors import FailedPrecondition, InvalidArgument, Unavailable
from services.runtime.limits import FORWARDED_CLIENT
from services.runtime.redis_client import RedisClient, text
from services.workers.ratings import DEFAULT_MU

log = structlog.get_logger("matchmaker")

MAX_WAIT_S = 300
MAX_TICKET_ID = 100
MAX_PLAYER_NAME = 64
POLL_S = 0.05
# A waiting or grouped ticket whose caller's gateway has not polled for this long has no
# caller any more (its gateway died or stalled): no group is formed or finished with it.
LIVE_MS = 3000
# A group nobody has finished this long after it formed is finished by any member.
TAKE_OVER_AFTER_S = 3.0
# Ticket and group records outlive the wait by this much, for retries and late readers.
KEEP_S = 120
RPC_TIMEOUT_S = 10.0

# Lua shared by the scripts below. A ticket is live while its caller's gateway polls it
# (its 'seen' field, Redis's own clock, no older than LIVE_MS). `dissolve` undoes a group
# that has not been claimed for seating: its live members go back to the queue at their
# old place, the others leave it.
_LUA_COMMON = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function live(ticket, states, now, live_ms)
  local f = redis.call('HMGET', ticket, 'state', 'seen')
  return states[f[1]] ~= nil and tonumber(f[2]) ~= nil and now - tonumber(f[2]) <= live_ms
end
local function dissolve(queue, prefix, group, gone, now, live_ms)
  local members = cjson.decode(redis.call('HGET', group, 'tickets') or '[]')
  for _, member in ipairs(members) do
    local key = prefix .. 'ticket:' .. member
    if member ~= gone and live(key, {grouped = true}, now, live_ms) then
      redis.call('HSET', key, 'state', 'waiting')
      redis.call('HDEL', key, 'group')
      redis.call('ZADD', queue, tonumber(redis.call('HGET', key, 'since')), member)
    elseif member ~= gone then
      redis.call('HSET', key, 'state', 'gone')
    end
  end
  redis.call('HSET', group, 'dissolved', 1)
end
"""

# KEYS: queue, this ticket. ARGV: ticket id, player name, now ms, players, ttl s, group id
# suffix, fewest live tickets that form a group now, key prefix of the pool, the caller's
# client id (for its CreateMatch/JoinMatch budgets), '1' when this call may (re)enter the
# ticket in the queue ('0' when it only polls: then a cancelled or expired ticket stays
# so), LIVE_MS, the ticket's rating mu, its wait in ms. Returns the ticket's state and its
# group id. Every call also marks the ticket live and drops from the queue the tickets
# whose callers are gone (their entries leave with them), so a group is only ever formed
# of live ones, chosen by rating (gateway/rated_pairing.py).
_ENQUEUE = (
    _LUA_COMMON
    + rated_pairing.CHOOSE
    + """
local queue, ticket = KEYS[1], KEYS[2]
local id, players, ttl, prefix = ARGV[1], tonumber(ARGV[4]), ARGV[5], ARGV[8]
local live_ms, now = tonumber(ARGV[11]), now_ms()
local state, owner = unpack(redis.call('HMGET', ticket, 'state', 'client'))
if state and owner ~= ARGV[9] then return {'foreign', ''} end
if state == 'grouped' then
  local gid = redis.call('HGET', ticket, 'group')
  redis.call('HSET', ticket, 'seen', now)
  redis.call('HSET', prefix .. 'group:' .. gid, 'here:' .. id, 1)
  return {state, gid}
end
if state ~= 'waiting' then
  if ARGV[10] ~= '1' and state ~= 'gone' then return {state or 'expired', ''} end
  local since = redis.call('HGET', ticket, 'since') or ARGV[3]
  redis.call('HSET', ticket, 'state', 'waiting', 'name', ARGV[2], 'client', ARGV[9], 'since', since,
             'mu', ARGV[12], 'wait', ARGV[13])
  redis.call('EXPIRE', ticket, ttl)
  redis.call('ZADD', queue, tonumber(since), id)
end
redis.call('HSET', ticket, 'seen', now)
local members = choose(waiting(queue, prefix, now, live_ms), id, players, tonumber(ARGV[7]), now)
if members == nil then return {'waiting', ''} end
local mine = false
for _, member in ipairs(members) do mine = mine or member == id end
-- The group id starts with its first member's id: that member's gateway finishes it.
local gid = members[1] .. ':' .. ARGV[6]
for _, member in ipairs(members) do
  redis.call('ZREM', queue, member)
  redis.call('HSET', prefix .. 'ticket:' .. member, 'state', 'grouped', 'group', gid)
end
local group = prefix .. 'group:' .. gid
redis.call('HSET', group, 'tickets', cjson.encode(members))
redis.call('EXPIRE', group, ttl)
if mine then
  redis.call('HSET', group, 'here:' .. id, 1)
  return {'grouped', gid}
end
return {'waiting', ''}
"""
)

# KEYS: queue, ticket. ARGV: ticket id, the state to give it, key prefix of the pool,
# LIVE_MS, the caller's client id. Withdraws a waiting ticket, or one whose group nobody has
# started seating yet (the group is dissolved, its other members wait again): 1 if
# withdrawn, 0 if not, -1 if the ticket is another client's (it stays as it is).
_WITHDRAW = (
    _LUA_COMMON
    + """
local f = redis.call('HMGET', KEYS[2], 'state', 'group', 'client')
if f[1] and f[3] ~= ARGV[5] then return -1 end
if f[1] == 'grouped' then
  local group = ARGV[3] .. 'group:' .. f[2]
  if redis.call('HEXISTS', group, 'claimed') == 1 then return 0 end
  dissolve(KEYS[1], ARGV[3], group, ARGV[1], now_ms(), tonumber(ARGV[4]))
elseif f[1] ~= 'waiting' then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'state', ARGV[2])
return 1
"""
)

# KEYS: queue, group. ARGV: key prefix of the pool, LIVE_MS. Claims the group for seating
# once every member's caller has polled since it formed ('claimed'); dissolves it if one
# of them is gone ('dissolved'); else 'pending'.
_CLAIM = (
    _LUA_COMMON
    + """
if redis.call('HEXISTS', KEYS[2], 'dissolved') == 1 then return 'dissolved' end
if redis.call('HEXISTS', KEYS[2], 'claimed') == 1 then return 'claimed' end
local now, live_ms, pending = now_ms(), tonumber(ARGV[2]), false
for _, member in ipairs(cjson.decode(redis.call('HGET', KEYS[2], 'tickets') or '[]')) do
  if not live(ARGV[1] .. 'ticket:' .. member, {grouped = true}, now, live_ms) then
    dissolve(KEYS[1], ARGV[1], KEYS[2], '', now, live_ms)
    return 'dissolved'
  end
  pending = pending or redis.call('HEXISTS', KEYS[2], 'here:' .. member) == 0
end
if pending then return 'pending' end
redis.call('HSET', KEYS[2], 'claimed', 1)
return 'claimed'
"""
)


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
    # That session's player, and their rating mean on the game's ladder (set by find).
    player: str = ""
    mu: float = DEFAULT_MU

    def key(self, part: str) -> str:
        return keys.matchmaking(self.game.name, self.players, part)

    def rated_as(self) -> tuple[str, str]:
        """The ladder and the player whose rating pairs this ticket ("" for no player)."""
        return self.game.name, self.player


class Matchmaker:
    def __init__(self, redis: RedisClient, games: dict[str, GameInfo], pools: dict[str, ReplicaPool]) -> None:
        self.redis = redis
        self.games = games
        self.pools = pools
        self._enqueue = redis.register_script(_ENQUEUE)
        self._withdraw = redis.register_script(_WITHDRAW)
        self._claim = redis.register_script(_CLAIM)
        self._releases: set[asyncio.Task[None]] = set()

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
        try:
            return await self._find(ticket, wait_s, fill_with_bots)
        except BaseException:
            # The call ended without a seat (cancelled, past its deadline, disconnected, the
            # gateway stopping, an error): nobody waits on this ticket any more.
            await asyncio.shield(self._leave(ticket))
            raise

    async def _find(self, ticket: Ticket, wait_s: int, fill_with_bots: bool) -> common_pb2.JoinMatchResponse:
        deadline = time.monotonic() + wait_s
        ticket = dataclasses.replace(ticket, mu=await rated_pairing.rating_of(self.redis, *ticket.rated_as()))
        if ticket.session:
            # On the ticket before it queues: whichever gateway seats the group passes it on.
            await self.redis.hset(ticket.key(f"ticket:{ticket.ticket_id}"), "session", ticket.session)
        state, group = await self._join_queue(ticket, wait_s, ticket.players, enter=True)
        grouped_at = time.monotonic()
        if state == "grouped":
            log.info("match_found", ticket=ticket.ticket_id, group=group)
        while True:
            if state == "grouped":
                answer = await self.redis.hget(ticket.key(f"ticket:{ticket.ticket_id}"), "joined")
                if answer is not None:
                    return common_pb2.JoinMatchResponse.FromString(base64.b64decode(answer))
                if (
                    time.monotonic() - grouped_at > TAKE_OVER_AFTER_S
                    or group.partition(":")[0] == ticket.ticket_id
                ) and await self._finish_group(ticket, group):
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
                if await self._withdraw_as(ticket, "expired") or state != "waiting":
                    raise FailedPrecondition(
                        f"no_match_found: no other players within {wait_s} s; retry, or set fill_with_bots",
                        "no_match_found",
                    )
            await asyncio.sleep(POLL_S)
            previous = state
            # Polling keeps the ticket live, and forms a group if enough live tickets wait.
            state, group = await self._join_queue(ticket, wait_s, ticket.players)
            if state == "grouped" and previous != "grouped":
                grouped_at = time.monotonic()
                log.info("match_found", ticket=ticket.ticket_id, group=group)

    async def cancel(self, ticket: Ticket) -> bool:
        return await self._withdraw_as(ticket, "cancelled")

    async def _withdraw_as(self, ticket: Ticket, state: str) -> bool:
        args: list[Any] = [ticket.ticket_id, state, ticket.key(""), LIVE_MS, ticket.client]
        withdrawn = int(await self._withdraw(keys=self._ticket_keys(ticket), args=args))
        if withdrawn < 0:
            # Only the client that queued a ticket may withdraw it.
            raise FailedPrecondition(
                "ticket_id: another client's ticket; choose a ticket id of your own", "ticket_foreign"
            )
        return withdrawn == 1

    async def _leave(self, ticket: Ticket) -> None:
        """Withdraw the ticket of a call that ended; if its group was already being seated,
        give its seat up once made (the table's seat policy applies: a bot by default)."""
        try:
            if await self._withdraw_as(ticket, "left"):
                return
            key = ticket.key(f"ticket:{ticket.ticket_id}")
            state, joined = await self.redis.hmget(key, ["state", "joined"])
        except Exception as error:  # Redis gone too: the ticket stops being live in LIVE_MS
            log.warning("matchmaking_withdraw_failed", ticket=ticket.ticket_id, error=str(error))
            return
        if text(state or b"") == "grouped" and joined is None:
            release = asyncio.create_task(self._release_seat(ticket))
            self._releases.add(release)
            release.add_done_callback(self._releases.discard)

    async def _release_seat(self, ticket: Ticket) -> None:
        key = ticket.key(f"ticket:{ticket.ticket_id}")
        give_up = time.monotonic() + 2 * RPC_TIMEOUT_S
        while (answer := await self.redis.hget(key, "joined")) is None:
            if time.monotonic() > give_up:
                return
            await asyncio.sleep(POLL_S)
        joined = common_pb2.JoinMatchResponse.FromString(base64.b64decode(answer))
        try:
            stub = await self._stub(ticket, joined.match.match_id)
            await stub.LeaveMatch(
                common_pb2.LeaveMatchRequest(match_id=joined.match.match_id),
                metadata=(("authorization", f"Bearer {joined.token}"),),
                timeout=RPC_TIMEOUT_S,
            )
            log.info("matchmaking_seat_released", ticket=ticket.ticket_id, match_id=joined.match.match_id)
        except grpc.aio.AioRpcError as error:
            log.warning("matchmaking_release_failed", ticket=ticket.ticket_id, code=error.code().name)
        except Unavailable:
            log.warning("matchmaking_release_failed", ticket=ticket.ticket_id, code="UNAVAILABLE")

    async def _stub(self, ticket: Ticket, match_id: str = "") -> Any:
        """A stub on the replica a call goes to, chosen as the gateway's own routing chooses it
        (by the match id when there is one, so it reaches the match's replica): fail-fast, so a
        game with no replica up answers UNAVAILABLE at once rather than at the deadline."""
        replica = await self.pools[ticket.game.name].choose(match_id.encode())
        return stub_class(ticket.game)(replica.channel)

    def _ticket_keys(self, ticket: Ticket) -> list[str]:
        return [ticket.key("queue"), ticket.key(f"ticket:{ticket.ticket_id}")]

    async def _join_queue(
        self, ticket: Ticket, wait_s: int, minimum: int, enter: bool = False
    ) -> tuple[str, str]:
        now_ms = int(time.time() * 1000)
        args: list[Any] = [
            ticket.ticket_id,
            ticket.player_name,
            now_ms,
            ticket.players,
            wait_s + KEEP_S,
            # The group id's random part: what makes its join request ids unguessable.
            uuid.uuid4().hex,
        ]
        args += [minimum, ticket.key(""), ticket.client, "1" if enter else "0", LIVE_MS]
        args += [repr(ticket.mu), wait_s * 1000]
        reply = await self._enqueue(keys=self._ticket_keys(ticket), args=args)
        state, group = text(reply[0]), text(reply[1])
        if state == "foreign":
            # A ticket's seat goes to the client that queued it, never to one that names it.
            raise FailedPrecondition(
                "ticket_id: another client's ticket; choose a ticket id of your own", "ticket_foreign"
            )
        return state, group

    async def _finish_group(self, ticket: Ticket, group_id: str) -> bool:
        """Create the group's match (once) and seat each of its tickets in it; False if the
        group cannot be seated yet (a member has not polled since it formed) or was
        dissolved instead (a member's caller gone before seating began)."""
        group_key = ticket.key(f"group:{group_id}")
        claim = await self._claim(keys=[ticket.key("queue"), group_key], args=[ticket.key(""), LIVE_MS])
        if text(claim) != "claimed":
            if text(claim) == "dissolved":
                log.info("matchmaking_group_dissolved", ticket=ticket.ticket_id, group=group_id)
            return False
        raw_tickets, match_id = await self.redis.hmget(group_key, ["tickets", "match_id"])
        members: list[str] = json.loads(text(raw_tickets or b"[]"))
        pb2 = generated_modules(ticket.game)[0]

        def on_behalf(client: Any) -> tuple[tuple[str, str], ...]:
            return ((FORWARDED_CLIENT, text(client)),) if client else ()

        if match_id is None:
            creator = await self.redis.hget(ticket.key(f"ticket:{members[0]}"), "client")
            bots = list(range(len(members), ticket.players))
            request = pb2.CreateMatchRequest(
                players=ticket.players,
                table=common_pb2.TableOptions(bot_seats=bots, bot_level=ticket.bot_level),
            )
            created = await (await self._stub(ticket)).CreateMatch(
                request, metadata=on_behalf(creator), timeout=RPC_TIMEOUT_S
            )
            await self.redis.hsetnx(group_key, "match_id", created.match_id)
            match_id = await self.redis.hget(group_key, "match_id")
        stub = await self._stub(ticket, text(match_id))
        for member in members:
            member_key = ticket.key(f"ticket:{member}")
            name, client, session = await self.redis.hmget(member_key, ["name", "client", "session"])
            join = common_pb2.JoinMatchRequest(
                match_id=text(match_id),
                player_name=text(name or member),
                request_id=_join_request_id(group_id, member),
            )
            try:
                bound = ((SESSION_METADATA, text(session)),) if session else ()
                joined = await stub.JoinMatch(
                    join, metadata=(*on_behalf(client), *bound), timeout=RPC_TIMEOUT_S
                )
            except grpc.aio.AioRpcError as error:
                log.warning("matchmaking_join_failed", ticket=member, code=error.code().name)
                raise
            await self.redis.hset(member_key, "joined", base64.b64encode(joined.SerializeToString()))
        return True


def _join_request_id(group_id: str, member: str) -> str:
    """The request id of a member's JoinMatch: the same for every gateway finishing the group,
    and derivable only from the group id, which never leaves Redis and the gateways."""
    return "mm:" + hashlib.sha256(f"{group_id}\0{member}".encode()).hexdigest()
