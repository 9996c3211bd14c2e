"""Seeded positions of every game with a bot adapter, for the bot tests: the true state, the
seat to move, and every event so far (the seat's history is filtered from them)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from services.bots.decide import seat_information
from services.catalog import rules_module
from services.engine import Event, JsonDict
from services.runtime.bots import timeout_move


def player_counts(game: str) -> tuple[int, int]:
    """The smallest and the largest table of ``game``."""
    info = rules_module(game).GAME
    return info.min_players, info.max_players


@dataclass
class Position:
    game: str
    state: Any
    seat: int
    events: list[Event]

    def information(self) -> tuple[JsonDict, list[JsonDict] | None]:
        return seat_information(self.state, self.seat, self.events)


# Options that give a game something to hide where its default match hides nothing from a seat
# that remembers the events (Morisi's blocks are taken and paid in public): used on odd seeds.
HIDING_OPTIONS: dict[str, JsonDict] = {"morisi": {"prediction": True}}


def positions(game: str, players: int, seed: int, every: int = 7, limit: int = 400) -> list[Position]:
    """Positions along one match played by a mix of random and policy moves: one every
    ``every`` steps, up to ``limit`` steps or the end (odd seeds with ``HIDING_OPTIONS``)."""
    rules = rules_module(game)
    state = rules.State.new(players, seed, HIDING_OPTIONS.get(game, {}) if seed % 2 else {})
    events = list(state.opening_events())
    rng = random.Random(seed)
    found: list[Position] = []
    for step in range(limit):
        if state.is_over():
            break
        seat = state.active_seats()[0]
        if step % every == every - 1:
            found.append(Position(game, rules.State.from_dict(state.to_dict()), seat, list(events)))
        moves = state.legal_moves(seat)
        move = rng.choice(moves) if rng.random() < 0.5 else timeout_move(state, seat)
        events += state.apply(seat, move)
    return found
