"""Seeded random Morisi playouts with invariants checked after every move."""

from __future__ import annotations

import json
import random

import pytest

from services.engine import MalformedMove, MoveError, NotYourTurn, RuleViolation
from services.morisi import board
from services.morisi.rules import GAME, State
from services.morisi.scoring import house_supply

COLORS = board.COLORS
SEEDS = range(60)
HEAVY_EVERY = 13  # every legal move is tried on a copy in one seed out of this many (13: all player counts)


def configs():
    """(players, seed, options) spread over every player count and option."""
    for seed in SEEDS:
        players = 2 + seed % 3
        options = {
            "prediction": seed % 4 == 1,
            "allow_holes": seed % 5 == 2,
            "layout": ("random", "random", "hexagon", "rows")[seed % 4] if seed % 5 != 2 else "random",
        }
        yield players, seed, options


def plan_route(state: State, seat: int, rnd: random.Random) -> list[tuple[int, int]] | None:
    """A random affordable city-to-city route over one or two land tiles that adds a house.

    Written independently of the engine's move generator: the engine must accept every step.
    """
    owners: dict[tuple[int, int], list[int]] = {}
    for s, a, b, *_ in state.sticks:
        owners.setdefault((a, b), []).append(s)
    comp = component_of(state, seat)
    found = []

    def cost_ok(sticks: list[tuple[int, int]]) -> bool:
        if sum(st[0] == seat for st in state.sticks) + len(sticks) > 20:  # 20 sticks per player
            return False
        need = [0] * 5
        for anchor, paid in sticks:
            pair = (min(anchor, paid), max(anchor, paid))
            if seat in owners.get(pair, []) or (state.players == 2 and owners.get(pair)):
                return False
            need[COLORS.index(state.tiles[paid]["terrain"])] += len(owners.get(pair, [])) + 1
        return all(n <= h for n, h in zip(need, state.hands[seat], strict=True))

    def extend(path: list[int]) -> None:
        last = path[-1]
        for nxt in state.adj[last]:
            if nxt in path:
                continue
            if state.tiles[nxt]["terrain"] == "TERRAIN_CITY":
                if len(path) < 2 or (comp.get(path[0]) is not None and comp.get(path[0]) == comp.get(nxt)):
                    continue
                sticks = [(path[i], path[i + 1]) for i in range(len(path) - 1)] + [(nxt, last)]
                if cost_ok(sticks):
                    found.append(sticks)
            elif len(path) < 3 and state.hands[seat][COLORS.index(state.tiles[nxt]["terrain"])] > 0:
                extend([*path, nxt])

    for city in state.cities:
        extend([city])
    return rnd.choice(found) if found else None


def component_of(state: State, seat: int) -> dict[int, int]:
    """Tile -> network component id of the seat's sticks."""
    comp: dict[int, int] = {}
    graph: dict[int, set[int]] = {}
    for s, a, b, *_ in state.sticks:
        if s == seat:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set()).add(a)
    for start in graph:
        if start in comp:
            continue
        comp[start] = start
        todo = [start]
        while todo:
            for n in graph[todo.pop()]:
                if n not in comp:
                    comp[n] = start
                    todo.append(n)
    return comp


class Player:
    """A random player that plans real routes, sometimes fumbles sticks and takes them back."""

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd
        self.plan: list[tuple[int, int]] = []
        self.planned_turn = -1
        self.fumble = True

    def choose(self, state: State, seat: int, moves: list[dict]) -> dict:
        rnd = self.rnd
        if state.phase != "PHASE_BUILD":
            return rnd.choice(moves)
        if self.planned_turn != state.turn_no:
            self.planned_turn = state.turn_no
            self.plan = []
            if not state.pending and rnd.random() < 0.9:
                self.plan = plan_route(state, seat, rnd) or []
            self.fumble = not self.plan
        if self.plan:
            anchor, paid = self.plan.pop(0)
            move = {"lay_stick": {"anchor": anchor, "paid": paid}}
            assert move in moves, (move, state.to_dict())
            return move
        if not self.fumble and state.pending:
            assert {"build_route": {}} in moves, state.to_dict()
            return {"build_route": {}}
        if {"build_route": {}} in moves:
            return {"build_route": {}}
        sticks = [m for m in moves if "lay_stick" in m]
        if state.pending and rnd.random() < 0.3:
            return {"undo_stick": {}}
        if sticks and len(state.pending) < 3 and rnd.random() < 0.6:
            return rnd.choice(sticks)
        return {"end_turn": {}}


# ---------------------------------------------------------------- independent recounts


def recount_points(state: State, seat: int) -> dict[int, int]:
    """House-points by breadth-first search over the seat's sticks (k cities in a component: k-1 each)."""
    graph: dict[int, set[int]] = {}
    for s, a, b, *_ in state.sticks:
        if s == seat:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set()).add(a)
    out: dict[int, int] = {}
    seen: set[int] = set()
    for start in graph:
        if start in seen:
            continue
        comp = {start}
        todo = [start]
        while todo:
            for n in graph[todo.pop()]:
                if n not in comp:
                    comp.add(n)
                    todo.append(n)
        seen |= comp
        cities = [t for t in comp if state.tiles[t]["terrain"] == "TERRAIN_CITY"]
        if len(cities) > 1:
            out.update({c: len(cities) - 1 for c in cities})
    return out


def check_last_houses(state: State, seat: int, network: dict[int, int], supply: int) -> None:
    """The player who ran out of houses shows exactly the supply, never more in a city than
    their network gives it (the hand-built tests check which cities got the last points)."""
    shown = state.house_points(seat)
    assert sum(shown.values()) == supply
    assert set(shown) <= set(network) and all(0 < p <= network[c] for c, p in shown.items())


def board_points(state: State, seat: int) -> dict[int, int]:
    """The recount, except the house winner's board (checked by ``check_last_houses``)."""
    if state.end_reason == "END_REASON_HOUSES_EXHAUSTED" and state.winners() == [seat]:
        return state.house_points(seat)
    return recount_points(state, seat)


def recount_scores(state: State) -> list[int]:
    points = [board_points(state, s) for s in range(state.players)]
    totals = {c: sum(p.get(c, 0) for p in points) for c in state.cities}
    keep = 1 if state.players == 2 else 3
    values = sorted((v for v in totals.values() if v > 0), reverse=True)
    top = {c for c, v in totals.items() if values and v >= values[min(keep, len(values)) - 1] and v > 0}
    scores = [4 * len(p) + sum(v for c, v in p.items() if c in top) for p in points]
    if state.is_over() and state.options["prediction"]:
        for s in range(state.players):
            for rank, city in enumerate(state.predictions[s], start=1):
                v = totals[city]
                if v == 0:
                    continue
                above = sum(x > v for x in totals.values())
                tied = sum(x == v for x in totals.values())
                scores[s] += 5 if above < rank <= above + tied else (2 if above < 3 else 0)
    return scores


def check_invariants(state: State) -> None:
    d = state.to_dict()
    json.dumps(d)
    # every block accounted for: board + screens + handed in + never used = 14 per colour
    for ci, color in enumerate(COLORS):
        on_board = sum(b for b, t in zip(state.blocks, state.tiles, strict=True) if t["terrain"] == color)
        held = sum(h[ci] for h in state.hands)
        assert on_board + held + state.spent[ci] + state.box[ci] == 14, color
        paid = [st[4] for st in state.sticks if COLORS.index(state.tiles[st[3]]["terrain"]) == ci]
        paid += [p[2] for p in state.pending if COLORS.index(state.tiles[p[1]]["terrain"]) == ci]
        assert state.spent[ci] == sum(paid)
    assert all(v >= 0 for v in state.blocks + state.box + state.spent + [x for h in state.hands for x in h])
    assert sum(state.blocks) + sum(state.box) + sum(state.spent) + sum(map(sum, state.hands)) == 70
    assert all(state.blocks[c] == 0 for c in state.cities)
    # sticks: canonical, legal shapes, costs 1, 2, 3... in the order laid on a pair; none parallel with 2
    laid: dict[tuple[int, int], list[int]] = {}
    for seat, a, b, paid, cost in state.sticks:
        assert a < b and b in state.adj[a] and paid in (a, b)
        assert state.tiles[paid]["terrain"] != "TERRAIN_CITY"
        assert seat not in laid.get((a, b), [])
        laid.setdefault((a, b), []).append(seat)
        assert cost == len(laid[(a, b)])
    if state.players == 2:
        assert all(len(v) == 1 for v in laid.values())
    # 20 sticks per player in the box
    assert all(
        sum(st[0] == s for st in state.sticks) + len(state.pending) <= 20 for s in range(state.players)
    )
    # pawns on distinct tiles
    placed = [p for p in state.pawns if p >= 0]
    assert len(placed) == len(set(placed))
    # houses: recount, supply
    supply = house_supply(state.players)
    for s in range(state.players):
        points = recount_points(state, s)
        if state.end_reason == "END_REASON_HOUSES_EXHAUSTED" and state.winners() == [s]:
            check_last_houses(state, s, points, supply)
        else:
            assert state.house_points(s) == points
            assert sum(points.values()) < supply
    assert state.scores() == recount_scores(state)
    # round trip
    again = State.from_dict(json.loads(json.dumps(d)))
    assert again == state and again.to_dict() == d
    # only active seats have moves
    active = state.active_seats()
    for s in range(state.players):
        if s not in active:
            assert state.legal_moves(s) == []


def check_view(state: State, seat: int | None) -> None:
    v = state.view(seat)
    text = json.dumps(v)
    assert "seed" not in text
    others = [s for s in range(state.players) if s != seat]
    assert v["my_blocks"] == (list(state.hands[seat]) if seat is not None else [])
    for p in v["players"]:
        assert set(p) == {
            "seat",
            "pawn_placed",
            "pawn_tile",
            "block_count",
            "house_points",
            "houses_left",
            "sticks",
            "cities",
            "score",
            "predicted",
        }
        assert p["block_count"] == sum(state.hands[p["seat"]])
    shown = {p["seat"] for p in v["predictions"]}
    if state.is_over():
        assert shown == set(range(state.players))
    else:
        assert shown <= ({seat} if seat is not None else set())
        assert not shown & set(others)


def check_events(events, seat: int, state: State) -> None:
    for e in events:
        (kind,) = e.body
        if e.to is not None:
            assert kind == "prediction_recorded" and e.to == (seat,)
            assert e.body[kind]["seat"] == seat
        else:
            assert kind != "prediction_recorded"
            text = json.dumps(e.body)
            assert "hands" not in text and "seed" not in text
            if kind == "game_over":
                assert state.is_over()


def try_illegal(state: State, seat: int, moves: list[dict], rnd: random.Random) -> None:
    """Refused moves raise the right error and change nothing."""
    before = state.to_dict()
    others = [s for s in range(state.players) if s not in state.active_seats()]
    attempts: list[tuple[int, dict, type]] = []
    if others and moves:
        attempts.append((rnd.choice(others), rnd.choice(moves), NotYourTurn))
    n = len(state.tiles)
    attempts.append((seat, {"move_pawn": {"tile": n + 3}}, MalformedMove))
    attempts.append((seat, {"jump": {}}, MalformedMove))
    kinds = {
        "PHASE_PREDICT": "predict",
        "PHASE_PLACE": "place_pawn",
        "PHASE_MOVE": "move_pawn",
        "PHASE_BUILD": "lay_stick",
    }
    if state.phase == "PHASE_BUILD":
        attempts.append((seat, {"move_pawn": {"tile": 0}}, RuleViolation))
        a = rnd.randrange(n)
        cand = {"lay_stick": {"anchor": a, "paid": rnd.randrange(n)}}
        if cand not in moves:
            attempts.append((seat, cand, RuleViolation))
        if not state.pending or {"build_route": {}} not in moves:
            attempts.append((seat, {"build_route": {}}, RuleViolation))
    elif state.phase in ("PHASE_MOVE", "PHASE_PLACE"):
        attempts.append((seat, {"end_turn": {}}, RuleViolation))
        kind = kinds[state.phase]
        cand = {kind: {"tile": rnd.randrange(n)}}
        if cand not in moves:
            attempts.append((seat, cand, RuleViolation))
    for s, move, exc in attempts:
        with pytest.raises(exc):
            state.apply(s, move)
        assert state.to_dict() == before, move


def check_timeout_move(state: State, seat: int, moves: list[dict]) -> None:
    """The timeout policy picks a listed move, always the same one, and the engine takes it."""
    move = state.timeout_move(seat)
    assert move in moves and state.timeout_move(seat) == move
    if state.phase == "PHASE_BUILD":
        assert move == {"end_turn": {}}
    copy = State.from_dict(state.to_dict())
    assert any(e.to is None for e in copy.apply(seat, move))


def hex_distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    dq, dr = a[0] - b[0], a[1] - b[1]
    return (abs(dq) + abs(dr) + abs(dq + dr)) // 2


def all_legal_moves_accepted(state: State, seat: int, moves: list[dict]) -> None:
    """Every listed move is accepted, and every move the engine accepts is listed once (issue 9):
    every pair of neighbouring tiles, every pawn tile and every city is tried on a copy."""
    snapshot = state.to_dict()
    for move in moves:
        copy = State.from_dict(snapshot)
        copy.apply(seat, move)
    n = len(state.tiles)
    candidates: list[dict] = [{"undo_stick": {}}, {"build_route": {}}, {"end_turn": {}}]
    candidates += [{kind: {"tile": t}} for kind in ("place_pawn", "move_pawn") for t in range(n)]
    candidates += [{"predict": {"cities": [c]}} for c in state.cities]
    cells = [(t["q"], t["r"]) for t in state.tiles]
    near = [(a, p) for a in range(n) for p in range(n) if hex_distance(cells[a], cells[p]) == 1]
    candidates += [{"lay_stick": {"anchor": a, "paid": p}} for a, p in near]
    accepted = []
    for move in candidates:
        try:
            State.from_dict(snapshot).apply(seat, move)
        except MoveError:
            continue
        accepted.append(move)
    key = lambda m: json.dumps(m, sort_keys=True)  # noqa: E731
    assert sorted(map(key, accepted)) == sorted(map(key, moves))
    assert len(set(map(key, moves))) == len(moves)
    assert state.to_dict() == snapshot


def check_blocks(state: State) -> None:
    """Cheap conservation after every move: 14 blocks per colour, pawns apart."""
    for ci, color in enumerate(COLORS):
        on_board = sum(b for b, t in zip(state.blocks, state.tiles, strict=True) if t["terrain"] == color)
        assert on_board + sum(h[ci] for h in state.hands) + state.spent[ci] + state.box[ci] == 14
    placed = [p for p in state.pawns if p >= 0]
    assert len(placed) == len(set(placed))


def play(players: int, seed: int, options: dict, checks: bool = True, heavy: bool = False):
    """Play a seeded match to the end. With ``checks``: conservation after every move, every
    invariant (recounts, round trip) after every route and every 10th move, all views and
    refused moves every 15th; ``heavy`` also tries every legal move on a copy every 3rd move."""
    state = State.new(players, seed, options)
    opening = state.opening_events()
    assert [e.to for e in opening] == [None]
    assert opening[0].body["board_set_up"]["tiles"] == state.view(None)["tiles"]
    rnd = random.Random(seed * 7 + 1)
    player = Player(random.Random(seed * 7 + 2))
    history: list[tuple[int, dict]] = []
    for step in range(6000):
        if state.is_over():
            break
        if checks:
            check_blocks(state)
            if step % 10 == 0 or (history and "build_route" in history[-1][1]):
                check_invariants(state)
        seat = rnd.choice(state.active_seats())
        moves = state.legal_moves(seat)
        assert moves, (seed, state.phase)
        if checks:
            if step % 15 == 0:
                try_illegal(state, seat, moves, rnd)
                for s in [None, *range(players)]:
                    check_view(state, s)
            if heavy and step % 3 == 0:
                all_legal_moves_accepted(state, seat, moves)
        if checks and step % 5 == 0:
            check_timeout_move(state, seat, moves)
        move = player.choose(state, seat, moves)
        events = state.apply(seat, json.loads(json.dumps(move)))
        # every committed move tells every watcher something (issue 14)
        assert any(e.to is None for e in events), move
        if checks:
            check_events(events, seat, state)
        history.append((seat, move))
    assert state.is_over(), f"seed {seed} did not finish"
    return state, history


@pytest.mark.parametrize("players", [2, 3, 4])
def test_playouts_finish_with_everything_accounted_for(players):
    ends = {"END_REASON_BLOCKS_EXHAUSTED": 0, "END_REASON_HOUSES_EXHAUSTED": 0}
    for p, seed, options in configs():
        if p != players:
            continue
        state, _ = play(p, seed, options, heavy=seed % HEAVY_EVERY == 0)
        check_invariants(state)
        for s in [None, *range(players)]:
            check_view(state, s)
        assert state.active_seats() == [] and all(state.legal_moves(s) == [] for s in range(players))
        ends[state.end_reason] += 1
        # winners
        winners = state.winners()
        assert winners
        if state.end_reason == "END_REASON_HOUSES_EXHAUSTED":
            assert len(winners) == 1
            assert sum(state.house_points(winners[0]).values()) == house_supply(players)
        else:
            assert any(
                sum(state.blocks[i] for i, t in enumerate(state.tiles) if t["terrain"] == c) == 0
                for c in COLORS
            )
            keys = [
                (
                    sc,
                    len(board_points(state, s)),
                    sum(st[0] == s for st in state.sticks),
                    sum(board_points(state, s).values()),
                )
                for s, sc in enumerate(recount_scores(state))
            ]
            assert winners == [s for s, k in enumerate(keys) if k == max(keys)]
        with pytest.raises(RuleViolation):
            state.apply(0, {"end_turn": {}})
    # the builder-minded random players reach both endings at every player count
    assert ends["END_REASON_BLOCKS_EXHAUSTED"] > 0 and ends["END_REASON_HOUSES_EXHAUSTED"] > 0


def test_same_seed_and_moves_give_the_same_match():
    for players, seed, options in list(configs())[:6]:
        state, history = play(players, seed, options, checks=False)
        replay = State.new(players, seed, options)
        for seat, move in history:
            replay.apply(seat, move)
        assert replay == state and replay.to_dict() == state.to_dict()
        again, history2 = play(players, seed, options, checks=False)
        assert history2 == history and again == state


def test_refused_moves_change_nothing_midgame():
    _, history = play(4, 3, {}, checks=False)
    replay = State.new(4, 3, {})
    rnd = random.Random(5)
    for seat, move in history[: len(history) // 2]:
        replay.apply(seat, move)
    active = replay.active_seats()[0]
    before = replay.to_dict()
    for move in (
        {"lay_stick": {"anchor": 0, "paid": 0}},
        {"place_pawn": {"tile": 0}},
        {"predict": {"cities": [replay.cities[0]]}},
        {"build_route": {}} if not replay.pending else {"place_pawn": {"tile": 1}},
    ):
        with pytest.raises(MoveError):
            replay.apply(active, move)
        assert replay.to_dict() == before
    other = (active + 1 + rnd.randrange(3)) % 4
    with pytest.raises(NotYourTurn):
        replay.apply(other, {"end_turn": {}})
    assert replay.to_dict() == before


def test_game_info():
    assert GAME.name == "morisi" and GAME.package == "morisi" and GAME.service == "Morisi"
    assert GAME.full_service == "mogames.morisi.v1.Morisi"


def test_a_state_played_on_lists_what_a_fresh_copy_lists():
    """The move generator follows the turn stick by stick and undo by undo (services/morisi/
    network.py): whatever the sticks laid and taken back, the live state lists the moves, and
    finds the route problem, that a copy decoded from its stored form works out from scratch."""
    for players, seed in ((2, 11), (3, 12), (4, 13)):
        state = State.new(players, seed, {})
        rnd = random.Random(seed)
        for _ in range(1500):
            if state.is_over():
                break
            seat = rnd.choice(state.active_seats())
            moves = state.legal_moves(seat)
            fresh = State.from_dict(state.to_dict())
            assert moves == fresh.legal_moves(seat)
            if state.phase == "PHASE_BUILD":
                problem, fresh_problem = state.route_problem(), fresh.route_problem()
                assert (problem and (problem.rule, problem.message)) == (
                    fresh_problem and (fresh_problem.rule, fresh_problem.message)
                )
                # the counts kept per stick agree with the check worked out from the sticks
                assert ({"build_route": {}} in moves) == (problem is None)
            undo = {"undo_stick": {}}
            move = undo if undo in moves and rnd.random() < 0.3 else rnd.choice(moves)
            state.apply(seat, move)
