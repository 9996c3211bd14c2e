"""Hand-built momiji positions for the tests."""

from __future__ import annotations

from typing import Any

import msgspec

from services.momiji.cards import CARDS_PER_TYPE
from services.momiji.rules import State


def hand_built(players: int = 2, **fields: Any) -> State:
    """A hand-built position: the given fields; every card not placed anywhere is in the deck.

    Defaults: empty hands, stacks and display, no goals, no landscape, seat 0 in PHASE_MAIN.
    ``deck`` may be given explicitly (the top is the end of the list).
    """
    options = fields.pop("options", {"draft_landscapes": False})
    blank = State._before_deal(players, fields.pop("seed", 0), options)
    s = msgspec.structs.replace(blank, **fields)  # TypeError for a field State has not
    if "goals" in fields and "holders" not in fields:
        s.holders = [None] * len(s.goals)
    if "deck" not in fields:
        placed = set(s._cards_outside_deck())
        s.deck = [c for c in range(s.types * CARDS_PER_TYPE) if c not in placed]
    return s
