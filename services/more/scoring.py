"""More: round scoring and the match winner (pure helpers of ``services.more.rules``)."""

from __future__ import annotations

from typing import Protocol

from services.engine import JsonDict
from services.more.cards import Meld, biriba_bonus, meld_points, points

PLAYERS = 3
GO_OUT_BONUS = 100
MORE_PENALTY = 100
SOLO_BONUS = 150


class Table(Protocol):
    """What scoring reads of a ``rules.State`` (a Protocol, so this module needs not import
    the rules that import it)."""

    hands: list[list[int]]
    melds: list[Meld]
    more_state: dict[str, str]
    round: int
    solo: int
    totals: list[int]


def score_round(s: Table, went_out: int) -> JsonDict:
    """The RoundResult of the table in state ``s`` (``went_out``: that seat went out, -1 for none).

    Per seat: the side's pooled meld points and biriba bonuses, +100 to the one who went out, minus
    the seat's own hand, -100 if the side's More pile was never taken; the Solo's net then goes
    through ``solo_score`` and gets +150 if he went out.
    """
    seats = []
    for p in range(PLAYERS):
        side = "solo" if p == s.solo else "pair"
        side_melds = [m for m in s.melds if m["side"] == side]
        melded = sum(meld_points(m) for m in side_melds)
        bonus = sum(biriba_bonus(m) for m in side_melds)
        go_out = GO_OUT_BONUS if went_out == p else 0
        hand = sum(points(c) for c in s.hands[p])
        penalty = MORE_PENALTY if s.more_state[side] != "taken" else 0
        if side == "solo":
            total, multiplied = solo_score(melded + bonus + go_out - hand, penalty)
            solo_bonus = SOLO_BONUS if went_out == p else 0
            total += solo_bonus
        else:
            total, multiplied, solo_bonus = melded + bonus + go_out - hand - penalty, False, 0
        seats.append(
            {
                "meld_points": melded,
                "biriba_bonus": bonus,
                "go_out_bonus": go_out,
                "hand_points": hand,
                "more_penalty": penalty,
                "multiplied": multiplied,
                "solo_bonus": solo_bonus,
                "total": total,
            }
        )
    return {
        "round": s.round,
        "end": "ROUND_END_WENT_OUT" if went_out >= 0 else "ROUND_END_EXHAUSTED",
        "went_out": went_out,
        "solo": s.solo,
        "seats": seats,
        "totals": [s.totals[p] + seats[p]["total"] for p in range(PLAYERS)],
    }


def solo_score(net: int, penalty: int) -> tuple[int, bool]:
    """The Solo's order of operations after the net: -100 penalty, then x1.5 rounded down if positive."""
    net -= penalty
    if net > 0:
        return net * 3 // 2, True
    return net, False


def match_winners(scores: list[int], went_out: int) -> list[int]:
    """Highest cumulative score; tie: the one who went out in the final round; else all tied."""
    best = max(scores)
    top = [p for p in range(PLAYERS) if scores[p] == best]
    if len(top) > 1 and went_out in top:
        return [went_out]
    return top
