"""The one decision function of every server bot: from a seat's information to its move."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any, Protocol

from services.bots.adapters import adapter
from services.bots.levels import BUDGETS, LEVELS, POLICY, RANDOM, Budget
from services.bots.search import search
from services.engine import JsonDict


class SeatEvent(Protocol):
    """An event as stored: its body, and whom it was addressed to."""

    @property
    def body(self) -> JsonDict: ...

    def visible_to(self, seat: int | None) -> bool: ...


def seat_information(
    state: Any, seat: int, events: Iterable[SeatEvent] | None
) -> tuple[JsonDict, list[JsonDict] | None]:
    """All a bot of ``seat`` is given: the seat's view, and the bodies of the events addressed
    to it (None when the events are not at hand). Everything the server hands a searching
    bot goes through here, so no other seat's secret reaches the search."""
    history = None if events is None else [e.body for e in events if e.visible_to(seat)]
    return state.view(seat), history


def decide(
    game: str,
    view: JsonDict,
    seat: int,
    level: str,
    seed: int,
    history: list[JsonDict] | None = None,
    budget: Budget | None = None,
) -> JsonDict:
    """The move a bot of ``level`` makes for ``seat`` knowing only ``view`` (``State.view(seat)``)
    and ``history`` (the event bodies addressed to it, oldest first, or None).

    Deterministic for a given seed when the budget has no CPU bound. ``budget`` overrides
    the level's (tests and benchmarks). ``LookupError`` for a game without an adapter (the
    server then plays its ``policy`` move)."""
    if level not in LEVELS:
        raise ValueError(f"unknown bot level {level!r}: one of {', '.join(LEVELS)}")
    module = adapter(game)
    if module is None:
        raise LookupError(f"{game} has no bot adapter: its bots play without one")
    rng = random.Random(seed)
    if level in (RANDOM, POLICY):
        sample = module.determinize(view, seat, rng, history=history)
        if level == POLICY:
            move: JsonDict = sample.timeout_move(seat)
            return move
        return rng.choice(sample.legal_moves(seat))
    return search(module, view, seat, budget or BUDGETS[level], seed, history)
