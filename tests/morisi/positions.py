"""Hand-built morisi positions for the tests."""

from __future__ import annotations

from typing import Any

from services.engine import JsonDict
from services.morisi.board import BLOCKS_PER_COLOR, CITY, COLORS, normalize_options
from services.morisi.rules import State


def hand_built(
    players: int,
    tiles: list[tuple[int, int, str] | tuple[int, int, str, bool]],
    **fields: Any,
) -> State:
    """A hand-built position on any small map (layout rules not checked).

    ``tiles`` are ``(q, r, terrain[, circled])``; ``fields`` override any
    ``to_dict`` field (``blocks``, ``hands``, ``pawns``, ``sticks``, ``phase``...).
    Blocks not placed anywhere are counted in the box so totals stay 14.
    """
    tile_dicts = [
        {"q": t[0], "r": t[1], "terrain": t[2], "circled": bool(t[3]) if len(t) > 3 else False} for t in tiles
    ]
    data: JsonDict = {
        "players": players,
        "seed": fields.pop("seed", 0),
        "options": normalize_options(fields.pop("options", {})),
        "tiles": tile_dicts,
        "blocks": [0] * len(tile_dicts),
        "spent": [0] * len(COLORS),
        "hands": [[0] * len(COLORS) for _ in range(players)],
        "pawns": [-1] * players,
        "sticks": [],
        "pending": [],
        "predictions": [[] for _ in range(players)],
        "phase": "PHASE_MOVE",
        "turn": 0,
        "start": 0,
        "turn_no": 0,
        "end_reason": "END_REASON_UNSPECIFIED",
        "house_winner": -1,
    }
    if "sticks" in fields:
        fields["sticks"] = [_stick(tile_dicts, *st) for st in fields["sticks"]]
    if "spent" not in fields:
        for _, _, _, paid, cost in fields.get("sticks", []):
            data["spent"][COLORS.index(tile_dicts[paid]["terrain"])] += cost
        for _, paid, cost in fields.get("pending", []):
            data["spent"][COLORS.index(tile_dicts[paid]["terrain"])] += cost
    unknown = set(fields) - set(data) - {"box"}
    if unknown:
        raise TypeError(f"unknown fields {unknown}")
    data.update(fields)
    if "box" not in data:
        used = [0] * len(COLORS)
        for b, t in zip(data["blocks"], tile_dicts, strict=True):
            if t["terrain"] != CITY:
                used[COLORS.index(t["terrain"])] += b
        for i in range(len(COLORS)):
            used[i] += data["spent"][i] + sum(h[i] for h in data["hands"])
        data["box"] = [BLOCKS_PER_COLOR - u for u in used]
    return State.from_dict(data)


def _stick(tiles: list[JsonDict], seat: int, a: int, b: int, *paid_cost: int) -> list[int]:
    """A hand-built stick: ``(seat, a, b[, paid, cost])``; paid defaults to the land end (b if both)."""
    if paid_cost:
        paid, cost = paid_cost
    else:
        paid, cost = (a if tiles[b]["terrain"] == CITY else b), 1
    return [seat, min(a, b), max(a, b), paid, cost]
