"""How a finished match moves its players' ratings: OpenSkill's Plackett-Luce model.

Pure: no Redis here (services.workers.ladders stores what this computes).

- Order: winners first (tied with each other), then the others by score, highest first;
  equal scores tie.
- Only seats bound to a player are rated, among themselves: bots and anonymous seats are
  left out of the computation (a match with fewer than two rated players moves nobody).
- Teams: when the entry's table facts name ``teams`` (lists of seats), or for a More match of
  a single round (its Pair as one team of two against the Solo: ``one_round_teams``), each
  team is rated as one side, placed by its best seat.
- Abandoned matches (and any entry but a FINISHED match_ended) are not rated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openskill.models import PlackettLuce

from services.workers.activity import FINISHED, ActivityEntry

MODEL = PlackettLuce()
DEFAULT_MU: float = MODEL.mu
DEFAULT_SIGMA: float = MODEL.sigma


@dataclass(frozen=True)
class Skill:
    mu: float = DEFAULT_MU
    sigma: float = DEFAULT_SIGMA

    @property
    def ordinal(self) -> float:
        """The displayed, conservative rating and the leaderboard's order: mu - 3 sigma."""
        return self.mu - 3 * self.sigma


def ladder_of(entry: ActivityEntry) -> str:
    """One ladder per game (More's Solo and Pair included: see docs/ratings.md)."""
    return entry.game


def is_rated(entry: ActivityEntry) -> bool:
    return entry.notice == "match_ended" and entry.status == FINISHED and len(rated_players(entry)) >= 2


def rated_players(entry: ActivityEntry) -> dict[int, str]:
    """Seat -> player id of every seat bound to a player, each player once."""
    seats: dict[int, str] = {}
    for seat in entry.bound_seats():
        player = entry.player_of(seat)
        if player not in seats.values():
            seats[seat] = player
    return seats


def _place_key(entry: ActivityEntry, seat: int) -> tuple[int, int]:
    score = entry.scores[seat] if seat < len(entry.scores) else 0
    return (0 if seat in entry.winners else 1, -score)


def _sides(entry: ActivityEntry, seats: dict[int, str]) -> list[list[int]]:
    teams: Any = entry.table.get("teams")
    if not teams:
        return [[seat] for seat in sorted(seats)]
    sides = [[int(s) for s in team if int(s) in seats] for team in teams]
    return [side for side in sides if side]


def one_round_teams(round_results: list[dict[str, Any]]) -> list[list[int]]:
    """More: the sides of a match that was a single round (its ``round_ended`` results, in
    order), the Solo alone against the Pair; [] for a longer match, whose Solo changed from
    round to round, and which is then rated seat by seat."""
    if not round_results or int(round_results[-1].get("round", 0)) != 1:
        return []
    solo = int(round_results[-1].get("solo", 0))
    seats = len(round_results[-1].get("totals", [])) or 3
    return [[solo], [seat for seat in range(seats) if seat != solo]]


def ranks(keys: list[tuple[int, int]]) -> list[int]:
    """Competition ranks (1, 1, 3, ...) of the given order keys, lower key placing first."""
    return [1 + sum(other < key for other in keys) for key in keys]


def rate(entry: ActivityEntry, current: dict[str, Skill]) -> dict[str, Skill]:
    """Each rated player's new skill after ``entry`` (a rated match), from ``current``
    (players missing from it start at the model's default)."""
    seats = rated_players(entry)
    sides = _sides(entry, seats)
    if len(sides) < 2:
        return {}
    keys = [min(_place_key(entry, seat) for seat in side) for side in sides]

    def model_rating(seat: int) -> Any:
        skill = current.get(seats[seat], Skill())
        return MODEL.rating(mu=skill.mu, sigma=skill.sigma)

    grouped = [[model_rating(seat) for seat in side] for side in sides]
    rated = MODEL.rate(grouped, ranks=[float(r) for r in ranks(keys)])
    return {
        seats[seat]: Skill(float(new.mu), float(new.sigma))
        for side, team in zip(sides, rated, strict=True)
        for seat, new in zip(side, team, strict=True)
    }
