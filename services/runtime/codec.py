"""Translation between a game's protobuf messages and the engine's plain dicts, for its
servicer: options and moves in; moves, views and events out.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from services.engine import GameInfo
from services.runtime.by_identity import ByIdentity
from services.runtime.event_packing import EventPacking, packing_for
from services.runtime.history import StoredEvent
from services.runtime.proto_dicts import from_dict, generated_modules, stub_class, to_dict

__all__ = ["Codec", "from_dict", "generated_modules", "stub_class", "to_dict"]

# Event messages a codec keeps made (a commit's events go to every watcher and the answer).
EVENTS_KEPT = 4096


class Codec:
    def __init__(self, game: GameInfo) -> None:
        self.game = game
        self.pb2, self.pb2_grpc = generated_modules(game)
        self._events: ByIdentity[Message] = ByIdentity(EVENTS_KEPT)
        # The store's bytes of event bodies: a message is parsed from them when they are
        # at hand, which is cheaper than converting the body's dict again.
        self._packing: EventPacking = packing_for(game.name)

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
        """The event as sent (never to be changed: it is shared). Made once per stored event
        however many watchers and answers carry it."""
        message = self._events.get(event)
        if message is None:
            packed = self._packing.packed(event.body)
            if packed is None:
                message = from_dict(self.pb2.MatchEvent, event.body)
            else:
                message = self.pb2.MatchEvent.FromString(packed)
            message.version = event.version
            message.seq = event.seq
            self._events.put(event, message)
        return message
