"""The contract between a pure rules engine and the platform.

Every game module (``services/<game>/rules.py``) exposes ``GAME: GameInfo`` and a
``State`` class with the small fixed API below. Moves, events and views are plain
JSON-compatible dicts shaped exactly like the game's protobuf messages (proto field
names; a move or event is ``{"<oneof field>": {...fields...}}``), so the service
layer translates them generically and the engine never imports protobuf.

This module, like every rules engine, imports nothing of grpc, redis, asyncio or
logging: ``tests/test_purity.py`` enforces it.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

import msgspec

JsonDict = dict[str, Any]


class MoveError(Exception):
    """Base of every refusal of a move; the refused move changes nothing."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"{rule}: {message}")
        self.rule = rule
        self.message = message


class MalformedMove(MoveError):
    """The move is not well formed (unknown kind, missing or out-of-range field).

    ``rule`` names the offending field, e.g. ``"move.play_card.position"``.
    Maps to INVALID_ARGUMENT.
    """


class RuleViolation(MoveError):
    """The move is well formed but the rules forbid it now.

    ``rule`` is a short stable identifier such as ``"not_your_turn"`` or
    ``"follow_suit"``. Maps to FAILED_PRECONDITION.
    """


class NotYourTurn(RuleViolation):
    def __init__(self, seat: int) -> None:
        super().__init__("not_your_turn", f"seat {seat} has no decision to make now")


class BadOptions(MoveError):
    """Match creation parameters (player count, options) are invalid: INVALID_ARGUMENT."""


class Event(msgspec.Struct, frozen=True):
    """Something that happened, as the game's MatchEvent oneof dict.

    ``to`` lists the seats allowed to see it; ``None`` means everyone,
    spectators included. Secrets (a drawn card) go in an event addressed to
    their owner, next to a public event without the secret. A frozen msgspec
    Struct: every apply makes several, and it is built ~9x faster than a frozen
    dataclass.
    """

    body: JsonDict
    to: tuple[int, ...] | None = None

    def visible_to(self, seat: int | None) -> bool:
        return self.to is None or (seat is not None and seat in self.to)


@dataclass(frozen=True)
class OptionInfo:
    name: str
    type: str
    description: str
    default: Any


@dataclass(frozen=True)
class GameInfo:
    name: str  # "happy_mochi"
    title: str  # "Happy Mochi"
    package: str  # "happymochi": proto package mogames.<package>.v1
    service: str  # "HappyMochi": gRPC service name
    min_players: int
    max_players: int
    # The most moves a match may take before the server ends it ABANDONED (reason "move_cap"):
    # a match that still loops (bots moving back and forth) ends, and no real one comes near
    # it. Several times the longest all-random-bot match seen (make bench-policy --level
    # random). MOGAMES_MAX_MOVES overrides it for a service.
    move_cap: int
    options: tuple[OptionInfo, ...] = field(default_factory=tuple)

    @property
    def full_service(self) -> str:
        return f"mogames.{self.package}.v1.{self.service}"

    def check_players(self, players: int) -> None:
        if not self.min_players <= players <= self.max_players:
            raise BadOptions(
                "players",
                f"{self.title} takes {self.min_players} to {self.max_players} players, not {players}",
            )


class EngineState(msgspec.Struct, kw_only=True):
    """Base of every game's ``State``: a typed msgspec Struct, so the platform stores it with
    msgspec's MessagePack codec (field by field, in C) and no engine lists its fields twice.

    Fields hold only plain data (ints, strings, lists, dicts, nested Structs), never a cycle.
    ``to_dict``/``from_dict`` are the JSON-compatible form tests and tools use."""

    def to_dict(self) -> JsonDict:
        """A deep copy as plain dicts and lists."""
        data: JsonDict = msgspec.to_builtins(self)
        return data

    @classmethod
    def from_dict(cls, data: JsonDict) -> Self:
        """The state ``to_dict`` gave (checked against the field types)."""
        return msgspec.convert(data, cls)


class GameState(Protocol):
    """What every ``rules.State`` provides (OpenSpiel-style fixed API)."""

    @classmethod
    def new(cls, players: int, seed: int, options: JsonDict) -> Self: ...

    @classmethod
    def from_dict(cls, data: JsonDict) -> Self: ...

    def to_dict(self) -> JsonDict: ...

    def active_seats(self) -> list[int]: ...

    def legal_moves(self, seat: int) -> list[JsonDict]: ...

    def apply(self, seat: int, move: JsonDict) -> list[Event]: ...

    def is_over(self) -> bool: ...

    def scores(self) -> list[int]: ...

    def winners(self) -> list[int]: ...

    def view(self, seat: int | None) -> JsonDict: ...

    def opening_events(self) -> list[Event]:
        """The events of the set-up ``new`` made (round 1's deal: the public part and each
        seat's private part), stored at version 0 right after ``match_started`` so that
        the first round can be rebuilt from the stream like every later one."""
        ...

    def timeout_move(self, seat: int) -> JsonDict:
        """The move the server makes for ``seat`` when its decision times out (or a
        ``random``-level bot has nothing better): one of ``legal_moves(seat)``, chosen by
        the game's timeout policy (the least harmful default a player would expect) and
        deterministic for a given state."""
        ...


def rng(seed: int, *salt: object) -> random.Random:
    """A deterministic random source for one chance event.

    States store only the match seed and a counter, not a generator's state, so
    the same seed and the same moves always give the same match.
    """
    key = ":".join([str(seed), *map(str, salt)]).encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def split_move(move: Any, kinds: Mapping[str, Collection[str]]) -> tuple[str, JsonDict]:
    """The kind and body of a move dict ``{"<kind>": {...}}``, checked against ``kinds``
    (move kind -> its field names); raises ``MalformedMove`` naming the offending part."""
    if not isinstance(move, dict) or len(move) != 1:
        raise MalformedMove("move", "a move is exactly one of: " + ", ".join(kinds))
    kind, body = next(iter(move.items()))
    if kind not in kinds:
        raise MalformedMove("move", f"unknown move kind {kind!r}")
    body = {} if body is None else body
    if not isinstance(body, dict):
        raise MalformedMove(f"move.{kind}", "the move body must be a message")
    for key in body:
        if key not in kinds[kind]:
            raise MalformedMove(f"move.{kind}.{key}", f"{kind} has no field {key!r}")
    return kind, body
