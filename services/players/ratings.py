"""GetRating, GetLeaderboard and ListRatingHistory of mogames.players.v1.Players.

The servicer hands each call here with the caller's player id ("" without a session).
The ratings worker (services/workers) writes what these read (services.workers.ladders).
"""

from __future__ import annotations

from mogames.players.v1 import players_pb2

from services.catalog import GAME_PACKAGES
from services.runtime import keys
from services.runtime.errors import InvalidArgument, Unauthenticated
from services.runtime.redis_client import RedisClient, text
from services.runtime.settings import PlayersSettings
from services.workers.ladders import Ladders, PlayerRating

DEFAULT_TOP, MAX_TOP = 20, 100
DEFAULT_AROUND, MAX_AROUND = 5, 50
DEFAULT_PAGE, MAX_PAGE = 20, 100


def _ladder(name: str) -> str:
    if name not in GAME_PACKAGES:
        raise InvalidArgument(
            f"ladder: {name!r} is no ladder; one per game: {', '.join(sorted(GAME_PACKAGES))}", field="ladder"
        )
    return name


def _player(requested: str, caller: str) -> str:
    player = requested or caller
    if not player:
        raise Unauthenticated(
            "player_id: empty and no session sent: name a player or sign in", reason="no_session"
        )
    return player


def _bounded(value: int, default: int, most: int, field: str) -> int:
    if value > most:
        raise InvalidArgument(f"{field}: at most {most}", field=field)
    return value or default


def rating_message(rating: PlayerRating, display_name: str = "") -> players_pb2.Rating:
    return players_pb2.Rating(
        player_id=rating.player_id,
        ladder=rating.ladder,
        mu=rating.skill.mu,
        sigma=rating.skill.sigma,
        ordinal=rating.skill.ordinal,
        matches=rating.matches,
        rank=rating.rank,
        display_name=display_name,
    )


class RatingHandlers:
    def __init__(self, redis: RedisClient, settings: PlayersSettings) -> None:
        self.redis = redis
        self.settings = settings
        self.ladders = Ladders(redis)

    async def _named(self, ratings: list[PlayerRating]) -> list[players_pb2.Rating]:
        """Each rating with its player's display name (from their profile; "" once deleted)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for rating in ratings:
                pipe.hget(keys.player_profile(rating.player_id), "display_name")
            names = await pipe.execute() if ratings else []
        return [rating_message(r, text(n) if n else "") for r, n in zip(ratings, names, strict=True)]

    async def get_rating(
        self, request: players_pb2.GetRatingRequest, player_id: str
    ) -> players_pb2.GetRatingResponse:
        ladder = _ladder(request.ladder)
        rating = await self.ladders.rating(ladder, _player(request.player_id, player_id))
        return players_pb2.GetRatingResponse(rating=(await self._named([rating]))[0])

    async def get_leaderboard(
        self, request: players_pb2.GetLeaderboardRequest, player_id: str
    ) -> players_pb2.GetLeaderboardResponse:
        ladder = _ladder(request.ladder)
        top = _bounded(request.top, DEFAULT_TOP, MAX_TOP, "top")
        around = _bounded(request.around, DEFAULT_AROUND, MAX_AROUND, "around")
        answer = players_pb2.GetLeaderboardResponse(
            top=await self._named(await self.ladders.top(ladder, top))
        )
        if request.around_player_id:
            near = await self.ladders.around(ladder, request.around_player_id, around)
            answer.around.extend(await self._named(near))
        return answer

    async def list_rating_history(
        self, request: players_pb2.ListRatingHistoryRequest, player_id: str
    ) -> players_pb2.ListRatingHistoryResponse:
        ladder = _ladder(request.ladder)
        player = _player(request.player_id, player_id)
        size = _bounded(request.page_size, DEFAULT_PAGE, MAX_PAGE, "page_size")
        offset = 0
        if request.page_token:
            if not request.page_token.isdigit():
                raise InvalidArgument("page_token: pass next_page_token as it came", field="page_token")
            offset = int(request.page_token)
        # One more than the page: whether a next page exists.
        changes = await self.ladders.history(ladder, player, offset, size + 1)
        return players_pb2.ListRatingHistoryResponse(
            changes=[
                players_pb2.RatingChange(
                    match_id=c.match_id,
                    mu=c.skill.mu,
                    sigma=c.skill.sigma,
                    ordinal=c.skill.ordinal,
                    unix_ms=c.unix_ms,
                )
                for c in changes[:size]
            ],
            next_page_token=str(offset + size) if len(changes) > size else "",
        )

    async def forget(self, player_id: str) -> None:
        """DeletePlayer: the player's ratings, places and history on every ladder."""
        await self.ladders.forget(sorted(GAME_PACKAGES), player_id)
