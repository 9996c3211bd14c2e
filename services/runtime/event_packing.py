"""How a match's history stores an event body: as its game's ``MatchEvent`` protobuf bytes.

An engine's event is a dict shaped like its MatchEvent oneof (``{"card_drawn": {...}}``);
MessagePack keeps its field and enum names, protobuf numbers them. The bytes are about a
quarter of the MessagePack's, which is what a commit leaves in the match's tail, and its
archive compresses them about a fifth smaller (docs/storage.md). The version and seq are
not in them: the commit holds those once for all its events.

A body's bytes are kept by the body (for as long as it lives, within ``KEPT``): the
servicer parses the message it sends from them rather than converting the dict again.
"""

from __future__ import annotations

import functools
from typing import Any

from services.catalog import rules_module
from services.runtime.by_identity import ByIdentity
from services.runtime.proto_dicts import engine_dict, from_dict, generated_modules

# Bodies whose bytes are kept (a commit's few, and a history read's).
KEPT = 4096


class EventPacking:
    """One game's event bodies to and from the bytes its history stores."""

    def __init__(self, package: str) -> None:
        self.message_type: Any = generated_modules(package)[0].MatchEvent
        self._packed: ByIdentity[bytes] = ByIdentity(KEPT)

    def pack(self, body: dict[str, Any]) -> bytes:
        packed = self._packed.get(body)
        if packed is None:
            packed = from_dict(self.message_type, body).SerializeToString()
            self._packed.put(body, packed)
        return packed

    def unpack(self, packed: bytes) -> dict[str, Any]:
        """The body ``pack`` made ``packed`` of, as its engine wrote it."""
        message = self.message_type.FromString(packed)
        kind = message.WhichOneof("event")
        if kind is None:
            raise ValueError("a stored event is of no kind this server knows (a newer server's?)")
        body = {kind: engine_dict(getattr(message, kind))}
        self._packed.put(body, packed)
        return body

    def packed(self, body: dict[str, Any]) -> bytes | None:
        """The bytes of ``body`` if it was packed or unpacked here lately."""
        return self._packed.get(body)


@functools.cache
def packing_for(game: str) -> EventPacking:
    """The one EventPacking of ``game`` (a short name), shared by its store and codec."""
    return EventPacking(rules_module(game).GAME.package)
