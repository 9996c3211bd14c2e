"""Translation between a game's protobuf messages and the engine's plain dicts.

Engines speak dicts shaped like their proto messages (proto field names, every field
present), so one generic codec serves every game.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from services.engine import GameInfo
from services.runtime.store import StoredEvent


def to_dict(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def generated_modules(game: GameInfo) -> tuple[ModuleType, ModuleType]:
    """The game's generated ``_pb2`` and ``_pb2_grpc`` modules (``make gen``)."""
    base = f"mogames.{game.package}.v1.{game.package}"
    return importlib.import_module(f"{base}_pb2"), importlib.import_module(f"{base}_pb2_grpc")


class Codec:
    def __init__(self, game: GameInfo) -> None:
        self.game = game
        self.pb2, self.pb2_grpc = generated_modules(game)

    def options(self, request: Message) -> dict[str, Any]:
        return to_dict(request.options)  # type: ignore[attr-defined]

    def move_in(self, move: Message) -> dict[str, Any] | None:
        """The engine form of a client's move; None when no move kind is set."""
        if move.WhichOneof("kind") is None:
            return None
        return to_dict(move)

    def move_out(self, move: dict[str, Any]) -> Message:
        return json_format.ParseDict(move, self.pb2.Move())

    def view(self, body: dict[str, Any], version: int, seat: int | None, active: list[int]) -> Message:
        """A seat's view, or a spectator's (``seat`` None: the seat field stays 0)."""
        message = json_format.ParseDict(body, self.pb2.View())
        message.version = version
        message.seat = seat or 0
        message.active_seats.extend(active)
        return message

    def event(self, event: StoredEvent) -> Message:
        message = json_format.ParseDict(event.body, self.pb2.MatchEvent())
        message.version = event.version
        message.seq = event.seq
        return message
