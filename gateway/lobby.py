"""``mogames.lobby.v1.Lobby``: which games this gateway serves, their public matches, and
matchmaking (``gateway/matchmaker.py``).

The lobby reads and changes matches only through the games' replicas with ordinary RPCs;
Redis holds just its indexes: each game's public matches (written by the services when a
public match is created, scored by creation time) and the matchmaking pools.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import time
from typing import Any

import grpc
from mogames.common.v1 import common_pb2
from mogames.lobby.v1 import lobby_pb2, lobby_pb2_grpc

from gateway.backends import ReplicaPool
from gateway.matchmaker import RPC_TIMEOUT_S, Matchmaker
from services.engine import GameInfo
from services.runtime import keys
from services.runtime.auth import SESSION_METADATA, player_of_session, session_token
from services.runtime.codec import stub_class
from services.runtime.errors import FailedPrecondition, InvalidArgument
from services.runtime.limits import client_id
from services.runtime.player_erasure import refuse_deleted
from services.runtime.redis_client import RedisClient, text
from services.runtime.settings import InputLimits
from services.runtime.tables import bot_level

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100


def _text(value: object) -> str:
    """An option's default as its proto text form (``true``, ``3``, ``hexagon``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def game_info(game: GameInfo) -> lobby_pb2.GameInfo:
    return lobby_pb2.GameInfo(
        name=game.name,
        title=game.title,
        service=game.full_service,
        min_players=game.min_players,
        max_players=game.max_players,
        options=[
            lobby_pb2.GameOption(
                name=o.name, type=o.type, description=o.description, default_value=_text(o.default)
            )
            for o in game.options
        ],
    )


def _page_token(score: float, match_id: str) -> str:
    return base64.urlsafe_b64encode(f"{int(score)}:{match_id}".encode()).decode()


def _cursor(token: str) -> tuple[int, str] | None:
    """The (score, match id) a page token continues after; None for the first page."""
    if not token:
        return None
    try:
        score, _, match_id = base64.urlsafe_b64decode(token.encode()).decode().partition(":")
        return int(score), match_id
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidArgument("page_token: not a token from ListMatches", field="page_token") from None


def _wanted(match: common_pb2.Match, request: lobby_pb2.ListMatchesRequest) -> bool:
    if request.status and match.status != request.status:
        return False
    free = match.status == common_pb2.WAITING_FOR_PLAYERS and not all(s.taken for s in match.seats)
    return free or not request.has_free_seat


class LobbyServicer(lobby_pb2_grpc.LobbyServicer):
    def __init__(
        self,
        games: list[GameInfo],
        pools: dict[str, ReplicaPool] | None = None,
        redis: RedisClient | None = None,
        find_wait_s: int = 30,
        limits: InputLimits | None = None,
        token_secret: bytes = b"",
    ) -> None:
        self.response = lobby_pb2.ListGamesResponse(games=[game_info(g) for g in games])
        self.games = {g.name: g for g in games}
        self.pools = pools or {}
        self.redis = redis
        self.find_wait_s = find_wait_s
        # Verifies FindMatch's player sessions before they queue (b"": sessions refused there).
        self.token_secret = token_secret
        self.limits = limits or InputLimits()
        self.matchmaker = Matchmaker(redis, self.games, self.pools) if redis is not None else None

    async def ListGames(
        self, request: lobby_pb2.ListGamesRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.ListGamesResponse:
        return self.response

    def _game(self, name: str) -> GameInfo:
        game = self.games.get(name)
        if game is None or name not in self.pools:
            raise InvalidArgument(f"game: {name!r} is not served here (see ListGames)", field="game")
        return game

    def _matchmaker(self) -> Matchmaker:
        if self.matchmaker is None:
            raise InvalidArgument("game: this gateway has no Redis for the lobby (MOGAMES_REDIS_URL)")
        return self.matchmaker

    async def ListMatches(
        self, request: lobby_pb2.ListMatchesRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.ListMatchesResponse:
        game = self._game(request.game)
        if request.page_size > MAX_PAGE_SIZE:
            raise InvalidArgument(
                f"page_size: 1 to {MAX_PAGE_SIZE}, or 0 for {DEFAULT_PAGE_SIZE}", field="page_size"
            )
        size = request.page_size or DEFAULT_PAGE_SIZE
        cursor = _cursor(request.page_token)
        redis = self._matchmaker().redis
        index = keys.public_matches(game.name)
        game_stub = stub_class(game)
        pool = self.pools[game.name]

        async def get_match(match_id: str) -> common_pb2.Match | None:
            # At the match's replica, fail-fast: a game with no replica up is UNAVAILABLE now.
            return await _get_match(game_stub((await pool.choose(match_id.encode())).channel), match_id)

        found: list[tuple[float, common_pb2.Match]] = []
        top: float | str = "+inf" if cursor is None else cursor[0]
        skip_from = None if cursor is None else cursor[1]
        offset = 0
        # One more than a page: whether there is a next page is then known, not guessed.
        while len(found) <= size:
            batch: Any = await redis.zrevrangebyscore(
                index, top, "-inf", start=offset, num=size + 1, withscores=True
            )
            if not batch:
                break
            offset += len(batch)
            entries: list[tuple[str, float]] = [(text(m), float(score)) for m, score in batch]
            if skip_from is not None:
                # Ties on the score are in descending member order: skip up to the cursor.
                entries = [(m, s) for m, s in entries if not (s == top and m >= skip_from)]
            matches = await asyncio.gather(*(get_match(m) for m, _ in entries))
            gone = [m for (m, _), match in zip(entries, matches, strict=True) if match is None]
            if gone:
                await redis.zrem(index, *gone)  # expired matches leave the index lazily
                offset -= len(gone)
            found += [
                (score, match)
                for (_, score), match in zip(entries, matches, strict=True)
                if match is not None and _wanted(match, request)
            ]
        page = found[:size]
        more = len(found) > size
        token = _page_token(page[-1][0], page[-1][1].match_id) if more else ""
        return lobby_pb2.ListMatchesResponse(matches=[m for _, m in page], next_page_token=token)

    async def FindMatch(
        self, request: lobby_pb2.FindMatchRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.FindMatchResponse:
        self._game(request.game)
        matchmaker = self._matchmaker()
        client = client_id(context.invocation_metadata(), context.peer(), self.limits)
        ticket = matchmaker.ticket(
            request.game, request.players, request.ticket_id, request.player_name, client
        )
        session, player = self._session(context)
        if player:
            await refuse_deleted(matchmaker.redis, player)
        level = bot_level(request.bot_level, "bot_level")
        ticket = dataclasses.replace(ticket, bot_level=level, session=session, player=player)
        wait_s = request.wait_seconds or self.find_wait_s
        joined = await matchmaker.find(ticket, wait_s, request.fill_with_bots)
        return lobby_pb2.FindMatchResponse(joined=joined)

    def _session(self, context: grpc.aio.ServicerContext) -> tuple[str, str]:
        """The call's player session and its player, checked here so that a bad one is
        refused before it queues (it would fail the whole group's seating later); ("", "")
        without one."""
        token = session_token(context.invocation_metadata())
        if token is None:
            return "", ""
        if not self.token_secret:
            raise FailedPrecondition(
                f"{SESSION_METADATA}: this gateway cannot check player sessions (no MOGAMES_TOKEN_SECRET)",
                reason="sessions_off",
            )
        return token, player_of_session(self.token_secret, token, int(time.time() * 1000))

    async def CancelFindMatch(
        self, request: lobby_pb2.CancelFindMatchRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.CancelFindMatchResponse:
        self._game(request.game)
        matchmaker = self._matchmaker()
        if not request.ticket_id:
            raise InvalidArgument("ticket_id: required (the one FindMatch was sent)", field="ticket_id")
        client = client_id(context.invocation_metadata(), context.peer(), self.limits)
        ticket = matchmaker.ticket(request.game, request.players, request.ticket_id, client=client)
        return lobby_pb2.CancelFindMatchResponse(cancelled=await matchmaker.cancel(ticket))


async def _get_match(stub: object, match_id: str) -> common_pb2.Match | None:
    try:
        return await stub.GetMatch(  # type: ignore[attr-defined, no-any-return]
            common_pb2.GetMatchRequest(match_id=match_id), timeout=RPC_TIMEOUT_S
        )
    except grpc.aio.AioRpcError as error:
        if error.code() == grpc.StatusCode.NOT_FOUND:
            return None
        raise
