"""UpdateNotificationSettings of mogames.players.v1.Players (quiet hours, "notify me").

The servicer hands each call here with the signed-in caller's player id.
"""

from __future__ import annotations

from mogames.players.v1 import players_pb2

from services.runtime.errors import Unimplemented
from services.runtime.redis_client import RedisClient
from services.runtime.settings import PlayersSettings


class NotificationHandlers:
    def __init__(self, redis: RedisClient, settings: PlayersSettings) -> None:
        self.redis = redis
        self.settings = settings

    async def update_settings(
        self, request: players_pb2.UpdateNotificationSettingsRequest, player_id: str
    ) -> players_pb2.UpdateNotificationSettingsResponse:
        raise Unimplemented("UpdateNotificationSettings: notifications are not served yet")

    async def forget(self, player_id: str) -> None:
        """DeletePlayer: remove the player's notification settings."""
