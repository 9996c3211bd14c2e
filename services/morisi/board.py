"""Morisi maps: hex geometry, tile sets, layout rules, presets and the random generator.

Axial coordinates ``(q, r)``; the six neighbours of a cell are ``DIRECTIONS``.
Pure and deterministic: randomness only through ``services.engine.rng``.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable
from typing import Any

from services.engine import BadOptions, rng

Cell = tuple[int, int]

DIRECTIONS: tuple[Cell, ...] = ((1, 0), (1, -1), (0, -1), (-1, 0), (-1, 1), (0, 1))
COLORS: tuple[str, ...] = ("TERRAIN_YELLOW", "TERRAIN_ORANGE", "TERRAIN_RED", "TERRAIN_GREEN", "TERRAIN_BLUE")
CITY = "TERRAIN_CITY"
TERRAINS: tuple[str, ...] = (CITY, *COLORS)
BLOCKS_PER_COLOR = 14
PRESETS: tuple[str, ...] = ("hexagon", "rows", "lakes")
HOLES_IN_RANDOM_LAYOUT = 3
MAX_COORD = 30
OPTION_DEFAULTS: dict[str, Any] = {
    "layout": "random",
    "custom_tiles": [],
    "allow_holes": False,
    "prediction": False,
}


class LayoutError(Exception):
    """A layout breaks a layout rule; ``rule`` is e.g. ``layout.min_neighbours``."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"{rule}: {message}")
        self.rule = rule
        self.message = message


def neighbours(c: Cell) -> list[Cell]:
    q, r = c
    return [(q + dq, r + dr) for dq, dr in DIRECTIONS]


def tile_set(players: int) -> list[tuple[str, bool]]:
    """The tiles in play: 9 cities + 6 per colour (2 circled); 2 players: 8 + 5 (1 circled)."""
    two = players == 2
    tiles = [(CITY, False)] * (8 if two else 9)
    for color in COLORS:
        tiles += [(color, True)] * (1 if two else 2)
        tiles += [(color, False)] * 4
    return tiles


def boundary_limit(players: int) -> int:
    return 21 if players == 2 else 22


def blocks_for_tile(players: int, terrain: str, circled: bool) -> int:
    """Blocks a land tile receives at setup (cities get none)."""
    if terrain == CITY:
        return 0
    if players == 3:
        return 2
    if players == 4:
        return 1 if circled else 3
    return 1 if circled else 2


def boundary(cells: set[Cell]) -> list[Cell]:
    """Tiles with fewer than six neighbouring tiles."""
    return sorted(c for c in cells if sum(n in cells for n in neighbours(c)) < 6)


def holes(cells: set[Cell]) -> list[Cell]:
    """Empty cells enclosed by tiles (not reachable from outside through empty cells)."""
    qs = [c[0] for c in cells]
    rs = [c[1] for c in cells]
    q0, q1, r0, r1 = min(qs) - 1, max(qs) + 1, min(rs) - 1, max(rs) + 1
    inside = lambda c: q0 <= c[0] <= q1 and r0 <= c[1] <= r1  # noqa: E731
    start = (q0, r0)
    seen = {start}
    stack = [start]
    while stack:
        c = stack.pop()
        for n in neighbours(c):
            if inside(n) and n not in cells and n not in seen:
                seen.add(n)
                stack.append(n)
    return sorted(
        (q, r)
        for q in range(q0, q1 + 1)
        for r in range(r0, r1 + 1)
        if (q, r) not in cells and (q, r) not in seen
    )


def check_distinct(cell_list: list[Cell]) -> None:
    """Raise ``layout.duplicate_tile`` if two tiles share a cell."""
    if len(set(cell_list)) != len(cell_list):
        dup = next(c for c in cell_list if cell_list.count(c) > 1)
        raise LayoutError("layout.duplicate_tile", f"two tiles at {dup}")


def check_shape(cells: Iterable[Cell], players: int, allow_holes: bool) -> None:
    """Raise LayoutError naming the first broken layout rule and its tile."""
    cell_list = list(cells)
    check_distinct(cell_list)
    shape = set(cell_list)
    if not shape:
        raise LayoutError("layout.tile_set", "the layout has no tiles")
    first = min(shape)
    seen = {first}
    stack = [first]
    while stack:
        q, r = stack.pop()
        for dq, dr in DIRECTIONS:
            n = (q + dq, r + dr)
            if n in shape and n not in seen:
                seen.add(n)
                stack.append(n)
    if len(seen) != len(shape):
        lost = min(shape - seen)
        raise LayoutError(
            "layout.connected", f"the tiles must form one connected region; tile {lost} is cut off"
        )
    for c in sorted(shape):
        q, r = c
        k = sum((q + dq, r + dr) in shape for dq, dr in DIRECTIONS)
        if k < 3:
            raise LayoutError(
                "layout.min_neighbours", f"each tile needs at least 3 neighbouring tiles; tile {c} has {k}"
            )
    if allow_holes:
        return
    enclosed = holes(shape)
    if enclosed:
        raise LayoutError(
            "layout.holes",
            f"the layout encloses the empty space {enclosed[0]}; empty spaces need the allow_holes variant",
        )
    edge = boundary(shape)
    if len(edge) > boundary_limit(players):
        raise LayoutError(
            "layout.boundary",
            f"the boundary may hold at most {boundary_limit(players)} tiles, this one has {len(edge)} "
            f"(e.g. tile {edge[-1]})",
        )


def check_tiles(tiles: list[tuple[int, int, str, bool]], players: int, allow_holes: bool) -> None:
    """Validate a full layout: the tile set of the player count, then the shape."""
    for q, r, terrain, circled in tiles:
        if terrain not in TERRAINS:
            raise LayoutError("layout.terrain", f"tile {(q, r)} has no terrain")
        if circled and terrain == CITY:
            raise LayoutError("layout.circled_city", f"tile {(q, r)} is a city and cannot be circled")
        if abs(q) > MAX_COORD or abs(r) > MAX_COORD:
            raise LayoutError("layout.coordinates", f"tile {(q, r)} lies outside -{MAX_COORD}..{MAX_COORD}")
    check_distinct([(q, r) for q, r, _, _ in tiles])
    want = sorted(tile_set(players))
    got = sorted((t, c) for _, _, t, c in tiles)
    if got != want:
        kinds = sorted(set(want) | set(got))
        # name a surplus tile if there is one (the last of its kind in row order), else the missing kind
        surplus = [k for k in kinds if got.count(k) > want.count(k)]
        kind = surplus[0] if surplus else next(k for k in kinds if got.count(k) != want.count(k))
        label = f"{'circled ' if kind[1] else ''}{kind[0]}"
        where = ""
        if surplus:
            q, r = max(((q, r) for q, r, t, c in tiles if (t, c) == kind), key=lambda c: (c[1], c[0]))
            where = f" (e.g. tile {(q, r)})"
        raise LayoutError(
            "layout.tile_set",
            f"{players} players use {want.count(kind)} {label} tiles; "
            f"this layout has {got.count(kind)}{where}",
        )
    check_shape([(q, r) for q, r, _, _ in tiles], players, allow_holes)


def hexagon(radius: int) -> set[Cell]:
    return {
        (q, r) for q in range(-radius, radius + 1) for r in range(-radius, radius + 1) if abs(q + r) <= radius
    }


def preset_shape(name: str, players: int) -> set[Cell]:
    """The cells of a named preset (``layout.preset`` if unknown)."""
    if name == "hexagon":
        cells = hexagon(3)
        if players == 2:
            return cells - {(3, 0), (-3, 0), (0, 3), (0, -3)}
        return cells | {(4, -2), (4, -1)}
    if name == "rows":
        # rows of 5,6,7,8,7,6 tiles (2 players: 4,5,6,7,6,5): a stretched hexagon
        widths = (4, 5, 6, 7, 6, 5) if players == 2 else (5, 6, 7, 8, 7, 6)
        top = 3
        cells = set()
        for r, w in enumerate(widths):
            start = -r if r <= top else -top
            cells |= {(start + i, r) for i in range(w)}
        return cells
    if name == "lakes":
        # three enclosed empty spaces: only with the allow_holes variant
        cells = hexagon(3) - {(2, -1), (-1, -1), (-1, 2)}
        if players == 2:
            return cells - {(0, 1)}
        return cells | {(4, -3), (4, -2), (4, -1), (-4, 3), (-4, 2)}
    raise LayoutError("layout.preset", f"unknown layout {name!r}; use random, custom or one of {PRESETS}")


def _grow(seed: int, attempt: int, size: int) -> set[Cell]:
    """Grow a compact random blob: cells touching many tiles are much likelier."""
    rnd = rng(seed, "layout", attempt)
    weight = (0, 1, 4, 60, 400, 900, 900)
    cells = {(0, 0)}
    touching = {n: 1 for n in neighbours((0, 0))}
    # the candidates (empty cells touching the blob) in sorted order and their weights, kept
    # up to date cell by cell rather than sorted again for every pick
    cands = sorted(touching)
    weights = [weight[1]] * len(cands)
    while len(cells) < size:
        pick = rnd.choices(cands, cum_weights=list(itertools.accumulate(weights)))[0]
        at = bisect.bisect_left(cands, pick)
        del cands[at], weights[at], touching[pick]
        cells.add(pick)
        for n in neighbours(pick):
            if n not in cells:
                count = touching[n] = touching.get(n, 0) + 1
                at = bisect.bisect_left(cands, n)
                if count == 1:
                    cands.insert(at, n)
                    weights.insert(at, weight[1])
                else:
                    weights[at] = weight[count]
    return cells


def random_shape(seed: int, players: int, allow_holes: bool) -> set[Cell]:
    """A seeded random shape that satisfies every layout rule (a preset if 400 tries fail)."""
    size = len(tile_set(players))
    for attempt in range(400):
        if allow_holes:
            cells = _grow(seed, attempt, size + HOLES_IN_RANDOM_LAYOUT)
            rnd = rng(seed, "holes", attempt)
            interior = [c for c in sorted(cells) if all(n in cells for n in neighbours(c))]
            rnd.shuffle(interior)
            punched: list[Cell] = []
            for c in interior:
                if len(punched) == HOLES_IN_RANDOM_LAYOUT:
                    break
                if all(c not in neighbours(p) for p in punched):
                    punched.append(c)
            cells -= set(punched)
        else:
            cells = _grow(seed, attempt, size)
        if len(cells) != size:
            continue
        try:
            check_shape(cells, players, allow_holes)
        except LayoutError:
            continue
        return cells
    return preset_shape("hexagon", players)  # pragma: no cover - never needed in practice


def deal_terrain(cells: set[Cell], players: int, seed: int) -> list[tuple[int, int, str, bool]]:
    """Shuffle the face-down tiles onto the cells; tiles are ordered by (r, q)."""
    order = sorted(cells, key=lambda c: (c[1], c[0]))
    kinds = tile_set(players)
    rng(seed, "terrain").shuffle(kinds)
    return [(q, r, t, c) for (q, r), (t, c) in zip(order, kinds, strict=True)]


def make_layout(
    players: int, seed: int, layout: str, custom: list[tuple[int, int, str, bool]], allow_holes: bool
) -> list[tuple[int, int, str, bool]]:
    """The tiles of a new match (raises LayoutError for a bad layout)."""
    if layout == "custom":
        check_tiles(custom, players, allow_holes)
        return sorted(custom, key=lambda t: (t[1], t[0]))
    if layout == "random":
        cells = random_shape(seed, players, allow_holes)
    else:
        cells = preset_shape(layout, players)
        check_shape(cells, players, allow_holes)
    return deal_terrain(cells, players, seed)


def normalize_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """Fill defaults and check every option (BadOptions otherwise)."""
    opts = dict(OPTION_DEFAULTS)
    for key, value in (options or {}).items():
        if key not in OPTION_DEFAULTS:
            raise BadOptions(f"options.{key}", f"Morisi has no option {key!r}")
        opts[key] = value
    for key in ("allow_holes", "prediction"):
        if not isinstance(opts[key], bool):
            raise BadOptions(f"options.{key}", f"{key} must be true or false")
    layout = opts["layout"]
    if not isinstance(layout, str):
        raise BadOptions("options.layout", "layout must be a string")
    tiles_in = opts["custom_tiles"]
    if not isinstance(tiles_in, list):
        raise BadOptions("options.custom_tiles", "custom_tiles must be a list of tiles")
    custom = []
    for i, t in enumerate(tiles_in):
        if not isinstance(t, dict) or set(t) - {"q", "r", "terrain", "circled"}:
            raise BadOptions(f"options.custom_tiles[{i}]", "a tile has the fields q, r, terrain, circled")
        q, r = t.get("q", 0), t.get("r", 0)
        terrain, circled = t.get("terrain", "TERRAIN_UNSPECIFIED"), t.get("circled", False)
        if not (is_int(q) and is_int(r)) or not isinstance(circled, bool):
            raise BadOptions(f"options.custom_tiles[{i}]", "q and r must be integers, circled a boolean")
        if terrain not in TERRAINS:
            raise BadOptions(
                f"options.custom_tiles[{i}].terrain", f"tile {(q, r)} needs a terrain, one of {TERRAINS}"
            )
        custom.append({"q": q, "r": r, "terrain": terrain, "circled": circled})
    if layout == "":
        layout = "custom" if custom else "random"
    if layout not in ("random", "custom", *PRESETS):
        raise BadOptions(
            "options.layout", f"unknown layout {layout!r}; use random, custom or one of {PRESETS}"
        )
    if layout == "custom" and not custom:
        raise BadOptions("options.custom_tiles", "layout 'custom' needs custom_tiles")
    if layout != "custom" and custom:
        raise BadOptions("options.custom_tiles", "custom_tiles need layout 'custom'")
    opts["layout"] = layout
    opts["custom_tiles"] = custom
    return opts


def is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)
