"""UpdateNotificationSettings of mogames.players.v1.Players (quiet hours, "notify me").

The servicer hands each call here with the signed-in caller's player id. The notifier
worker (services/workers) reads what this writes (services.workers.notify_settings).
"""

from __future__ import annotations

from mogames.players.v1 import players_pb2

from services.runtime.redis_client import RedisClient
from services.runtime.settings import PlayersSettings
from services.workers import notify_settings
from services.workers.notify_settings import QuietHours


class NotificationHandlers:
    def __init__(self, redis: RedisClient, settings: PlayersSettings) -> None:
        self.redis = redis
        self.settings = settings

    async def update_settings(
        self, request: players_pb2.UpdateNotificationSettingsRequest, player_id: str
    ) -> players_pb2.UpdateNotificationSettingsResponse:
        quiet = None
        if request.HasField("quiet_hours"):
            given = request.quiet_hours
            quiet = QuietHours(given.start_minute, given.end_minute, given.time_zone)
        now = await notify_settings.update(
            self.redis, player_id, quiet, list(request.notify_matches), list(request.mute_matches)
        )
        return players_pb2.UpdateNotificationSettingsResponse(
            quiet_hours=players_pb2.QuietHours(
                start_minute=now.start_minute, end_minute=now.end_minute, time_zone=now.time_zone
            )
        )

    async def forget(self, player_id: str) -> None:
        """DeletePlayer: remove the player's notification settings."""
        await notify_settings.forget(self.redis, player_id)
