"""What a Morisi search bot needs from the game: a full state made from one seat's view
(``determinize``), a cheap sensible move for playouts (``playout_move``) and a score of a
position for cut-off playouts (``evaluate``).

Everything on the board is public; a seat does not see the colours of the other seats' blocks
(only how many each holds) nor, before the end, their predictions. ``determinize`` deals the
blocks that are unaccounted for (14 per colour less those on tiles, handed in, in the box and
behind the seat's own screen) to the other seats by their totals, and samples their predictions.
With 2 players the other screen is then exactly known.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from typing import Any

from services.engine import JsonDict
from services.morisi.board import BLOCKS_PER_COLOR, COLORS
from services.morisi.rules import STICK_SUPPLY, State
from services.morisi.scoring import house_supply

PLAN = "_bot_plan"  # the playout's route under way, kept on the state object (never stored)
# The last screens the events told: (view, history, (seat, events), hands)
_last_told: list[tuple[JsonDict, list[JsonDict], tuple[int, int], list[list[int]] | None] | None] = [None]


# ---------------------------------------------------------------- determinization


def determinize(
    view: JsonDict, seat: int, rng: random.Random, history: list[JsonDict] | None = None
) -> State:
    """A full state that ``seat``'s view cannot tell from the true one: the hidden blocks dealt at
    random to the seats that hold them (by each seat's total), the hidden predictions sampled."""
    players = view["players"]
    n = len(players)
    tiles = view["tiles"]
    hands = None
    if history is not None:
        last = _last_told[0]
        if last is not None and last[0] is view and last[1] is history and last[2] == (seat, len(history)):
            told = last[3]  # a search asks again and again about the same information
        else:
            told = _screens_told(view, seat, history)
            _last_told[0] = (view, history, (seat, len(history)), told)
        hands = None if told is None else [list(hand) for hand in told]
    if hands is None:
        hands = _deal_blocks(view, seat, rng)
    cities = [t["index"] for t in tiles if t["terrain"] == "TERRAIN_CITY"]
    shown = {p["seat"]: list(p["cities"]) for p in view["predictions"]}
    predictions = []
    for p in players:
        s = p["seat"]
        predictions.append(shown[s] if s in shown else rng.sample(cities, p["predicted"]))
    house_winner, final_houses = -1, []
    if view["end_reason"] == "END_REASON_HOUSES_EXHAUSTED":
        house_winner = next(p["seat"] for p in players if p["house_points"] >= house_supply(n))
        final_houses = [
            [c["city"], c["points"][house_winner]] for c in view["cities"] if c["points"][house_winner]
        ]
    data: dict[str, Any] = {
        "players": n,
        "seed": 0,  # chance is over once the map is laid: the seed is never read again
        "options": {
            "layout": view["layout"],
            "custom_tiles": [],
            "allow_holes": view["allow_holes"],
            "prediction": view["prediction_variant"],
        },
        "tiles": [
            {"q": t["q"], "r": t["r"], "terrain": t["terrain"], "circled": t["circled"]} for t in tiles
        ],
        "blocks": [t["blocks"] for t in tiles],
        "box": list(view["box_blocks"]),
        "spent": list(view["spent_blocks"]),
        "hands": hands,
        "pawns": [p["pawn_tile"] if p["pawn_placed"] else -1 for p in players],
        "sticks": [[st["seat"], st["a"], st["b"], st["paid"], st["cost"]] for st in view["sticks"]],
        "pending": [[p["anchor"], p["paid"], p["cost"]] for p in view["pending"]],
        "predictions": predictions,
        "phase": view["phase"],
        "turn": view["turn_seat"],
        "start": view["start_seat"],
        "turn_no": view["turn"],
        "end_reason": view["end_reason"],
        "house_winner": house_winner,
        "final_houses": final_houses,
    }
    return State.from_dict(data)


def _screens_told(view: JsonDict, seat: int, history: list[JsonDict]) -> list[list[int]] | None:
    """Every seat's blocks by colour as the public events tell them (each block taken and paid
    names its tile, so its colour), or None when the history does not reach back to the set-up
    or disagrees with the view."""
    if not history or "board_set_up" not in history[0]:
        return None
    colour = [COLORS.index(t["terrain"]) if t["terrain"] in COLORS else -1 for t in view["tiles"]]
    hands = [[0] * len(COLORS) for _ in view["players"]]
    pending: list[tuple[int, int]] = []  # (colour, cost) of the sticks laid this turn
    for event in history:
        kind, body = next(iter(event.items()))
        if kind == "pawn_placed" or kind == "pawn_moved":
            if body.get("took_block"):
                tile = body.get("tile", 0) if kind == "pawn_placed" else body.get("to_tile", 0)
                hands[body.get("seat", 0)][colour[tile]] += 1
        elif kind == "stick_laid":
            paid_colour, cost = colour[body.get("paid", 0)], body.get("cost", 0)
            hands[body.get("seat", 0)][paid_colour] -= cost
            pending.append((paid_colour, cost))
        elif kind == "stick_undone" and pending:
            paid_colour, cost = pending.pop()
            hands[body.get("seat", 0)][paid_colour] += cost
        elif kind == "route_built":
            pending = []
        elif kind == "turn_ended":
            for paid_colour, cost in pending:
                hands[body.get("seat", 0)][paid_colour] += cost
            pending = []
    for player, hand in zip(view["players"], hands, strict=True):
        if sum(hand) != player["block_count"] or min(hand) < 0:
            return None
    if hands[seat] != list(view["my_blocks"]):
        return None
    return hands


def _deal_blocks(view: JsonDict, seat: int, rng: random.Random) -> list[list[int]]:
    """Per seat its blocks by colour: the seat's own as shown, the rest of each colour (what no
    tile, box, stick or the seat's own screen holds) shuffled and dealt by the others' totals."""
    mine = list(view["my_blocks"])
    hidden = [
        BLOCKS_PER_COLOR - view["box_blocks"][c] - view["spent_blocks"][c] - mine[c]
        for c in range(len(COLORS))
    ]
    for t in view["tiles"]:
        if t["terrain"] != "TERRAIN_CITY":
            hidden[COLORS.index(t["terrain"])] -= t["blocks"]
    pool = [c for c, count in enumerate(hidden) for _ in range(count)]
    rng.shuffle(pool)
    hands = []
    for p in view["players"]:
        if p["seat"] == seat:
            hands.append(mine)
            continue
        hand = [0] * len(COLORS)
        for _ in range(p["block_count"]):
            hand[pool.pop()] += 1
        hands.append(hand)
    return hands


# ---------------------------------------------------------------- playouts

ROUTES_WEIGHED = 4  # routes whose first stick the search weighs at the start of a build
PLACES_WEIGHED = 8  # pawn placements the search weighs


def candidate_moves(state: State, seat: int, rng: random.Random, deep: bool = True) -> list[JsonDict]:
    """The moves worth searching: every pawn move and prediction, the likeliest placements, and
    in a build the first sticks of a few short routes the seat can pay for (the next stick of the
    route under way), building the route once it is one, and ending the turn. The same at every
    level (``deep``: no playout here runs long)."""
    moves = state.legal_moves(seat)
    phase = state.phase
    if phase == "PHASE_PLACE":
        ranked = sorted(moves, key=lambda m: -_place_score(state, m["place_pawn"]["tile"]))
        return ranked[:PLACES_WEIGHED]
    if phase != "PHASE_BUILD":
        return moves
    wanted: list[JsonDict] = []
    if {"build_route": {}} in moves:
        wanted.append({"build_route": {}})
    for steps in _routes(state, seat, rng, ROUTES_WEIGHED):
        anchor, paid = steps[0]
        stick = {"lay_stick": {"anchor": anchor, "paid": paid}}
        if stick not in wanted and stick in moves:
            wanted.append(stick)
    if state.pending and not wanted:
        wanted.append({"undo_stick": {}})
    wanted.append({"end_turn": {}})
    return wanted


def playout_move(state: State, seat: int, rng: random.Random) -> JsonDict:
    """A cheap sensible move: pawns go where there are blocks (of the colours the seat holds least
    of), and each turn lays the shortest route it can pay for that joins two of its networks (a
    lone city counts as one), then builds it; without one it ends the turn."""
    phase = state.phase
    if phase == "PHASE_PREDICT":
        chosen = state.predictions[seat]
        return {"predict": {"cities": [rng.choice([c for c in state.cities if c not in chosen])]}}
    if phase == "PHASE_PLACE":
        return {"place_pawn": {"tile": _place_tile(state, rng)}}
    if phase == "PHASE_MOVE":
        return {"move_pawn": {"tile": _move_tile(state, seat, rng)}}
    return _build_step(state, seat, rng)


def _place_tile(state: State, rng: random.Random) -> int:
    taken = set(state.pawns)
    best, best_score = -1, -1.0
    for t in range(len(state.tiles)):
        if t in taken:
            continue
        score = rng.random() + _place_score(state, t)
        if score > best_score:
            best, best_score = t, score
    return best


def _place_score(state: State, tile: int) -> float:
    """A pawn's start is worth a block, and cities next to it to build from."""
    return (4.0 if state.blocks[tile] else 0.0) + sum(1.0 for x in state.adj[tile] if state.colors[x] < 0)


def _move_tile(state: State, seat: int, rng: random.Random) -> int:
    hand = state.hands[seat]
    best, best_score = -1, -1.0
    for tile, _ in state.destinations(seat):
        score = rng.random()
        color = state.colors[tile]
        if color >= 0 and state.blocks[tile]:
            score += 2.0 + 3.0 / (1 + hand[color])
        if score > best_score:
            best, best_score = tile, score
    return best


def _build_step(state: State, seat: int, rng: random.Random) -> JsonDict:
    """The next step of the turn's route: a planned stick, ``build_route`` once the laid sticks
    make a route, else ``end_turn``."""
    if state.pending and state.route_problem() is None:
        return {"build_route": {}}
    laid = [(anchor, paid) for anchor, paid, _ in state.pending]
    plan = state.__dict__.get(PLAN)
    if plan is None or plan[0] != state.turn_no or len(plan[1]) <= len(laid) or plan[1][: len(laid)] != laid:
        steps = _plan_route(state, seat, rng)
        if steps is None:
            return {"end_turn": {}}
        plan = state.__dict__[PLAN] = (state.turn_no, laid + steps)
    anchor, paid = plan[1][len(laid)]
    return {"lay_stick": {"anchor": anchor, "paid": paid}}


def _plan_route(state: State, seat: int, rng: random.Random) -> list[tuple[int, int]] | None:
    """The sticks (anchor, paid) of a shortest route the seat can pay for that joins two of its
    components (from the pending sticks' loose end when sticks are laid already), or None."""
    routes = _routes(state, seat, rng, 1)
    return routes[0] if routes else None


def _routes(state: State, seat: int, rng: random.Random, wanted: int) -> list[list[tuple[int, int]]]:
    """Up to ``wanted`` routes as ``_plan_route`` finds them, shortest first.

    A breadth-first search from every component at once over land tiles nobody's component
    holds; where two searches meet, a connection. Each component is a set of the seat's stick
    tiles and cities; a city without a stick of the seat is a component of its own."""
    network = state.network
    colors = state.colors
    adj = state.adj
    owners = network.owners
    mine = network.tiles[seat]
    two = state.players == 2
    label: dict[int, int] = {}
    for city in state.cities:
        label[city] = network.find(seat, city)
    for tile in mine:
        label[tile] = network.find(seat, tile)
    pending_pairs = set()
    if state.pending:
        degree: dict[int, int] = {}
        for anchor, paid, _ in state.pending:
            pending_pairs.add((min(anchor, paid), max(anchor, paid)))
            for x in (anchor, paid):
                degree[x] = degree.get(x, 0) + 1
        pend = -1 - len(state.tiles)  # the pending route's component, merged with what it touches
        touched = {label[x] for x in degree if x in label}
        for tile, root in list(label.items()):
            if root in touched:
                label[tile] = pend
        for x in degree:
            label[x] = pend
        loose = [x for x, d in degree.items() if d == 1 and x not in mine and colors[x] >= 0]
        if len(loose) > 1:
            return []
        sources = loose or list(degree)
    else:
        sources = list(label)
    rng.shuffle(sources)
    dist = dict.fromkeys(label, 0)
    parent: dict[int, int] = {}
    queue = deque(sources)
    meets: list[tuple[int, int, int]] = []
    while queue:
        u = queue.popleft()
        for v in adj[u]:
            if colors[u] < 0 and colors[v] < 0:
                continue
            pair = (u, v) if u < v else (v, u)
            held = owners.get(pair)
            if (held and (two or seat in held)) or pair in pending_pairs:
                continue
            if v in label:
                if label[v] != label[u]:
                    meets.append((dist[u] + dist[v] + 1, u, v))
                continue
            label[v] = label[u]
            dist[v] = dist[u] + 1
            parent[v] = u
            queue.append(v)
    meets.sort(key=lambda m: m[0])
    hand = state.hands[seat]
    room = STICK_SUPPLY - network.laid[seat] - len(state.pending)
    found: list[list[tuple[int, int]]] = []
    for length, u, v in meets[: 8 * wanted]:
        if length > room or len(found) == wanted:
            break
        path = _trace(parent, u)[::-1] + _trace(parent, v)
        steps = _pay(path, colors, owners, hand, mine)
        if steps is not None:
            found.append(steps)
    return found


def _trace(parent: dict[int, int], tile: int) -> list[int]:
    """``tile`` and its search ancestors, back to the source it was reached from."""
    out = [tile]
    while tile in parent:
        tile = parent[tile]
        out.append(tile)
    return out


def _pay(
    path: list[int],
    colors: list[int],
    owners: dict[tuple[int, int], list[int]],
    hand: list[int],
    mine: set[int],
) -> list[tuple[int, int]] | None:
    """The sticks along ``path`` as (anchor, paid), laid from its first tile, if the hand pays
    them all: each stick pays its new land end (its other end when the new end is a city)."""
    left = list(hand)
    steps = []
    for x, y in itertools.pairwise(path):
        paid, anchor = (y, x) if colors[y] >= 0 else (x, y)
        held = owners.get((x, y) if x < y else (y, x))
        cost = 1 + (len(held) if held else 0)
        if left[colors[paid]] < cost and colors[x] >= 0 and colors[y] >= 0 and y in mine:
            paid, anchor = x, y  # the far end already holds a stick of the seat: it may anchor
        left[colors[paid]] -= cost
        if left[colors[paid]] < 0:
            return None
        steps.append((anchor, paid))
    return steps
