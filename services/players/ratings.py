"""GetRating, GetLeaderboard and ListRatingHistory of mogames.players.v1.Players.

The servicer hands each call here with the caller's player id ("" without a session).
"""

from __future__ import annotations

from mogames.players.v1 import players_pb2

from services.runtime.errors import Unimplemented
from services.runtime.redis_client import RedisClient
from services.runtime.settings import PlayersSettings


class RatingHandlers:
    def __init__(self, redis: RedisClient, settings: PlayersSettings) -> None:
        self.redis = redis
        self.settings = settings

    async def get_rating(
        self, request: players_pb2.GetRatingRequest, player_id: str
    ) -> players_pb2.GetRatingResponse:
        raise Unimplemented("GetRating: ratings are not served yet")

    async def get_leaderboard(
        self, request: players_pb2.GetLeaderboardRequest, player_id: str
    ) -> players_pb2.GetLeaderboardResponse:
        raise Unimplemented("GetLeaderboard: leaderboards are not served yet")

    async def list_rating_history(
        self, request: players_pb2.ListRatingHistoryRequest, player_id: str
    ) -> players_pb2.ListRatingHistoryResponse:
        raise Unimplemented("ListRatingHistory: rating history is not served yet")
