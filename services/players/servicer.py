"""The RPCs of mogames.players.v1.Players, translated to the modules that do the work.

Errors are mapped to status codes by the shared interceptor (services/runtime/errors.py).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import grpc
import structlog
from mogames.common.v1 import common_pb2
from mogames.players.v1 import players_pb2, players_pb2_grpc

from services.players.accounts import Accounts, Profile, Session, SignedIn
from services.players.my_matches import MyMatch, MyMatches
from services.players.notifications import NotificationHandlers
from services.players.oidc import OidcVerifier
from services.players.ratings import RatingHandlers
from services.runtime.auth import bearer_token, player_of_session
from services.runtime.errors import Unauthenticated
from services.runtime.limits import client_id
from services.runtime.redis_client import RedisClient
from services.runtime.servicer import match_message
from services.runtime.settings import PlayersSettings

_NOTICE_KINDS = {
    "your_turn": players_pb2.TURN_NOTICE_KIND_YOUR_TURN,
    "match_started": players_pb2.TURN_NOTICE_KIND_MATCH_STARTED,
    "match_ended": players_pb2.TURN_NOTICE_KIND_MATCH_ENDED,
    "timed_out": players_pb2.TURN_NOTICE_KIND_TIMED_OUT,
}


def session_message(session: Session) -> players_pb2.Session:
    return players_pb2.Session(
        player_id=session.player_id,
        session_token=session.session_token,
        session_expires_unix_ms=session.session_expires_ms,
        refresh_token=session.refresh_token,
        refresh_expires_unix_ms=session.refresh_expires_ms,
    )


def profile_message(profile: Profile) -> players_pb2.Profile:
    return players_pb2.Profile(
        player_id=profile.player_id,
        display_name=profile.display_name,
        locale=profile.locale,
        linked_issuers=profile.linked_issuers,
    )


def my_match_message(match: MyMatch) -> players_pb2.MyMatch:
    return players_pb2.MyMatch(
        game=match.game,
        match=match_message(match.facts),
        seat=match.seat,
        your_turn=match.your_turn,
        your_deadline_unix_ms=match.your_deadline_ms,
        updated_unix_ms=match.updated_ms,
    )


def _signed_in(signed: SignedIn) -> tuple[players_pb2.Session, players_pb2.Profile, bool]:
    return session_message(signed.session), profile_message(signed.profile), signed.created


class PlayersServicer(players_pb2_grpc.PlayersServicer):
    def __init__(self, redis: RedisClient, settings: PlayersSettings) -> None:
        self.settings = settings
        oidc = OidcVerifier(settings.oidc) if settings.oidc is not None else None
        self.accounts = Accounts(redis, settings, oidc)
        self.my_matches = MyMatches(redis, settings)
        self.ratings = RatingHandlers(redis, settings)
        self.notifications = NotificationHandlers(redis, settings)

    def add_to_server(self, server: grpc.aio.Server) -> None:
        players_pb2_grpc.add_PlayersServicer_to_server(self, server)

    async def close(self) -> None:
        """After the server stopped."""
        await self.my_matches.hub.close()

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
        player_id = player_of_session(self.settings.token_secret, token, int(time.time() * 1000))
        structlog.contextvars.bind_contextvars(player_id=player_id)
        return player_id

    def _client(self, context: grpc.aio.ServicerContext) -> str:
        # Only gateways reach the service (as for the game services' budgets).
        trust_any_peer = not self.settings.limits.trusted_proxies
        return client_id(context.invocation_metadata(), context.peer(), self.settings.limits, trust_any_peer)

    async def SignInGuest(
        self, request: players_pb2.SignInGuestRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.SignInGuestResponse:
        signed = await self.accounts.sign_in_guest(
            request.device_id,
            request.device_secret,
            request.display_name,
            request.locale,
            self._client(context),
        )
        session, profile, created = _signed_in(signed)
        return players_pb2.SignInGuestResponse(session=session, profile=profile, created=created)

    async def SignInWithProvider(
        self, request: players_pb2.SignInWithProviderRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.SignInWithProviderResponse:
        current = await self._caller(context, required=False)
        signed = await self.accounts.sign_in_with_provider(
            request.id_token, request.display_name, request.locale, current, self._client(context)
        )
        session, profile, created = _signed_in(signed)
        return players_pb2.SignInWithProviderResponse(session=session, profile=profile, created=created)

    async def RefreshSession(
        self, request: players_pb2.RefreshSessionRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.RefreshSessionResponse:
        session = await self.accounts.refresh(request.refresh_token, self._client(context))
        return players_pb2.RefreshSessionResponse(session=session_message(session))

    async def GetProfile(
        self, request: players_pb2.GetProfileRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.GetProfileResponse:
        profile = await self.accounts.profile(await self._caller(context))
        return players_pb2.GetProfileResponse(profile=profile_message(profile))

    async def UpdateProfile(
        self, request: players_pb2.UpdateProfileRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.UpdateProfileResponse:
        player_id = await self._caller(context)
        profile = await self.accounts.update_profile(player_id, request.display_name, request.locale)
        return players_pb2.UpdateProfileResponse(profile=profile_message(profile))

    async def DeletePlayer(
        self, request: players_pb2.DeletePlayerRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.DeletePlayerResponse:
        player_id = await self._caller(context)
        await self.accounts.profile(player_id)
        await self.notifications.forget(player_id)
        await self.ratings.forget(player_id)
        await self.accounts.delete(player_id)
        return players_pb2.DeletePlayerResponse()

    async def ListMyMatches(
        self, request: players_pb2.ListMyMatchesRequest, context: grpc.aio.ServicerContext
    ) -> players_pb2.ListMyMatchesResponse:
        player_id = await self._caller(context)
        await self.accounts.profile(player_id)  # a deleted player's session lists nothing
        status = common_pb2.MatchStatus.Name(request.status) if request.status else ""
        matches, token = await self.my_matches.list(
            player_id, status, request.your_turn_only, request.page_size, request.page_token
        )
        return players_pb2.ListMyMatchesResponse(
            matches=[my_match_message(m) for m in matches], next_page_token=token
        )

    async def WatchMyTurns(
        self, request: players_pb2.WatchMyTurnsRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[players_pb2.WatchMyTurnsResponse]:
        player_id = await self._caller(context)
        await self.accounts.profile(player_id)
        async for notice in self.my_matches.watch(player_id, self.settings.heartbeat_s):
            if notice is None:
                yield players_pb2.WatchMyTurnsResponse(heartbeat=players_pb2.Heartbeat())
                continue
            yield players_pb2.WatchMyTurnsResponse(
                notice=players_pb2.TurnNotice(
                    kind=_NOTICE_KINDS[notice.notice],
                    match=my_match_message(notice.match),
                    notice_id=notice.notice_id,
                )
            )

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
