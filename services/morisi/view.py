"""The Morisi observer: what a seat (or a spectator) may see of a ``rules.State``.

Public: the whole board (tiles, blocks on tiles, sticks, pending sticks, houses, pawns),
every player's block total, scores. Private: the caller's own blocks by colour and own
prediction. Everyone's predictions only once the game is over. Never: the seed.
"""

from __future__ import annotations

from typing import Any, Protocol

from services.morisi.scoring import house_supply, scoring_cities, top_count


class Board(Protocol):
    """What the observer reads of a ``rules.State`` (a Protocol, so this module needs not
    import the rules that import it)."""

    players: int
    options: dict[str, Any]
    blocks: list[int]
    box: list[int]
    spent: list[int]
    hands: list[list[int]]
    pawns: list[int]
    sticks: list[list[int]]
    pending: list[list[int]]
    predictions: list[list[int]]
    phase: str
    turn: int
    start: int
    turn_no: int
    end_reason: str
    cities: list[int]
    tile_rows: list[tuple[int, int, int, str, bool]]

    def house_points(self, seat: int, extra: list[list[int]] | None = None) -> dict[int, int]: ...

    def city_totals(self, points: list[dict[int, int]]) -> dict[int, int]: ...

    def standings(
        self, points: list[dict[int, int]] | None = None, totals: dict[int, int] | None = None
    ) -> list[dict[str, int]]: ...


def stick_dict(stick: list[int]) -> dict[str, int]:
    """A stored stick ``[seat, a, b, paid, cost]`` (a < b) as a Stick message."""
    seat, a, b, paid, cost = stick
    return {"seat": seat, "a": a, "b": b, "paid": paid, "cost": cost}


def observe(state: Board, seat: int | None) -> dict[str, Any]:
    """The View message fields from 10 on."""
    points = [state.house_points(s) for s in range(state.players)]
    totals = state.city_totals(points)
    standings = state.standings(points, totals)
    supply = house_supply(state.players)
    over = state.phase == "PHASE_OVER"
    blocks = state.blocks
    players = []
    for s in range(state.players):
        players.append(
            {
                "seat": s,
                "pawn_placed": state.pawns[s] >= 0,
                "pawn_tile": max(state.pawns[s], 0),
                "block_count": sum(state.hands[s]),
                "house_points": standings[s]["house_points"],
                "houses_left": max(0, supply - standings[s]["house_points"]),
                "sticks": standings[s]["sticks"],
                "cities": standings[s]["cities"],
                "score": standings[s]["score"],
                "predicted": len(state.predictions[s]),
            }
        )
    shown = range(state.players) if over else ([seat] if seat is not None else [])
    return {
        "tiles": [
            {"index": i, "q": q, "r": r, "terrain": terrain, "circled": circled, "blocks": blocks[i]}
            for i, q, r, terrain, circled in state.tile_rows
        ],
        "players": players,
        "my_blocks": list(state.hands[seat]) if seat is not None else [],
        "sticks": [stick_dict(st) for st in state.sticks],
        "pending": [{"anchor": a, "paid": p, "cost": c} for a, p, c in state.pending],
        "cities": [
            {"city": c, "points": [points[s].get(c, 0) for s in range(state.players)], "total": totals[c]}
            for c in state.cities
        ],
        "phase": state.phase,
        "turn_seat": state.turn,
        "start_seat": state.start,
        "turn": state.turn_no,
        "house_supply": supply,
        "scoring_cities": scoring_cities(totals, top_count(state.players)),
        "predictions": [{"seat": s, "cities": list(state.predictions[s])} for s in shown],
        "prediction_variant": state.options["prediction"],
        "end_reason": state.end_reason,
        "spent_blocks": list(state.spent),
        "box_blocks": list(state.box),
        "allow_holes": state.options["allow_holes"],
        "layout": state.options["layout"],
    }
