"""A bot decides from exactly what its seat may know.

For every game with an adapter: take a position, and a second true state that agrees with
it on everything the seat knows (its view and the events addressed to it) but differs in
what is hidden (other hands, the deck, the match seed). The server's decision path — which
is handed the true state — must decide the same move for both, for the same seed. A
planted cheat, the same search handed the true state instead of a sample, is caught by the
same check.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from services.bots.adapters import adapter, games_with_adapters
from services.bots.decide import decide, seat_information
from services.bots.levels import Budget
from services.bots.search import search
from services.engine import JsonDict
from tests.bots.positions import Position, player_counts, positions

BUDGET = Budget(playouts=12, cpu_s=None)
# A decision path: (game, true state, seat, events so far, seed) -> move.
Decider = Callable[[str, Any, int, list[Any], int], JsonDict]


def server_decision(game: str, state: Any, seat: int, events: list[Any], seed: int) -> JsonDict:
    """What the server does: only the seat's information reaches the search."""
    view, history = seat_information(state, seat, events)
    return decide(game, view, seat, "hard", seed, history=history, budget=BUDGET)


def cheating_decision(game: str, state: Any, seat: int, events: list[Any], seed: int) -> JsonDict:
    """The planted cheat: the same search, but every sample is the true state itself."""

    class Peeking:
        def __init__(self, module: Any) -> None:
            self.playout_move = module.playout_move
            for name in ("evaluate", "PLAYOUT_STEPS", "playout_steps", "round_of"):
                if hasattr(module, name):
                    setattr(self, name, getattr(module, name))

        def determinize(self, view: JsonDict, seat: int, rng: random.Random, history: Any = None) -> Any:
            return type(state).from_dict(state.to_dict())

    view, history = seat_information(state, seat, events)
    return search(Peeking(adapter(game)), view, seat, BUDGET, seed, history)  # type: ignore[arg-type]


def twin(position: Position, sample: int) -> Any:
    """Another true state the seat cannot tell from ``position.state``: sampled from the seat's
    information, so its hidden cards, deck and seed differ."""
    view, history = position.information()
    other = adapter(position.game).determinize(view, position.seat, random.Random(1000 + sample), history)
    assert other.view(position.seat) == view
    return other


def differing_decisions(game: str, decider: Decider, enough: int = 1000) -> int:
    """How many positions get a different move from two true states that agree on the seat's
    information (a fair decider: none), counting up to ``enough``."""
    differing = 0
    for players in player_counts(game):
        for seed in range(2):
            for i, position in enumerate(positions(game, players, seed, every=23, limit=160)):
                if len(position.state.legal_moves(position.seat)) < 2:
                    continue
                decision_seed = seed * 1000 + i
                first = decider(game, position.state, position.seat, position.events, decision_seed)
                for sample in range(2):
                    other = twin(position, sample)
                    # The events addressed to the seat are the same in both worlds: the twin
                    # is sampled to agree with them.
                    again = decider(game, other, position.seat, position.events, decision_seed)
                    differing += again != first
                if differing >= enough:
                    return differing
    return differing


@pytest.mark.parametrize("game", games_with_adapters())
def test_two_states_the_seat_cannot_tell_apart_get_the_same_decision(game):
    assert differing_decisions(game, server_decision) == 0


@pytest.mark.parametrize("game", games_with_adapters())
def test_a_bot_given_the_true_state_is_caught(game):
    assert differing_decisions(game, cheating_decision, enough=1) > 0
