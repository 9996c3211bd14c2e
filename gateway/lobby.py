"""``mogames.lobby.v1.Lobby``: which games this gateway serves."""

from __future__ import annotations

import grpc
from mogames.lobby.v1 import lobby_pb2, lobby_pb2_grpc

from services.engine import GameInfo


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


class LobbyServicer(lobby_pb2_grpc.LobbyServicer):
    def __init__(self, games: list[GameInfo]) -> None:
        self.response = lobby_pb2.ListGamesResponse(games=[game_info(g) for g in games])

    async def ListGames(
        self, request: lobby_pb2.ListGamesRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.ListGamesResponse:
        return self.response
