"""A match's record as Redis stores it: everything about the match but its history,
packed as MessagePack, with the engine's state left packed until a replica needs it decoded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from services.engine import EngineState

_pack = msgspec.msgpack.Encoder().encode

# A record this process already holds decoded, by match id and rev (to read only), if any.
KnownRecord = Callable[[str, int], "MatchRecord | None"]


@dataclass
class MatchRecord:
    """Everything stored about a match. ``state`` is the engine's own snapshot."""

    match_id: str
    game: str
    players: int
    seed: int
    options: dict[str, Any]
    seats: list[str | None]
    status: str
    version: int
    # The engine's state as stored: its MessagePack (``encode_state``), which ``StateDecoder``
    # reads.
    state: Any
    created_at: float
    updated_at: float
    # Sequence number of the last event stored under the current version.
    event_seq: int = 0
    # The checked TableOptions, and what they rule per seat: tokens, bots, clocks
    # (services/runtime/tables.py owns both shapes).
    table: dict[str, Any] = field(default_factory=dict)
    lifecycle: dict[str, Any] = field(default_factory=dict)
    rev: int = field(default=0, compare=False)

    def encode(self) -> bytes:
        # Not dataclasses.asdict: it deep-copies the engine state, the costliest part of a move.
        return _pack({f.name: getattr(self, f.name) for f in _RECORD_FIELDS})

    @classmethod
    def decode(cls, raw: bytes | str, rev: int) -> MatchRecord:
        """``raw`` as redis-py types a reply (its clients here never decode to str)."""
        # The state is left encoded (msgspec.Raw): its engine's typed decoder reads it, once,
        # and only when no decoded state of this rev is at hand.
        stored = _decode_record(raw.encode() if isinstance(raw, str) else raw)
        return cls(**{name: getattr(stored, name) for name in _STORED_FIELDS}, rev=rev)


_RECORD_FIELDS = [f for f in dataclasses.fields(MatchRecord) if f.name != "rev"]


class _StoredRecord(msgspec.Struct):
    """A MatchRecord as MessagePack holds it, the state left undecoded."""

    match_id: Any
    game: Any
    players: Any
    seed: Any
    options: Any
    seats: Any
    status: Any
    version: Any
    state: msgspec.Raw
    created_at: Any
    updated_at: Any
    event_seq: Any = 0
    table: Any = msgspec.field(default_factory=dict)
    lifecycle: Any = msgspec.field(default_factory=dict)


_STORED_FIELDS = _StoredRecord.__struct_fields__
_decode_record = msgspec.msgpack.Decoder(_StoredRecord).decode


def encode_state(state: EngineState) -> msgspec.Raw:
    """An engine state as a record stores it: the MessagePack of its Struct (field names as
    map keys, the same bytes its ``to_dict`` would pack to)."""
    return msgspec.Raw(_pack(state))


class StateDecoder:
    """Reads ``State`` from a record's stored state by msgspec's decoder typed with the
    State Struct (no dicts built on the way)."""

    def __init__(self, state_class: type[EngineState]) -> None:
        self._decode = msgspec.msgpack.Decoder(state_class).decode

    def __call__(self, stored: msgspec.Raw | bytes) -> Any:
        return self._decode(stored)
