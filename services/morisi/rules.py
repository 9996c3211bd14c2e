"""Morisi rules engine (pure).

Rules as read by the server: docs/rules/morisi.md. A turn is built from primitive
moves: ``move_pawn`` (skipped automatically when the pawn cannot move), then any
number of ``lay_stick`` steps (``undo_stick`` takes the last one back), finished by
``build_route`` (the laid sticks become the turn's trade route) or ``end_turn``
(laid sticks are taken back). Before the first turn each seat places its pawn
(``place_pawn``) and, with the prediction variant, seals a top three (``predict``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, Self

import msgspec

from services.engine import (
    BadOptions,
    EngineState,
    Event,
    GameInfo,
    JsonDict,
    MalformedMove,
    NotYourTurn,
    OptionInfo,
    RuleViolation,
    rng,
    split_move,
)
from services.morisi import board, policy
from services.morisi.board import (
    BLOCKS_PER_COLOR,
    COLORS,
    DIRECTIONS,
    TERRAINS,
    is_int,
    normalize_options,
)
from services.morisi.network import Network, PendingRoute
from services.morisi.scoring import (
    PREDICTION_SIZE,
    board_scores,
    house_supply,
    prediction_points,
    tiebreak_winners,
    top_count,
)
from services.morisi.view import observe, stick_dict

# ---------------------------------------------------------------- constants

PHASES = ("PHASE_PREDICT", "PHASE_PLACE", "PHASE_MOVE", "PHASE_BUILD", "PHASE_OVER")
END_REASONS = ("END_REASON_UNSPECIFIED", "END_REASON_BLOCKS_EXHAUSTED", "END_REASON_HOUSES_EXHAUSTED")
STICK_SUPPLY = 20  # sticks per player colour in the box
# the phase in which each kind of move is made
PHASE_OF_MOVE = {
    "predict": "PHASE_PREDICT",
    "place_pawn": "PHASE_PLACE",
    "move_pawn": "PHASE_MOVE",
    "lay_stick": "PHASE_BUILD",
    "undo_stick": "PHASE_BUILD",
    "build_route": "PHASE_BUILD",
    "end_turn": "PHASE_BUILD",
}
MOVE_KINDS: dict[str, tuple[str, ...]] = {
    "predict": ("cities",),
    "place_pawn": ("tile",),
    "move_pawn": ("tile",),
    "lay_stick": ("anchor", "paid"),
    "undo_stick": (),
    "build_route": (),
    "end_turn": (),
}


GAME = GameInfo(
    name="morisi",
    title="Morisi",
    package="morisi",
    service="Morisi",
    min_players=2,
    max_players=4,
    move_cap=20_000,
    options=(
        OptionInfo(
            "layout",
            "string",
            "map: 'random' (seeded generator), a preset ('hexagon', 'rows', 'lakes') or 'custom'",
            "random",
        ),
        OptionInfo("custom_tiles", "LayoutTile[]", "the creator's own map (with layout 'custom')", []),
        OptionInfo(
            "allow_holes", "bool", "variant: the map may enclose empty spaces, no boundary limit", False
        ),
        OptionInfo(
            "prediction", "bool", "variant: sealed top-three city predictions scored at the end", False
        ),
    ),
)


# ---------------------------------------------------------------- state


class State(EngineState, dict=True):
    """A Morisi match. Tiles are indexed in the order of the map (rows, then columns).

    The fields are the stored form. The instance ``__dict__`` holds only what is worked out
    from them and never stored: the map's geometry (shared per map), the committed sticks
    indexed (``network``), the pending route indexed and the turn's pawn destinations."""

    players: int
    seed: int
    # normalized options; the custom tiles are the map itself, stored once as ``tiles``
    options: dict[str, Any]
    map_code: str = msgspec.field(name="tiles")  # see ``_map_code``
    blocks: list[int]  # per tile, the blocks on it
    box: list[int]  # per colour, the blocks in the box
    spent: list[int]  # per colour, the blocks paid for sticks
    hands: list[list[int]]  # per seat, its blocks by colour
    pawns: list[int]  # per seat, its pawn's tile (-1 before it is placed)
    sticks: list[list[int]]  # committed: [seat, a, b, paid, cost] with a < b
    pending: list[list[int]]  # laid this turn: [anchor, paid, cost]
    predictions: list[list[int]]  # per seat, the cities it predicted
    phase: str  # one of PHASES
    turn: int
    start: int
    turn_no: int
    end_reason: str  # one of END_REASONS
    house_winner: int  # the seat that ran out of houses, else -1
    # The house winner's cities as placed when the supply ran out ([city, points] pairs); empty
    # otherwise. States stored before the supply rule had no such field.
    final_houses: list[list[int]] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        self._index()

    def _index(self) -> None:
        geometry = _geometry(self.map_code)
        self.tiles = geometry.tiles
        self.at = geometry.at
        self.adj = geometry.adj
        self.cities = geometry.cities
        self.colors = geometry.colors
        self.land_links = geometry.land_links
        self.color_tiles = geometry.color_tiles
        self.tile_rows = geometry.tile_rows
        self._network: Network | None = None
        self._pending_route: PendingRoute | None = None
        self._destinations_of: tuple[tuple[int, ...], list[tuple[int, list[int]]]] | None = None

    @property
    def network(self) -> Network:
        """The committed sticks indexed (built on first use, then kept up to date by routes)."""
        if self._network is None:
            self._network = Network(self.players, [c < 0 for c in self.colors], self.land_links, self.sticks)
        return self._network

    def _route(self) -> PendingRoute:
        """The pending sticks indexed (kept in step by ``lay_stick`` and undos; built again for a
        new turn or a new network)."""
        route = self._pending_route
        network = self.network
        if (
            route is not None
            and route.version == network.version
            and route.network is network
            and route.seat == self.turn
            and route.sticks == self.pending
        ):
            return route  # the usual case, checked here before asking the route itself
        if route is None or not route.sync(network, self.turn, self.pending):
            route = self._pending_route = PendingRoute(network, self.turn, self.players == 2)
            for anchor, paid, cost in self.pending:
                route.push(anchor, paid, cost)
        return route

    # ------------------------------------------------------------ construction

    @classmethod
    def new(cls, players: int, seed: int, options: JsonDict) -> Self:
        GAME.check_players(players)
        opts = normalize_options(options)
        custom = [(t["q"], t["r"], t["terrain"], t["circled"]) for t in opts["custom_tiles"]]
        try:
            layout = board.make_layout(players, seed, opts["layout"], custom, opts["allow_holes"])
        except board.LayoutError as e:
            raise BadOptions(e.rule, e.message) from e
        tiles: list[JsonDict] = [{"q": q, "r": r, "terrain": t, "circled": c} for q, r, t, c in layout]
        blocks = [board.blocks_for_tile(players, t, c) for _, _, t, c in layout]
        on_board = [sum(b for b, t in zip(blocks, tiles, strict=True) if t["terrain"] == c) for c in COLORS]
        start = rng(seed, "start").randrange(players)
        return cls.from_dict(
            {
                "players": players,
                "seed": seed,
                "options": opts,
                "tiles": tiles,
                "blocks": blocks,
                "box": [BLOCKS_PER_COLOR - n for n in on_board],
                "spent": [0] * len(COLORS),
                "hands": [[0] * len(COLORS) for _ in range(players)],
                "pawns": [-1] * players,
                "sticks": [],
                "pending": [],
                "predictions": [[] for _ in range(players)],
                "phase": "PHASE_PREDICT" if opts["prediction"] else "PHASE_PLACE",
                "turn": start,
                "start": start,
                "turn_no": 0,
                "end_reason": "END_REASON_UNSPECIFIED",
                "house_winner": -1,
            }
        )

    @classmethod
    def from_dict(cls, data: JsonDict) -> Self:
        """The state ``to_dict`` gave, or a state as ``new`` and older versions wrote it: the map
        as one dict per tile, the options with the custom tiles in them, no ``final_houses``."""
        options = data["options"]
        if not isinstance(data["tiles"], str) or options.get("custom_tiles") != []:
            data = {**data, "tiles": _map_code(data["tiles"]), "options": {**options, "custom_tiles": []}}
        return super().from_dict(data)

    # ------------------------------------------------------------ queries

    def is_city(self, i: int) -> bool:
        return self.colors[i] < 0

    def color_index(self, i: int) -> int:
        return self.colors[i]

    def active_seats(self) -> list[int]:
        if self.phase == "PHASE_OVER":
            return []
        if self.phase == "PHASE_PREDICT":
            return [s for s in range(self.players) if len(self.predictions[s]) < PREDICTION_SIZE]
        return [self.turn]

    def _is_active(self, seat: int) -> bool:
        """``seat in self.active_seats()``, without the list when one seat plays."""
        if self.phase == "PHASE_PREDICT":
            return seat in self.active_seats()
        return self.phase != "PHASE_OVER" and seat == self.turn

    def is_over(self) -> bool:
        return self.phase == "PHASE_OVER"

    def destinations(self, seat: int) -> list[tuple[int, list[int]]]:
        """(destination, jumped tiles) for every legal pawn move of ``seat``."""
        return [(tile, list(jumped)) for tile, jumped in self._destinations(seat)]

    def _destinations(self, seat: int) -> list[tuple[int, list[int]]]:
        """``destinations``, shared: read, never changed (a turn asks three times, for the same
        pawns)."""
        key = (seat, *self.pawns)
        known = self._destinations_of
        if known is not None and known[0] == key:
            return known[1]
        found = self._find_destinations(seat)
        self._destinations_of = (key, found)
        return found

    def _find_destinations(self, seat: int) -> list[tuple[int, list[int]]]:
        here = self.pawns[seat]
        if here < 0:
            return []
        occupied = {p for p in self.pawns if p >= 0}
        out = []
        at = self.at
        q0, r0 = self.tiles[here]["q"], self.tiles[here]["r"]
        for dq, dr in DIRECTIONS:
            jumped: list[int] = []
            cell = (q0 + dq, r0 + dr)
            while cell in at and at[cell] in occupied:
                jumped.append(at[cell])
                cell = (cell[0] + dq, cell[1] + dr)
            if cell in at:
                out.append((at[cell], jumped))
        return sorted(out)

    def _laid(self, seat: int) -> int:
        """Sticks of ``seat`` on the board, pending ones included."""
        return self.network.laid[seat] + (len(self.pending) if seat == self.turn else 0)

    def _stick_check(
        self, seat: int, anchor: int, paid: int, route: PendingRoute
    ) -> tuple[int, tuple[str, str] | None]:
        """(cost, None) if the stick may be laid now, else (0, (rule, message)); ``route``: the
        pending sticks, ``self._route()``."""
        if paid not in self.adj[anchor]:
            return 0, ("stick_adjacent", "a stick joins the centres of two neighbouring tiles")
        color = self.colors[paid]
        if color < 0:
            if self.is_city(anchor):
                return 0, ("stick_city_city", "a stick may not join two cities")
            return 0, ("stick_paid_land", "the paid end of a stick must be a land tile")
        network = self.network
        if (
            self.colors[anchor] >= 0  # no city: the anchor must hold a stick of the seat (pending too)
            and anchor not in network.tiles[seat]
            and not (seat == self.turn and anchor in route.degree)
        ):
            return 0, (
                "stick_anchor",
                "one end of a stick must be a city or a tile already holding one of your sticks",
            )
        pair = (anchor, paid) if anchor < paid else (paid, anchor)
        owners = network.owners.get(pair, [])
        if seat in owners or pair in route.pairs:
            return 0, ("stick_duplicate", "you already have a stick between these two tiles")
        if owners and self.players == 2:
            return 0, ("stick_parallel", "with 2 players sticks may not be parallel to another stick")
        if network.laid[seat] + (len(self.pending) if seat == self.turn else 0) >= STICK_SUPPLY:
            return 0, ("stick_supply", f"you have laid all your {STICK_SUPPLY} sticks")
        cost = len(owners) + 1
        have = self.hands[seat][color]
        if have < cost:
            name = COLORS[color].removeprefix("TERRAIN_").lower()
            return 0, (
                "stick_blocks",
                f"this stick costs {cost} {name} block(s) (one more per parallel stick) and you have {have}",
            )
        return cost, None

    def _stick_moves(self, route: PendingRoute) -> list[JsonDict]:
        """Every ``lay_stick`` of the seat to play that ``_stick_check`` accepts now, anchors in
        tile order: the same checks, kept up to date stick by stick (``PendingRoute``)."""
        if self._laid(self.turn) >= STICK_SUPPLY:
            return []
        options = route.lay_options(self.hands[self.turn])
        return [{"lay_stick": {"anchor": option[0], "paid": option[1]}} for option in options]

    def house_points(self, seat: int, extra: list[list[int]] | None = None) -> dict[int, int]:
        """City -> house-points of ``seat`` on the board: a network component with k cities gives
        k-1 to each, except that the player who ran out of houses shows only what the supply held."""
        if extra is None and seat == self.house_winner and self.final_houses:
            return {c: p for c, p in self.final_houses}
        return self.network_points(seat, extra)

    def network_points(self, seat: int, extra: list[list[int]] | None = None) -> dict[int, int]:
        """City -> k-1 for each city of a component of ``seat``'s network holding k cities
        (``extra``: sticks ``[a, b, ...]`` not yet committed)."""
        return self.network.points(seat, self.cities, [(e[0], e[1]) for e in extra or ()])

    def route_problem(self) -> RuleViolation | None:
        """Why the pending sticks are not a buildable trade route (None: they are)."""
        if not self.pending:
            return RuleViolation("route_empty", "lay at least one stick before building a route")
        route = self._route()
        if route.pieces() != 1:
            return RuleViolation("route_connected", "all sticks of a trade route must be connected together")
        end = route.first_dead_end()
        if end is not None:
            return RuleViolation(
                "route_dead_end",
                f"a trade route may not end in a dead end: tile {end} is no city and not on your network",
            )
        if not route.adds_house:
            return RuleViolation("route_no_house", "a trade route must add at least one trading house")
        return None

    def _route_buildable(self, route: PendingRoute) -> bool:
        """``route_problem() is None``, from the pending route's (``self._route()``) counts alone."""
        return bool(self.pending) and route.dead_ends == 0 and route.adds_house and route.pieces() == 1

    # ------------------------------------------------------------ moves

    def legal_moves(self, seat: int) -> list[JsonDict]:
        if not self._is_active(seat):
            return []
        if self.phase == "PHASE_PREDICT":
            chosen = self.predictions[seat]
            return [{"predict": {"cities": [c]}} for c in self.cities if c not in chosen]
        if self.phase == "PHASE_PLACE":
            taken = set(self.pawns)
            return [{"place_pawn": {"tile": t}} for t in range(len(self.tiles)) if t not in taken]
        if self.phase == "PHASE_MOVE":
            return [{"move_pawn": {"tile": t}} for t, _ in self._destinations(seat)]
        route = self._route()
        moves = self._stick_moves(route)
        if self.pending:
            moves.append({"undo_stick": {}})
            if self._route_buildable(route):
                moves.append({"build_route": {}})
        moves.append({"end_turn": {}})
        return moves

    def _parse(self, move: JsonDict) -> tuple[str, JsonDict]:
        kind, body = split_move(move, MOVE_KINDS)
        n = len(self.tiles)
        out: JsonDict = {}
        for key in MOVE_KINDS[kind]:
            if key == "cities":
                value = body.get(key, [])
                if not isinstance(value, list) or not all(is_int(v) and 0 <= v < n for v in value):
                    raise MalformedMove(f"move.{kind}.{key}", f"cities must be tile indices 0..{n - 1}")
                if not value:
                    raise MalformedMove(f"move.{kind}.{key}", "name at least one city")
            else:
                value = body.get(key, 0)
                if not (type(value) is int or is_int(value)) or not 0 <= value < n:
                    raise MalformedMove(f"move.{kind}.{key}", f"{key} must be a tile index 0..{n - 1}")
            out[key] = value
        return kind, out

    def apply(self, seat: int, move: JsonDict) -> list[Event]:
        kind, body = self._parse(move)
        if self.phase == "PHASE_OVER":
            raise RuleViolation("game_over", "the game is over")
        if not self._is_active(seat):
            raise NotYourTurn(seat)
        if self.phase != PHASE_OF_MOVE[kind]:
            step = {
                "PHASE_PREDICT": "seal a prediction",
                "PHASE_PLACE": "place your pawn",
                "PHASE_MOVE": "move your pawn first",
                "PHASE_BUILD": "lay sticks, build the route or end the turn",
            }[self.phase]
            raise RuleViolation("phase", f"{kind} is not possible now: {step}")
        do: Callable[..., list[Event]] = getattr(self, "_do_" + kind)
        return do(seat, **body)

    def _do_predict(self, seat: int, cities: list[int]) -> list[Event]:
        mine = self.predictions[seat]
        for c in cities:
            if not self.is_city(c):
                raise RuleViolation("prediction_city", f"tile {c} is not a city")
        if len(set(cities)) != len(cities) or set(cities) & set(mine):
            raise RuleViolation("prediction_duplicate", "a prediction names three different cities")
        if len(mine) + len(cities) > PREDICTION_SIZE:
            raise RuleViolation("prediction_size", "a prediction names exactly three cities")
        mine.extend(cities)
        done = len(mine) == PREDICTION_SIZE
        events = [
            Event({"prediction_recorded": {"seat": seat, "cities": list(mine)}}, to=(seat,)),
            Event({"prediction_sealed": {"seat": seat, "count": len(mine), "complete": done}}),
        ]
        if not self.active_seats():
            self.phase = "PHASE_PLACE"
            self.turn = self.start
        return events

    def _take_block(self, seat: int, tile: int) -> bool:
        if self.is_city(tile) or self.blocks[tile] == 0:
            return False
        self.blocks[tile] -= 1
        self.hands[seat][self.color_index(tile)] += 1
        return True

    def _do_place_pawn(self, seat: int, tile: int) -> list[Event]:
        if tile in self.pawns:
            raise RuleViolation("pawn_occupied", "a pawn may not be placed on a tile holding another pawn")
        self.pawns[seat] = tile
        took = self._take_block(seat, tile)
        events = [Event({"pawn_placed": {"seat": seat, "tile": tile, "took_block": took}})]
        nxt = (seat + 1) % self.players
        if self.pawns[nxt] >= 0:  # everyone placed: the starting seat takes the first turn
            return events + self._next_turn(nxt, placement=True)
        self.turn_no += 1
        self.turn = nxt
        if self._colour_exhausted():
            return events + self._finish("END_REASON_BLOCKS_EXHAUSTED")
        return events

    def _do_move_pawn(self, seat: int, tile: int) -> list[Event]:
        dest = dict(self._destinations(seat))
        if tile not in dest:
            raise RuleViolation(
                "pawn_move",
                "a pawn moves to a neighbouring tile, jumping in a straight line over pawns to the first "
                "free tile",
            )
        here = self.pawns[seat]
        self.pawns[seat] = tile
        took = self._take_block(seat, tile)
        self.phase = "PHASE_BUILD"
        return [
            Event(
                {
                    "pawn_moved": {
                        "seat": seat,
                        "from_tile": here,
                        "to_tile": tile,
                        "jumped": list(dest[tile]),
                        "took_block": took,
                    }
                }
            )
        ]

    def _do_lay_stick(self, seat: int, anchor: int, paid: int) -> list[Event]:
        route = self._route()  # in step with the pending sticks before this one
        cost, problem = self._stick_check(seat, anchor, paid, route)
        if problem is not None:
            raise RuleViolation(*problem)
        color = self.color_index(paid)
        self.hands[seat][color] -= cost
        self.spent[color] += cost
        self.pending.append([anchor, paid, cost])
        route.push(anchor, paid, cost, (color, self.hands[seat]))
        body = {"seat": seat, "anchor": anchor, "paid": paid, "cost": cost, "color": COLORS[color]}
        return [Event({"stick_laid": body})]

    def _refund_last(self) -> list[int]:
        anchor, paid, cost = self.pending.pop()
        color = self.color_index(paid)
        self.hands[self.turn][color] += cost
        self.spent[color] -= cost
        return [anchor, paid, cost]

    def _do_undo_stick(self, seat: int) -> list[Event]:
        if not self.pending:
            raise RuleViolation("undo_nothing", "no stick was laid this turn")
        anchor, paid, cost = self._refund_last()
        return [Event({"stick_undone": {"seat": seat, "anchor": anchor, "paid": paid, "refund": cost}})]

    def _do_build_route(self, seat: int) -> list[Event]:
        problem = self.route_problem()
        if problem is not None:
            raise problem
        before = self.house_points(seat)
        supply = house_supply(self.players)
        if sum(self.network_points(seat, self.pending).values()) >= supply:
            self.final_houses = [[c, p] for c, p in sorted(self._place_last_houses(seat, supply).items())]
            self.house_winner = seat
        new = [[seat, min(a, b), max(a, b), b, cost] for a, b, cost in self.pending]
        for stick in new:
            self.network.add(seat, stick[1], stick[2])
        self.sticks.extend(new)
        self.pending = []
        after = self.house_points(seat)
        placed = sum(after.values())
        changes = [{"city": c, "points": p} for c, p in sorted(after.items()) if before.get(c) != p]
        body = {
            "seat": seat,
            "sticks": [stick_dict(st) for st in new],
            "houses": changes,
            "house_points": placed,
            "houses_left": max(0, supply - placed),
        }
        events = [Event({"route_built": body})]
        if placed >= supply:
            return events + self._finish("END_REASON_HOUSES_EXHAUSTED")
        return events + self._end_turn(seat, discarded=0)

    def _place_last_houses(self, seat: int, supply: int) -> dict[int, int]:
        """The cities as the pending route leaves them when it needs more house-points than the
        supply holds: the cities gain in the order the route connects them (stick by stick as
        laid, the cities one stick raises in tile order), each as much as the supply still holds,
        until it is empty. Pieces are exchanged freely, so largest-first only decides which pieces
        go, never how many points a city shows."""
        shown = self.house_points(seat)
        left = supply - sum(shown.values())
        for i in range(1, len(self.pending) + 1):
            step = self.network_points(seat, self.pending[:i])
            for city in sorted(step):
                gain = min(step[city] - shown.get(city, 0), left)
                if gain > 0:
                    shown[city] = shown.get(city, 0) + gain
                    left -= gain
        return shown

    def _do_end_turn(self, seat: int) -> list[Event]:
        discarded = len(self.pending)
        while self.pending:
            self._refund_last()
        return self._end_turn(seat, discarded)

    def _colour_exhausted(self) -> bool:
        """Whether the tiles of some colour on the map hold no block any more."""
        blocks = self.blocks
        return any(tiles and sum(blocks[t] for t in tiles) == 0 for tiles in self.color_tiles)

    def _end_turn(self, seat: int, discarded: int) -> list[Event]:
        nxt = (seat + 1) % self.players
        events = [Event({"turn_ended": {"seat": seat, "discarded": discarded, "next_seat": nxt}})]
        self.turn_no += 1
        if self._colour_exhausted():
            return events + self._finish("END_REASON_BLOCKS_EXHAUSTED")
        return events + self._next_turn(nxt)

    def _next_turn(self, seat: int, placement: bool = False) -> list[Event]:
        if placement:
            self.turn_no += 1
            if self._colour_exhausted():
                return self._finish("END_REASON_BLOCKS_EXHAUSTED")
        self.turn = seat
        self.phase = "PHASE_MOVE"
        if not self._destinations(seat):
            self.phase = "PHASE_BUILD"
            return [Event({"pawn_blocked": {"seat": seat, "tile": self.pawns[seat]}})]
        return []

    def _finish(self, reason: str) -> list[Event]:
        self.phase = "PHASE_OVER"
        self.end_reason = reason
        body = {
            "reason": reason,
            "scores": self.scores(),
            "winners": self.winners(),
            "predictions": [{"seat": s, "cities": list(p)} for s, p in enumerate(self.predictions)],
        }
        return [Event({"game_over": body})]

    # ------------------------------------------------------------ scoring

    def city_totals(self, points: list[dict[int, int]]) -> dict[int, int]:
        totals = dict.fromkeys(self.cities, 0)
        for seat_points in points:
            for city, n in seat_points.items():
                if city in totals:
                    totals[city] += n
        return totals

    def standings(
        self, points: list[dict[int, int]] | None = None, totals: dict[int, int] | None = None
    ) -> list[dict[str, int]]:
        """Per seat: score, cities with a house, sticks and house-points (``totals``: the
        ``city_totals`` of ``points`` when the caller has them)."""
        if points is None:
            points = [self.house_points(s) for s in range(self.players)]
        if totals is None:
            totals = self.city_totals(points)
        scores = board_scores(points, totals, top_count(self.players))
        rows = []
        for s in range(self.players):
            if self.phase == "PHASE_OVER" and self.options["prediction"]:
                scores[s] += prediction_points(self.predictions[s], totals)
            rows.append(
                {
                    "score": scores[s],
                    "cities": len(points[s]),
                    "sticks": self.network.laid[s],
                    "house_points": sum(points[s].values()),
                }
            )
        return rows

    def scores(self) -> list[int]:
        return [row["score"] for row in self.standings()]

    def winners(self) -> list[int]:
        if self.phase != "PHASE_OVER":
            return []
        if self.end_reason == "END_REASON_HOUSES_EXHAUSTED":
            return [self.house_winner]
        return tiebreak_winners(
            [(r["score"], r["cities"], r["sticks"], r["house_points"]) for r in self.standings()]
        )

    # ------------------------------------------------------------ platform hooks

    def opening_events(self) -> list[Event]:
        """The public set-up: the map with its blocks, the starting seat and the first phase."""
        body = {
            "tiles": observe(self, None)["tiles"],
            "start_seat": self.start,
            "phase": self.phase,
            "house_supply": house_supply(self.players),
            "box_blocks": list(self.box),
        }
        return [Event({"board_set_up": body})]

    def timeout_move(self, seat: int) -> JsonDict:
        """The timeout policy, also the ``policy`` bot's: see ``services.morisi.policy``."""
        return policy.timeout_move(self, seat)

    # ------------------------------------------------------------ view

    def view(self, seat: int | None) -> JsonDict:
        """What ``seat`` may see (``None``: a spectator): see ``services.morisi.view``."""
        return observe(self, seat)


# ---------------------------------------------------------------- helpers


class Geometry(NamedTuple):
    """What a map fixes, computed once per map (``_geometry``) and shared read-only."""

    tiles: tuple[Mapping[str, Any], ...]
    at: dict[tuple[int, int], int]  # cell -> tile index
    adj: list[list[int]]  # neighbouring tiles
    cities: list[int]
    colors: list[int]  # colour index, -1 for a city
    # the sticks a tile could anchor that pay for a land tile: (paid tile, ordered pair, paid colour)
    land_links: list[list[tuple[int, tuple[int, int], int]]]
    color_tiles: list[list[int]]  # per colour, its tiles
    tile_rows: list[tuple[int, int, int, str, bool]]  # (index, q, r, terrain, circled)


def _map_code(tiles: str | list[Any]) -> str:
    """The map as stored: ``q,r,terrain index,circled`` per tile, ``;`` between tiles. One short
    string costs next to nothing to encode and decode and keys the geometry cache. States
    stored before this form held one dict per tile, which is read too."""
    if isinstance(tiles, str):
        return tiles
    return ";".join(f"{t['q']},{t['r']},{TERRAINS.index(t['terrain'])},{int(t['circled'])}" for t in tiles)


@functools.lru_cache(maxsize=256)
def _geometry(code: str) -> Geometry:
    """The geometry of a map (cached and shared, read-only: maps never change)."""
    packed = [tuple(int(x) for x in tile.split(",")) for tile in code.split(";")] if code else []
    tiles = tuple(
        MappingProxyType({"q": q, "r": r, "terrain": TERRAINS[t], "circled": bool(c)})
        for q, r, t, c in packed
    )
    at = {(q, r): i for i, (q, r, _, _) in enumerate(packed)}
    adj = [[at[c] for c in board.neighbours((q, r)) if c in at] for q, r, _, _ in packed]
    colors = [t - 1 for _, _, t, _ in packed]  # TERRAINS is (CITY, *COLORS)
    cities = [i for i, c in enumerate(colors) if c < 0]
    links = [
        [(p, (min(a, p), max(a, p)), colors[p]) for p in adj[a] if colors[p] >= 0] for a in range(len(packed))
    ]
    color_tiles = [[i for i, c in enumerate(colors) if c == color] for color in range(len(COLORS))]
    rows = [(i, q, r, TERRAINS[t], bool(c)) for i, (q, r, t, c) in enumerate(packed)]
    return Geometry(tiles, at, adj, cities, colors, links, color_tiles, rows)
