"""Morisi scoring: pure functions of house-point tables (used by ``rules.State``)."""

from __future__ import annotations

PREDICTION_SIZE = 3


def house_supply(players: int) -> int:
    """House-points per player: 9x1 + 5x2 + 4x3 = 31; 2 players 9x1 + 6x2 + 4x3 = 33."""
    return 33 if players == 2 else 31


def top_count(players: int) -> int:
    """How many of the largest cities score: three, or the largest one with 2 players."""
    return 1 if players == 2 else 3


def scoring_cities(totals: dict[int, int], keep: int) -> list[int]:
    """The ``keep`` cities with the most house-points (all players), every city tied at the cut."""
    ranked = sorted((v for v in totals.values() if v > 0), reverse=True)
    if not ranked:
        return []
    cut = ranked[min(keep, len(ranked)) - 1]
    return sorted(c for c, v in totals.items() if v >= cut)


def board_scores(points: list[dict[int, int]], totals: dict[int, int], keep: int) -> list[int]:
    """4 per city where the seat has a house, plus its house-points in the scoring cities."""
    top = scoring_cities(totals, keep)
    return [4 * sum(1 for v in p.values() if v > 0) + sum(p.get(c, 0) for c in top) for p in points]


def prediction_points(prediction: list[int], totals: dict[int, int]) -> int:
    """5 per city at its right rank, 2 per top-three city at a wrong rank.

    A city's rank spans every place it shares with tied cities (two cities tied
    for the most houses are both 1st and 2nd); a city without houses has no rank.
    """
    points = 0
    for rank, city in enumerate(prediction, start=1):
        v = totals.get(city, 0)
        if v <= 0:
            continue
        lo = 1 + sum(1 for x in totals.values() if x > v)
        hi = lo + sum(1 for x in totals.values() if x == v) - 1
        if lo <= rank <= hi:
            points += 5
        elif lo <= PREDICTION_SIZE:
            points += 2
    return points


def tiebreak_winners(keys: list[tuple[int, int, int, int]]) -> list[int]:
    """Seats with the best (score, cities with a house, sticks laid, house-points placed)."""
    best = max(keys)
    return [s for s, k in enumerate(keys) if k == best]
