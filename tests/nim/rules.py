"""Nim: piles of stones; in turn each player takes one or more stones from one pile; whoever
takes the last stone wins (scores 1, everyone else 0).

The toy game the tests add to the platform (docs/adding-a-game.md). The piles' sizes are drawn
from the match seed; nothing is hidden, so every view is the same.
"""

from __future__ import annotations

from typing import Any, Self

from services.engine import (
    BadOptions,
    EngineState,
    Event,
    GameInfo,
    JsonDict,
    MalformedMove,
    NotYourTurn,
    OptionInfo,
    RuleViolation,
    rng,
    split_move,
)

GAME = GameInfo(
    name="nim",
    title="Nim",
    package="nim",
    service="Nim",
    min_players=2,
    max_players=4,
    # Every move takes a stone: no match outlasts its stones (at most 8 piles of 20).
    move_cap=200,
    options=(
        OptionInfo("piles", "uint32", "how many piles (1 to 8); 0: 3", 0),
        OptionInfo("largest", "uint32", "the most stones a pile starts with (1 to 20); 0: 7", 0),
    ),
)
MOVE_KINDS = {"take": ("pile", "count")}
NOBODY = -1


class State(EngineState, kw_only=True):
    players: int
    seed: int
    piles: list[int]
    turn: int = 0
    winner: int = NOBODY

    @classmethod
    def new(cls, players: int, seed: int, options: JsonDict) -> Self:
        GAME.check_players(players)
        known = {info.name: info.default for info in GAME.options}
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise BadOptions(f"options.{unknown[0]}", f"Nim has no option {unknown[0]!r}")
        piles = _bounded(options.get("piles", 0), "piles", 8) or 3
        largest = _bounded(options.get("largest", 0), "largest", 20) or 7
        draw = rng(seed, "piles")
        return cls(players=players, seed=seed, piles=[draw.randint(1, largest) for _ in range(piles)])

    def active_seats(self) -> list[int]:
        return [] if self.is_over() else [self.turn]

    def legal_moves(self, seat: int) -> list[JsonDict]:
        if seat != self.turn or self.is_over():
            return []
        return [
            {"take": {"pile": pile, "count": count}}
            for pile, stones in enumerate(self.piles)
            for count in range(1, stones + 1)
        ]

    def apply(self, seat: int, move: JsonDict) -> list[Event]:
        _kind, body = split_move(move, MOVE_KINDS)
        pile, count = body.get("pile", 0), body.get("count", 0)
        if not isinstance(pile, int) or not 0 <= pile < len(self.piles):
            raise MalformedMove("move.take.pile", f"there are piles 0 to {len(self.piles) - 1}, not {pile!r}")
        if not isinstance(count, int) or count < 1:
            raise MalformedMove("move.take.count", f"a take is of at least one stone, not {count!r}")
        if seat != self.turn or self.is_over():
            raise NotYourTurn(seat)
        if count > self.piles[pile]:
            raise RuleViolation("not_enough_stones", f"pile {pile} holds {self.piles[pile]}, not {count}")
        self.piles[pile] -= count
        if self.is_over():
            self.winner = seat
        else:
            self.turn = (seat + 1) % self.players
        taken = {"seat": seat, "pile": pile, "count": count, "left": self.piles[pile]}
        return [Event({"stones_taken": taken})]

    def is_over(self) -> bool:
        return not any(self.piles)

    def scores(self) -> list[int]:
        return [int(seat == self.winner) for seat in range(self.players)]

    def winners(self) -> list[int]:
        return [self.winner] if self.winner != NOBODY else []

    def view(self, seat: int | None) -> JsonDict:
        return {"player_count": self.players, "piles": list(self.piles), "turn": self.turn}

    def opening_events(self) -> list[Event]:
        return [Event({"piles_set": {"piles": list(self.piles)}})]

    def timeout_move(self, seat: int) -> JsonDict:
        """One stone from the first pile that has any: the slowest way to the end."""
        pile = next(index for index, stones in enumerate(self.piles) if stones)
        return {"take": {"pile": pile, "count": 1}}


def _bounded(value: Any, name: str, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise BadOptions(f"options.{name}", f"{name} must be from 0 to {most}, not {value!r}")
    return value
