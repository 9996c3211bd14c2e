"""Hand-built happymochi positions for the tests."""

from __future__ import annotations

from typing import Any

from services.engine import JsonDict
from services.happymochi.cards import PLUS
from services.happymochi.rules import PHASE_TURN, State


def hand_built(
    hands: list[list[int]],
    left: list[int],
    right: list[int],
    deck: list[int] | None = None,
    **overrides: Any,
) -> State:
    """A hand-built position (turn phase of seat 0 unless overridden); unlisted cards go nowhere."""
    players = len(hands)
    fields: JsonDict = {
        "players": players,
        "seed": 1,
        "options": {"first_player": 0},
        "hands": [list(h) for h in hands],
        "left": list(left),
        "right": list(right),
        "deck": list(deck or []),
        "value_side": PLUS,
        "totals": [0] * players,
        "round": 1,
        "round_start": 0,
        "turn": 0,
        "phase": PHASE_TURN,
        "drawer": 0,
        "held": None,
        "held_from": None,
        "held_by_effect": False,
        "pending": [],
        "passes": 0,
        "shuffles": 0,
        "last_round_points": [],
        "winner_seats": [],
    }
    fields.update(overrides)
    if "drawer" not in overrides:
        fields["drawer"] = fields["turn"]
    return State(**fields)
