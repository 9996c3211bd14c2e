"""Hand-built Nim positions for the rule tests (an engine holds no test constructors)."""

from __future__ import annotations

from tests.nim.rules import State


def position(piles: list[int], turn: int = 0, players: int = 2) -> State:
    """``turn`` to move with ``piles`` left."""
    return State(players=players, seed=1, piles=list(piles), turn=turn)


def last_stone(turn: int = 1, players: int = 3) -> State:
    """One stone left, in the middle pile: whoever takes it wins."""
    return position([0, 1, 0], turn, players)
