"""The RPCs of mogames.players.v1.Players, translated to the modules that do the work.

Errors are mapped to status codes by the shared interceptor (services/runtime/errors.py).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import grpc
from mogames.players.v1 import players_pb2, players_pb2_grpc

from services.players.notifications import NotificationHandlers
from services.players.ratings import RatingHandlers
from services.runtime.auth import bearer_token, player_of_session
from services.runtime.errors import Unauthenticated, Unimplemented
from services.runtime.redis_client import RedisClient
from services.runtime.settings import PlayersSettings


class PlayersServicer(players_pb2_grpc.PlayersServicer):
    def __init__(self, redis: RedisClient, settings: PlayersSettings) -> None:
        self.settings = settings
        self.ratings = RatingHandlers(redis, settings)
        self.notifications = NotificationHandlers(redis, settings)

    def add_to_server(self, server: grpc.aio.Server) -> None:
        players_pb2_grpc.add_PlayersServicer_to_server(self, server)

    async def close(self) -> None:
        """After the server stopped."""

    async def _caller(self, context: grpc.aio.ServicerContext, required: bool = True) -> str:
        """The player id of the call's session ("" when none is sent and none is required)."""
        token = bearer_token(context.invocation_metadata())
        if token is None:
            if required:
                raise Unauthenticated(
                    "authorization: missing 'Bearer <session_token>' metadata (from SignInGuest or"
                    " SignInWithProvider)",
                    reason="no_session",
                )
            return ""
        return player_of_session(self.settings.token_secret, token, int(time.time() * 1000))

    async def SignInGuest(
        self, request: players_pb2.SignInGuestRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.SignInGuestResponse:
        raise Unimplemented("SignInGuest: not served yet")

    async def SignInWithProvider(
        self, request: players_pb2.SignInWithProviderRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.SignInWithProviderResponse:
        raise Unimplemented("SignInWithProvider: not served yet")

    async def RefreshSession(
        self, request: players_pb2.RefreshSessionRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.RefreshSessionResponse:
        raise Unimplemented("RefreshSession: not served yet")

    async def GetProfile(
        self, request: players_pb2.GetProfileRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.GetProfileResponse:
        raise Unimplemented("GetProfile: not served yet")

    async def UpdateProfile(
        self, request: players_pb2.UpdateProfileRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.UpdateProfileResponse:
        raise Unimplemented("UpdateProfile: not served yet")

    async def DeletePlayer(
        self, request: players_pb2.DeletePlayerRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.DeletePlayerResponse:
        raise Unimplemented("DeletePlayer: not served yet")

    async def ListMyMatches(
        self, request: players_pb2.ListMyMatchesRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.ListMyMatchesResponse:
        raise Unimplemented("ListMyMatches: not served yet")

    async def WatchMyTurns(
        self, request: players_pb2.WatchMyTurnsRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[players_pb2.WatchMyTurnsResponse]:
        raise Unimplemented("WatchMyTurns: not served yet")
        yield  # an async generator, like every server-streaming handler

    async def UpdateNotificationSettings(
        self, request: players_pb2.UpdateNotificationSettingsRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.UpdateNotificationSettingsResponse:
        return await self.notifications.update_settings(request, await self._caller(context))

    async def GetRating(
        self, request: players_pb2.GetRatingRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.GetRatingResponse:
        return await self.ratings.get_rating(request, await self._caller(context, required=False))

    async def GetLeaderboard(
        self, request: players_pb2.GetLeaderboardRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.GetLeaderboardResponse:
        return await self.ratings.get_leaderboard(request, await self._caller(context, required=False))

    async def ListRatingHistory(
        self, request: players_pb2.ListRatingHistoryRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.ListRatingHistoryResponse:
        return await self.ratings.list_rating_history(request, await self._caller(context, required=False))
