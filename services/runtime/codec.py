"""Translation between a game's protobuf messages and the engine's plain dicts.

Engines speak dicts shaped like their proto messages (proto field names, every field
present), so one generic codec serves every game.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message

from services.engine import GameInfo
from services.runtime.store import StoredEvent

M = TypeVar("M", bound=Message)


def to_dict(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def from_dict(cls: type[M], body: dict[str, Any]) -> M:
    """``body`` as a ``cls`` message: through the message's own constructor (nested dicts and
    lists, enum names: done in C, ~15x faster than ``json_format``); a body the constructor
    does not take (a JSON-only spelling) goes through ``json_format`` as before."""
    try:
        return cls(**body)
    except (TypeError, ValueError):
        return json_format.ParseDict(body, cls())


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
        return from_dict(self.pb2.Move, move)

    def view(self, body: dict[str, Any], version: int, seat: int | None, active: list[int]) -> Message:
        """A seat's view, or a spectator's (``seat`` None: the seat field stays 0)."""
        message = from_dict(self.pb2.View, body)
        message.version = version
        message.seat = seat or 0
        message.active_seats.extend(active)
        return message

    def event(self, event: StoredEvent) -> Message:
        message = from_dict(self.pb2.MatchEvent, event.body)
        message.version = event.version
        message.seq = event.seq
        return message
