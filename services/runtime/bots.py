"""The moves the server makes itself: a server bot's, and a timed-out seat's.

Pure functions of the engine state (no Redis, no gRPC), deterministic for a given match,
version and seat, so whichever replica makes the move makes the same one.
"""

from __future__ import annotations

from typing import Any

from services.engine import rng


def timeout_move(state: Any, seat: int) -> dict[str, Any]:
    """The game's timeout policy (``State.timeout_move``, one of the seat's legal moves)."""
    policy = getattr(state, "timeout_move", None)
    if policy is not None:
        try:
            move: dict[str, Any] = policy(seat)
            return move
        except NotImplementedError:
            pass
    # An engine without its policy yet (the engine helpers are landing them): the first legal
    # move is always allowed, if not always the kindest.
    return state.legal_moves(seat)[0]


def bot_move(state: Any, seat: int, level: str, seed: int, version: int) -> dict[str, Any]:
    """A bot's move without a search: ``random`` picks any legal move (seeded by the match, so
    replayable); ``policy`` plays what the game's timeout policy would, and so do the
    searching levels of a game without a bot adapter."""
    if level != "random":
        return timeout_move(state, seat)
    moves: list[dict[str, Any]] = state.legal_moves(seat)
    return rng(seed, "bot", version, seat).choice(moves)
