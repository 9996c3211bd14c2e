"""Hand-built positions for every Morisi rule (issue 5's acceptance list)."""

from __future__ import annotations

import json

import pytest

from services.engine import BadOptions, MalformedMove, NotYourTurn, RuleViolation
from services.morisi import board
from services.morisi.rules import GAME, State
from services.morisi.scoring import (
    board_scores,
    house_supply,
    prediction_points,
    scoring_cities,
    tiebreak_winners,
)
from tests.engine_checks import refused as unchanged
from tests.morisi.positions import hand_built

Y, O, R, G, B, C = (  # noqa: E741
    "TERRAIN_YELLOW",
    "TERRAIN_ORANGE",
    "TERRAIN_RED",
    "TERRAIN_GREEN",
    "TERRAIN_BLUE",
    "TERRAIN_CITY",
)

# The "street": a row of tiles with a few below it.
#   index: 0 A(city) 1 Y 2 B(city) 3 O 4 R 5 C(city) 6 G 7 D(city) 8 E(city)   (row r=0, q=0..8)
#          9 blue (0,1): next to 0, 1, 10;  10 blue (1,1): next to 1, 2, 9;  11 yellow (3,1): next to 3, 4
#          12 F(city) (4,-1): next to 3 and 4
STREET = [
    (0, 0, C),
    (1, 0, Y),
    (2, 0, C),
    (3, 0, O),
    (4, 0, R),
    (5, 0, C),
    (6, 0, G),
    (7, 0, C),
    (8, 0, C),
    (0, 1, B),
    (1, 1, B),
    (3, 1, Y),
    (4, -1, C),
]
A_, Y1, B_, O3, R4, C_, G6, D_, E_, BL9, BL10, Y11, F_ = range(13)
# one block on every land tile, so no colour runs out unless a test wants it to
STREET_BLOCKS = [0 if t[2] == C else 1 for t in STREET]


def street(players: int = 3, **fields) -> State:
    fields.setdefault("blocks", list(STREET_BLOCKS))
    fields.setdefault("phase", "PHASE_BUILD")
    fields.setdefault("pawns", [Y11, D_, E_, G6][:players])
    return hand_built(players, STREET, **fields)


def hand(**colors: int) -> list[int]:
    return [colors.get(c, 0) for c in ("Y", "O", "R", "G", "B")]


def lay(anchor: int, paid: int) -> dict:
    return {"lay_stick": {"anchor": anchor, "paid": paid}}


BUILD = {"build_route": {}}
END = {"end_turn": {}}
UNDO = {"undo_stick": {}}


# ---------------------------------------------------------------- the map


def test_tile_sets_per_player_count():
    for players, cities, per_color, circled in ((2, 8, 5, 1), (3, 9, 6, 2), (4, 9, 6, 2)):
        tiles = board.tile_set(players)
        assert sum(t == C for t, _ in tiles) == cities
        for color in board.COLORS:
            assert sum(t == color for t, _ in tiles) == per_color
            assert sum(t == color and c for t, c in tiles) == circled
        assert len(tiles) == cities + 5 * per_color


def test_presets_follow_the_layout_rules():
    for players in (2, 3, 4):
        for name in ("hexagon", "rows"):
            cells = board.preset_shape(name, players)
            assert len(cells) == len(board.tile_set(players))
            board.check_shape(cells, players, allow_holes=False)
            state = State.new(players, 5, {"layout": name})
            assert len(state.tiles) == len(cells)
        lakes = board.preset_shape("lakes", players)
        assert board.holes(lakes)
        board.check_shape(lakes, players, allow_holes=True)
        with pytest.raises(BadOptions) as info:
            State.new(players, 5, {"layout": "lakes"})
        assert info.value.rule == "layout.holes"
        assert len(State.new(players, 5, {"layout": "lakes", "allow_holes": True}).tiles) == len(lakes)


def test_random_layouts_always_follow_the_rules():
    for players in (2, 3, 4):
        for allow_holes in (False, True):
            for seed in range(35):
                state = State.new(players, seed, {"allow_holes": allow_holes})
                cells = [(t["q"], t["r"]) for t in state.tiles]
                kinds = sorted((t["terrain"], t["circled"]) for t in state.tiles)
                assert kinds == sorted(board.tile_set(players))
                board.check_shape(cells, players, allow_holes)
                if allow_holes:
                    assert len(board.holes(set(cells))) == board.HOLES_IN_RANDOM_LAYOUT
                else:
                    assert board.holes(set(cells)) == []
                    assert len(board.boundary(set(cells))) <= board.boundary_limit(players)


def test_random_layout_is_seeded():
    assert State.new(3, 7, {}).tiles == State.new(3, 7, {}).tiles
    assert State.new(3, 7, {}).tiles != State.new(3, 8, {}).tiles


def test_layout_rule_connected_names_the_tile():
    cells = board.hexagon(2) | {(10, 0), (11, 0), (10, 1), (11, -1)}
    with pytest.raises(board.LayoutError) as info:
        board.check_shape(cells, 3, False)
    assert info.value.rule == "layout.connected"
    assert "(10, 0)" in info.value.message


def test_layout_rule_three_neighbours_names_the_tile():
    cells = board.hexagon(3) | {(4, 0)}  # touches only the corner (3, 0)
    with pytest.raises(board.LayoutError) as info:
        board.check_shape(cells, 3, False)
    assert info.value.rule == "layout.min_neighbours"
    assert "(4, 0)" in info.value.message
    two = board.hexagon(3) | {(4, -1)}  # touches (3, -1) and (3, 0): two are not enough
    with pytest.raises(board.LayoutError) as info:
        board.check_shape(two, 3, False)
    assert info.value.rule == "layout.min_neighbours" and "has 2" in info.value.message
    board.check_shape(board.hexagon(3) | {(4, -1), (4, -2)}, 3, False)  # three each: fine


def test_layout_rule_boundary_limit_and_the_holes_variant_lifts_it():
    widths, top = (4, 12, 12, 11), 1
    cells = {(-min(r, top) + i, r) for r, w in enumerate(widths) for i in range(w)}
    assert len(cells) == 39 and len(board.boundary(cells)) == 26
    with pytest.raises(board.LayoutError) as info:
        board.check_shape(cells, 3, False)
    assert info.value.rule == "layout.boundary"
    board.check_shape(cells, 3, True)  # the variant has no boundary limit
    # 22 boundary tiles: fine with 3-4 players, one too many with 2
    widths = (4, 10, 10, 9)
    cells = {(-min(r, top) + i, r) for r, w in enumerate(widths) for i in range(w)}
    assert len(cells) == 33 and len(board.boundary(cells)) == 22
    board.check_shape(cells, 3, False)
    with pytest.raises(board.LayoutError) as info:
        board.check_shape(cells, 2, False)
    assert info.value.rule == "layout.boundary"


def test_layout_rule_no_holes_without_the_variant():
    cells = board.hexagon(3) - {(0, 0)}
    with pytest.raises(board.LayoutError) as info:
        board.check_shape(cells, 3, False)
    assert info.value.rule == "layout.holes"
    assert "(0, 0)" in info.value.message
    board.check_shape(cells, 3, True)


def custom_tiles(players: int, seed: int = 1) -> list[dict]:
    return [
        {"q": t["q"], "r": t["r"], "terrain": t["terrain"], "circled": t["circled"]}
        for t in State.new(players, seed, {"layout": "hexagon"}).tiles
    ]


def test_custom_layout_is_used_as_given():
    tiles = custom_tiles(3)
    tiles.reverse()
    state = State.new(3, 99, {"layout": "custom", "custom_tiles": tiles})
    got = sorted((t["q"], t["r"], t["terrain"], t["circled"]) for t in state.tiles)
    assert got == sorted((t["q"], t["r"], t["terrain"], t["circled"]) for t in tiles)
    # empty layout name with custom tiles means custom
    assert State.new(3, 99, {"layout": "", "custom_tiles": tiles}).tiles == state.tiles


def test_custom_layout_errors_name_rule_and_tile():
    tiles = custom_tiles(3)
    cut = [dict(t) for t in tiles]
    far = next(t for t in cut if (t["q"], t["r"]) == (4, -1))
    far["q"], far["r"] = 9, 9
    with pytest.raises(BadOptions) as info:
        State.new(3, 1, {"layout": "custom", "custom_tiles": cut})
    assert info.value.rule == "layout.connected" and "(9, 9)" in info.value.message

    wrong_set = [dict(t) for t in tiles]
    city = next(t for t in wrong_set if t["terrain"] == C)
    city["terrain"] = Y
    with pytest.raises(BadOptions) as info:
        State.new(3, 1, {"layout": "custom", "custom_tiles": wrong_set})
    assert info.value.rule == "layout.tile_set"

    with pytest.raises(BadOptions) as info:  # the 3-player set is not the 2-player set
        State.new(2, 1, {"layout": "custom", "custom_tiles": tiles})
    assert info.value.rule == "layout.tile_set"

    dup = [dict(t) for t in tiles]
    dup[1]["q"], dup[1]["r"] = dup[0]["q"], dup[0]["r"]
    with pytest.raises(BadOptions) as info:
        State.new(3, 1, {"layout": "custom", "custom_tiles": dup})
    assert info.value.rule == "layout.duplicate_tile"

    circled_city = [dict(t) for t in tiles]
    next(t for t in circled_city if t["terrain"] == C)["circled"] = True
    with pytest.raises(BadOptions) as info:
        State.new(3, 1, {"layout": "custom", "custom_tiles": circled_city})
    assert info.value.rule == "layout.circled_city"


def test_bad_options_are_refused():
    for options, rule in (
        ({"colour": 1}, "options.colour"),
        ({"layout": "moon"}, "options.layout"),
        ({"layout": "custom"}, "options.custom_tiles"),
        ({"layout": "hexagon", "custom_tiles": custom_tiles(3)}, "options.custom_tiles"),
        ({"allow_holes": "yes"}, "options.allow_holes"),
        ({"prediction": 1}, "options.prediction"),
        (
            {"custom_tiles": [{"q": 0, "r": 0, "terrain": "LAVA", "circled": False}]},
            "options.custom_tiles[0].terrain",
        ),
    ):
        with pytest.raises(BadOptions) as info:
            State.new(3, 1, options)
        assert info.value.rule == rule
    with pytest.raises(BadOptions):
        State.new(5, 1, {})
    with pytest.raises(BadOptions):
        State.new(1, 1, {})
    assert GAME.min_players == 2 and GAME.max_players == 4
    assert [o.name for o in GAME.options] == ["layout", "custom_tiles", "allow_holes", "prediction"]


# ---------------------------------------------------------------- blocks and pawns


@pytest.mark.parametrize(
    ("players", "unmarked", "circled", "per_color"), [(2, 2, 1, 9), (3, 2, 2, 12), (4, 3, 1, 14)]
)
def test_blocks_per_player_count(players, unmarked, circled, per_color):
    state = State.new(players, 3, {})
    for color_i, color in enumerate(board.COLORS):
        on = [state.blocks[i] for i, t in enumerate(state.tiles) if t["terrain"] == color]
        assert sorted(on) == sorted(
            circled if t["circled"] else unmarked for t in state.tiles if t["terrain"] == color
        )
        assert sum(on) == per_color
        assert state.box[color_i] == 14 - per_color
    assert all(state.blocks[i] == 0 for i in state.cities)


def test_pawn_placement_in_turn_order_from_the_starting_seat():
    state = State.new(3, 11, {})
    start = state.start
    assert state.phase == "PHASE_PLACE" and state.active_seats() == [start]
    land = next(i for i, t in enumerate(state.tiles) if t["terrain"] != C)
    city = state.cities[0]
    events = state.apply(start, {"place_pawn": {"tile": land}})
    assert events[0].body == {"pawn_placed": {"seat": start, "tile": land, "took_block": True}}
    assert sum(state.hands[start]) == 1
    second = (start + 1) % 3
    assert state.active_seats() == [second]
    unchanged(state, second, {"place_pawn": {"tile": land}}, RuleViolation, "pawn_occupied")
    unchanged(state, start, {"place_pawn": {"tile": city}}, NotYourTurn, "not_your_turn")
    state.apply(second, {"place_pawn": {"tile": city}})
    assert sum(state.hands[second]) == 0  # nothing on a city
    third = (start + 2) % 3
    state.apply(third, state.legal_moves(third)[0])
    assert state.phase == "PHASE_MOVE" and state.active_seats() == [start]


def test_starting_seat_is_drawn_from_the_seed():
    starts = {State.new(players, seed, {}).start for players in (3, 4) for seed in range(12)}
    assert starts == {0, 1, 2, 3}
    for seed in range(6):
        state = State.new(4, seed, {})
        assert state.active_seats() == [state.start] == [state.turn]
        order = []
        while state.phase == "PHASE_PLACE":
            (seat,) = state.active_seats()
            order.append(seat)
            state.apply(seat, state.legal_moves(seat)[0])
        assert order == [(state.start + i) % 4 for i in range(4)]
        assert state.phase == "PHASE_MOVE" and state.active_seats() == [state.start]


LINE = [(q, 0, Y if q % 2 else O) for q in range(6)]  # 0..5 along one straight line


def test_pawn_moves_to_a_neighbour_and_must_move():
    state = hand_built(2, LINE, blocks=[1] * 6, pawns=[2, 5], phase="PHASE_MOVE")
    assert state.legal_moves(0) == [{"move_pawn": {"tile": 1}}, {"move_pawn": {"tile": 3}}]
    unchanged(state, 0, {"move_pawn": {"tile": 2}}, RuleViolation, "pawn_move")  # staying
    unchanged(state, 0, {"move_pawn": {"tile": 0}}, RuleViolation, "pawn_move")  # too far
    state.apply(0, {"move_pawn": {"tile": 3}})
    assert state.pawns[0] == 3 and state.phase == "PHASE_BUILD"


def test_pawn_jumps_over_one_pawn():
    state = hand_built(2, LINE, blocks=[1] * 6, pawns=[0, 1], phase="PHASE_MOVE")
    assert state.legal_moves(0) == [{"move_pawn": {"tile": 2}}]
    events = state.apply(0, {"move_pawn": {"tile": 2}})
    assert events[0].body["pawn_moved"] == {
        "seat": 0,
        "from_tile": 0,
        "to_tile": 2,
        "jumped": [1],
        "took_block": True,
    }


def test_pawn_jumps_over_two_pawns_in_a_straight_line():
    state = hand_built(3, LINE, blocks=[1] * 6, pawns=[0, 1, 2], phase="PHASE_MOVE")
    assert state.legal_moves(0) == [{"move_pawn": {"tile": 3}}]
    events = state.apply(0, {"move_pawn": {"tile": 3}})
    assert events[0].body["pawn_moved"]["jumped"] == [1, 2]


def test_jump_off_the_board_or_into_a_hole_is_no_move():
    # a pawn at 4, the mover at 5 facing the edge: west jumps over 4 to 3
    state = hand_built(2, LINE, blocks=[1] * 6, pawns=[5, 4], phase="PHASE_MOVE")
    assert state.legal_moves(0) == [{"move_pawn": {"tile": 3}}]
    # the mover at 4 with a pawn at 5: east would leave the board after 5
    state = hand_built(2, LINE, blocks=[1] * 6, pawns=[4, 5], phase="PHASE_MOVE")
    assert state.legal_moves(0) == [{"move_pawn": {"tile": 3}}]
    unchanged(state, 0, {"move_pawn": {"tile": 5}}, RuleViolation, "pawn_move")
    # an empty space stops a jump: tiles 0, 1, 3 (no 2)
    holed = [LINE[0], LINE[1], LINE[3]]
    state = hand_built(2, holed, blocks=[1, 1, 1], pawns=[0, 1], phase="PHASE_MOVE")
    assert state.destinations(0) == []


def test_blocked_pawn_skips_the_move_and_may_still_build():
    three = LINE[:3]
    state = hand_built(3, three, blocks=[1, 1, 1], pawns=[0, 1, 2], phase="PHASE_BUILD", turn=2)
    events = state.apply(2, END)
    assert [next(iter(e.body)) for e in events] == ["turn_ended", "pawn_blocked"]
    assert events[1].body == {"pawn_blocked": {"seat": 0, "tile": 0}}
    assert state.phase == "PHASE_BUILD" and state.active_seats() == [0]
    assert END in state.legal_moves(0)
    unchanged(state, 0, {"move_pawn": {"tile": 1}}, RuleViolation, "phase")


def test_block_pickup_on_land_only_while_blocks_remain():
    tiles = [(0, 0, C), (1, 0, Y), (2, 0, O), (3, 0, R)]
    state = hand_built(2, tiles, blocks=[0, 2, 0, 1], pawns=[1, 3], phase="PHASE_MOVE")
    state.apply(0, {"move_pawn": {"tile": 0}})  # city: nothing
    assert state.hands[0] == hand()
    state = hand_built(2, tiles, blocks=[0, 2, 0, 1], pawns=[0, 3], phase="PHASE_MOVE")
    events = state.apply(0, {"move_pawn": {"tile": 1}})
    assert state.hands[0] == hand(Y=1) and state.blocks[1] == 1
    assert events[0].body["pawn_moved"]["took_block"] is True
    state = hand_built(2, tiles, blocks=[0, 2, 0, 1], pawns=[1, 3], phase="PHASE_MOVE")
    events = state.apply(0, {"move_pawn": {"tile": 2}})  # orange tile is empty
    assert state.hands[0] == hand() and events[0].body["pawn_moved"]["took_block"] is False


# ---------------------------------------------------------------- sticks


def test_stick_from_a_city_pays_the_land_end():
    state = street(hands=[hand(Y=1), hand(), hand()])
    events = state.apply(0, lay(A_, Y1))
    assert events[0].body == {"stick_laid": {"seat": 0, "anchor": A_, "paid": Y1, "cost": 1, "color": Y}}
    assert state.hands[0] == hand() and state.spent == hand(Y=1) and state.pending == [[A_, Y1, 1]]


def test_stick_anchor_must_be_a_city_or_own_network():
    state = street(hands=[hand(O=1, R=1), hand(), hand()])
    unchanged(state, 0, lay(O3, R4), RuleViolation, "stick_anchor")
    assert lay(O3, R4) not in state.legal_moves(0)
    # another player's stick is no anchor
    state = street(hands=[hand(O=1, R=1), hand(), hand()], sticks=[[1, B_, O3]])
    unchanged(state, 0, lay(O3, R4), RuleViolation, "stick_anchor")
    # a stick laid earlier this turn is an anchor
    state = street(hands=[hand(O=1, R=1), hand(), hand()])
    state.apply(0, lay(B_, O3))
    assert lay(O3, R4) in state.legal_moves(0)
    state.apply(0, lay(O3, R4))
    assert state.pending == [[B_, O3, 1], [O3, R4, 1]]


def test_no_city_to_city_stick_and_the_paid_end_is_land():
    state = street(hands=[hand(Y=2), hand(), hand()])
    unchanged(state, 0, lay(D_, E_), RuleViolation, "stick_city_city")
    state.apply(0, lay(A_, Y1))
    unchanged(state, 0, lay(Y1, B_), RuleViolation, "stick_paid_land")
    unchanged(state, 0, lay(A_, O3), RuleViolation, "stick_adjacent")
    assert all(m["lay_stick"]["paid"] not in state.cities for m in state.legal_moves(0) if "lay_stick" in m)


def test_payer_chooses_the_paid_end_when_both_could_anchor():
    state = street(hands=[hand(O=1, R=1), hand(), hand()], sticks=[[0, B_, O3], [0, R4, C_]])
    moves = state.legal_moves(0)
    assert lay(O3, R4) in moves and lay(R4, O3) in moves
    a = State.from_dict(state.to_dict())
    a.apply(0, lay(O3, R4))
    assert a.hands[0] == hand(O=1)  # paid red
    b = State.from_dict(state.to_dict())
    b.apply(0, lay(R4, O3))
    assert b.hands[0] == hand(R=1)  # paid orange


def test_parallel_sticks_cost_k_plus_one():
    state = street(4, hands=[hand(Y=3), hand(), hand(), hand()], sticks=[[1, A_, Y1]])
    events = state.apply(0, lay(A_, Y1))
    assert events[0].body["stick_laid"]["cost"] == 2 and state.hands[0] == hand(Y=1)
    state = street(4, hands=[hand(Y=3), hand(), hand(), hand()], sticks=[[1, A_, Y1], [2, A_, Y1]])
    state.apply(0, lay(A_, Y1))
    assert state.pending == [[A_, Y1, 3]] and state.hands[0] == hand()
    # the doubled penalty is paid per parallel stick of the route
    state = street(4, hands=[hand(Y=4), hand(), hand(), hand()], sticks=[[1, A_, Y1], [1, B_, Y1]])
    state.apply(0, lay(A_, Y1))
    state.apply(0, lay(B_, Y1))
    assert [p[2] for p in state.pending] == [2, 2]
    # and must be affordable
    state = street(4, hands=[hand(Y=2), hand(), hand(), hand()], sticks=[[1, A_, Y1], [2, A_, Y1]])
    unchanged(state, 0, lay(A_, Y1), RuleViolation, "stick_blocks")
    assert lay(A_, Y1) not in state.legal_moves(0)


def test_no_parallel_sticks_with_two_players():
    state = street(2, hands=[hand(Y=3), hand()], sticks=[[1, A_, Y1]])
    unchanged(state, 0, lay(A_, Y1), RuleViolation, "stick_parallel")
    assert lay(A_, Y1) not in state.legal_moves(0)
    assert lay(B_, Y1) in state.legal_moves(0)


def test_no_second_own_stick_between_the_same_tiles():
    state = street(hands=[hand(Y=3, O=2, R=2), hand(), hand()], sticks=[[0, A_, Y1]])
    unchanged(state, 0, lay(A_, Y1), RuleViolation, "stick_duplicate")
    state.apply(0, lay(B_, O3))
    state.apply(0, lay(O3, R4))
    unchanged(state, 0, lay(R4, O3), RuleViolation, "stick_duplicate")  # a pending stick counts too


def test_stick_needs_a_block_of_the_paid_colour():
    state = street(hands=[hand(O=3), hand(), hand()])
    unchanged(state, 0, lay(A_, Y1), RuleViolation, "stick_blocks")


def test_undo_and_end_turn_return_the_blocks():
    state = street(hands=[hand(Y=2), hand(), hand()])
    state.apply(0, lay(A_, Y1))
    state.apply(0, lay(B_, Y1))
    events = state.apply(0, UNDO)
    assert events[0].body == {"stick_undone": {"seat": 0, "anchor": B_, "paid": Y1, "refund": 1}}
    assert state.hands[0] == hand(Y=1) and state.pending == [[A_, Y1, 1]]
    events = state.apply(0, END)
    assert events[0].body == {"turn_ended": {"seat": 0, "discarded": 1, "next_seat": 1}}
    assert state.hands[0] == hand(Y=2) and state.spent == hand() and state.sticks == []
    unchanged(state, 1, UNDO, RuleViolation, "phase")


# ---------------------------------------------------------------- trade routes and houses


def test_route_city_to_city_gives_a_house_in_each():
    state = street(hands=[hand(Y=2), hand(), hand()])
    state.apply(0, lay(A_, Y1))
    assert BUILD not in state.legal_moves(0)  # a dead end so far
    state.apply(0, lay(B_, Y1))
    assert BUILD in state.legal_moves(0)
    events = state.apply(0, BUILD)
    assert events[0].body["route_built"] == {
        "seat": 0,
        "sticks": [
            {"seat": 0, "a": A_, "b": Y1, "paid": Y1, "cost": 1},
            {"seat": 0, "a": Y1, "b": B_, "paid": Y1, "cost": 1},
        ],
        "houses": [{"city": A_, "points": 1}, {"city": B_, "points": 1}],
        "house_points": 2,
        "houses_left": 29,
    }
    assert state.house_points(0) == {A_: 1, B_: 1}
    assert state.sticks == [[0, A_, Y1, Y1, 1], [0, Y1, B_, Y1, 1]]
    # building ends the turn: one route per turn
    assert state.phase == "PHASE_MOVE" and state.active_seats() == [1]


def test_route_must_be_connected_but_sticks_go_down_in_any_order():
    state = street(hands=[hand(Y=1, O=2, R=2), hand(), hand()])
    state.apply(0, lay(A_, Y1))
    state.apply(0, lay(C_, R4))
    unchanged(state, 0, BUILD, RuleViolation, "route_connected")
    state.apply(0, lay(B_, O3))
    state.apply(0, lay(R4, O3))
    unchanged(state, 0, BUILD, RuleViolation, "route_connected")  # A-Y still apart from B-O-R-C
    assert BUILD not in state.legal_moves(0)
    state = street(hands=[hand(Y=2, O=2, R=1), hand(), hand()])
    for move in (lay(C_, R4), lay(A_, Y1), lay(B_, Y1), lay(R4, O3), lay(B_, O3)):
        state.apply(0, move)
    state.apply(0, BUILD)
    assert state.house_points(0) == {A_: 2, B_: 2, C_: 2}


def test_route_may_not_end_in_a_dead_end():
    state = street(hands=[hand(O=1, Y=2, B=1), hand(), hand()])
    state.apply(0, lay(B_, O3))
    unchanged(state, 0, BUILD, RuleViolation, "route_dead_end")
    state.apply(0, UNDO)
    # a branch into the countryside is a dead end too
    state.apply(0, lay(A_, Y1))
    state.apply(0, lay(B_, Y1))
    state.apply(0, lay(Y1, BL10))
    unchanged(state, 0, BUILD, RuleViolation, "route_dead_end")
    assert BUILD not in state.legal_moves(0)
    state.apply(0, UNDO)
    state.apply(0, BUILD)


def test_route_may_end_on_a_land_tile_of_own_network():
    # network B-O-R-C; the one-stick route F-O ends on O, a tile of the network: F joins B and C
    sticks = [[0, B_, O3], [0, O3, R4], [0, R4, C_]]
    state = street(hands=[hand(O=1), hand(), hand()], sticks=sticks)
    state.apply(0, lay(F_, O3))
    assert BUILD in state.legal_moves(0)
    state.apply(0, BUILD)
    assert state.house_points(0) == {B_: 2, C_: 2, F_: 2}


def test_route_must_add_a_house():
    # A and B are already connected: a second connection between them adds no house
    state = street(hands=[hand(B=2), hand(), hand()], sticks=[[0, A_, Y1], [0, Y1, B_]])
    state.apply(0, lay(A_, BL9))
    state.apply(0, lay(Y1, BL9))  # Y1 is on the network: a valid anchor and a valid route end
    unchanged(state, 0, BUILD, RuleViolation, "route_no_house")
    assert BUILD not in state.legal_moves(0)


def test_rulebook_example_city_joins_an_existing_route():
    # Zoe (A) - War (B) connected; Maa (C) connects to B: A, B get one more, C gets two
    state = street(hands=[hand(O=1, R=2), hand(), hand()], sticks=[[0, A_, Y1], [0, Y1, B_]])
    for move in (lay(B_, O3), lay(O3, R4), lay(C_, R4)):
        state.apply(0, move)
    events = state.apply(0, BUILD)
    assert state.house_points(0) == {A_: 2, B_: 2, C_: 2}
    assert events[0].body["route_built"]["houses"] == [
        {"city": A_, "points": 2},
        {"city": B_, "points": 2},
        {"city": C_, "points": 2},
    ]


def test_merging_two_networks():
    sticks = [[0, A_, Y1], [0, Y1, B_], [0, C_, G6], [0, G6, D_]]
    state = street(hands=[hand(O=1, R=2), hand(), hand()], sticks=sticks)
    assert state.house_points(0) == {A_: 1, B_: 1, C_: 1, D_: 1}
    for move in (lay(B_, O3), lay(O3, R4), lay(C_, R4)):
        state.apply(0, move)
    state.apply(0, BUILD)
    assert state.house_points(0) == {A_: 3, B_: 3, C_: 3, D_: 3}
    assert state.view(None)["players"][0]["house_points"] == 12


def test_other_players_networks_do_not_connect_yours():
    sticks = [[1, A_, Y1], [1, Y1, B_]]
    state = street(hands=[hand(Y=1, B=2), hand(), hand()], sticks=sticks)
    state.apply(0, lay(A_, BL9))
    unchanged(state, 0, lay(Y1, BL9), RuleViolation, "stick_anchor")


# A chain of 7 cities joined by 6 land tiles: city 2k at q=2k, land between them.
CHAIN = [(q, 0, C if q % 2 == 0 else (Y, O, R, G, B, Y)[q // 2]) for q in range(13)]


def test_exhausting_the_house_supply_wins_at_once():
    assert house_supply(2) == 33 and house_supply(3) == house_supply(4) == 31
    sticks = []
    for land in (1, 3, 5, 7, 9):  # cities 0..10: six cities -> 6 x 5 = 30 house-points
        sticks += [[0, land - 1, land], [0, land, land + 1]]
    blocks = [0 if t[2] == C else 1 for t in CHAIN]
    state = hand_built(
        3,
        CHAIN,
        blocks=blocks,
        sticks=sticks,
        hands=[hand(Y=2), hand(), hand()],
        pawns=[1, 3, 5],
        phase="PHASE_BUILD",
    )
    assert sum(state.house_points(0).values()) == 30
    assert state.view(0)["players"][0]["houses_left"] == 1
    state.apply(0, lay(10, 11))
    state.apply(0, lay(12, 11))
    events = state.apply(0, BUILD)
    assert state.is_over() and state.end_reason == "END_REASON_HOUSES_EXHAUSTED"
    assert state.winners() == [0]
    assert events[-1].body["game_over"]["winners"] == [0]
    assert events[-1].body["game_over"]["reason"] == "END_REASON_HOUSES_EXHAUSTED"
    assert state.view(1)["players"][0]["houses_left"] == 0
    assert state.active_seats() == [] and state.legal_moves(0) == []
    unchanged(state, 0, END, RuleViolation, "game_over")


# ---------------------------------------------------------------- end and scoring


def test_taking_the_last_block_of_a_colour_ends_after_the_turn_and_builder_still_builds():
    blocks = list(STREET_BLOCKS)
    blocks[Y11] = 0  # the only yellow left is on Y1
    state = street(blocks=blocks, pawns=[A_, C_, D_], phase="PHASE_MOVE", hands=[hand(Y=1), hand(), hand()])
    state.apply(0, {"move_pawn": {"tile": Y1}})
    assert not state.is_over() and state.phase == "PHASE_BUILD" and state.hands[0] == hand(Y=2)
    assert state.blocks[Y1] == 0
    state.apply(0, lay(A_, Y1))
    snapshot = State.from_dict(state.to_dict())
    events = state.apply(0, END)
    assert state.is_over() and state.end_reason == "END_REASON_BLOCKS_EXHAUSTED"
    assert [next(iter(e.body)) for e in events] == ["turn_ended", "game_over"]
    # building the route in that turn is allowed too
    snapshot.apply(0, lay(B_, Y1))
    snapshot.apply(0, BUILD)
    assert snapshot.is_over() and snapshot.house_points(0) == {A_: 1, B_: 1}


def test_top_three_cities_with_ties_at_the_cut():
    totals = {1: 17, 2: 14, 3: 14, 4: 14, 5: 10, 6: 0}
    assert scoring_cities(totals, 3) == [1, 2, 3, 4]
    assert scoring_cities({1: 9, 2: 8, 3: 7, 4: 6}, 3) == [1, 2, 3]
    assert scoring_cities({1: 9, 2: 8, 3: 8, 4: 6}, 3) == [1, 2, 3]
    assert scoring_cities({1: 5, 2: 5, 3: 1}, 1) == [1, 2]  # 2 players: the largest, ties all
    assert scoring_cities({1: 0, 2: 0}, 3) == []
    points = [{1: 5, 2: 4, 3: 4, 4: 4, 5: 9}, {1: 12, 2: 10, 3: 10, 4: 10, 5: 1}]
    assert board_scores(points, totals, 3) == [4 * 5 + 17, 4 * 5 + 42]


def test_rulebook_forty_point_example():
    # houses in 7 cities, worth 6, 3 and 3 in the three largest cities
    mine = {1: 6, 2: 3, 3: 3, 4: 1, 5: 1, 6: 2, 7: 1}
    other = {1: 10, 2: 9, 3: 8, 4: 1, 5: 1}
    totals = {c: mine.get(c, 0) + other.get(c, 0) for c in range(1, 10)}
    assert scoring_cities(totals, 3) == [1, 2, 3]
    assert board_scores([mine, other], totals, 3)[0] == 40


def test_two_player_scoring_counts_the_largest_city_only():
    sticks = [[0, A_, Y1], [0, Y1, B_], [1, C_, G6], [1, G6, D_]]
    state = street(2, sticks=sticks)
    # both networks: two cities of 1 point each; all four cities tie as largest
    assert state.scores() == [4 * 2 + 2, 4 * 2 + 2]
    state = street(2, sticks=[[0, A_, Y1], [0, Y1, B_], [0, B_, O3], [0, O3, R4], [0, R4, C_]])
    # A, B, C hold 2 each: 3 cities x 4 + the largest (all three tie: 2+2+2)
    assert state.scores() == [12 + 6, 0]
    three = street(3, sticks=[[0, A_, Y1], [0, Y1, B_], [0, B_, O3], [0, O3, R4], [0, R4, C_]])
    assert three.scores() == [12 + 6, 0, 0]


def test_scores_recount_from_the_board():
    sticks = [[0, A_, Y1], [0, Y1, B_], [1, B_, O3], [1, O3, R4], [1, R4, C_], [1, C_, G6], [1, G6, D_]]
    state = street(3, sticks=sticks)
    assert state.house_points(0) == {A_: 1, B_: 1}
    assert state.house_points(1) == {B_: 2, C_: 2, D_: 2}
    # totals: A 1, B 3, C 2, D 2 -> top three: B, C, D (A is 4th)
    assert state.scores() == [4 * 2 + 1, 4 * 3 + 6, 0]


def test_tiebreak_chain():
    assert tiebreak_winners([(10, 2, 5, 4), (9, 9, 9, 9)]) == [0]
    assert tiebreak_winners([(10, 2, 5, 4), (10, 3, 1, 1)]) == [1]  # most cities with a house
    assert tiebreak_winners([(10, 3, 5, 4), (10, 3, 6, 1)]) == [1]  # then most sticks
    assert tiebreak_winners([(10, 3, 6, 4), (10, 3, 6, 5)]) == [1]  # then most house-points
    assert tiebreak_winners([(10, 3, 6, 5), (10, 3, 6, 5), (1, 1, 1, 1)]) == [0, 1]  # then shared
    # on the board: same score and cities, seat 1 laid more sticks
    sticks = [[0, A_, Y1], [0, Y1, B_], [1, C_, G6], [1, G6, D_], [1, B_, BL10], [1, Y1, BL10]]
    state = street(3, sticks=sticks, phase="PHASE_OVER", end_reason="END_REASON_BLOCKS_EXHAUSTED")
    assert state.scores()[0] == state.scores()[1]
    assert state.winners() == [1]


# ---------------------------------------------------------------- prediction variant


def test_prediction_variant_seals_three_cities_secretly():
    state = State.new(3, 5, {"prediction": True})
    assert state.start == 1  # placement afterwards starts with the drawn seat, not seat 0
    assert state.phase == "PHASE_PREDICT" and state.active_seats() == [0, 1, 2]
    assert state.legal_moves(1) == [{"predict": {"cities": [c]}} for c in state.cities]
    c = state.cities
    events = state.apply(1, {"predict": {"cities": [c[0]]}})
    assert events[0].to == (1,) and events[0].body == {"prediction_recorded": {"seat": 1, "cities": [c[0]]}}
    assert events[1].to is None
    assert events[1].body == {"prediction_sealed": {"seat": 1, "count": 1, "complete": False}}
    land = next(i for i, t in enumerate(state.tiles) if t["terrain"] != C)
    unchanged(state, 1, {"predict": {"cities": [land]}}, RuleViolation, "prediction_city")
    unchanged(state, 1, {"predict": {"cities": [c[0]]}}, RuleViolation, "prediction_duplicate")
    unchanged(state, 1, {"predict": {"cities": [c[1], c[2], c[3]]}}, RuleViolation, "prediction_size")
    unchanged(state, 1, {"place_pawn": {"tile": land}}, RuleViolation, "phase")
    state.apply(1, {"predict": {"cities": [c[1], c[2]]}})
    assert state.active_seats() == [0, 2] and state.legal_moves(1) == []
    unchanged(state, 1, {"predict": {"cities": [c[3]]}}, NotYourTurn)
    assert state.view(1)["predictions"] == [{"seat": 1, "cities": [c[0], c[1], c[2]]}]
    assert state.view(0)["predictions"] == [{"seat": 0, "cities": []}]
    assert state.view(None)["predictions"] == []
    assert state.view(0)["players"][1]["predicted"] == 3
    state.apply(0, {"predict": {"cities": c[3:6]}})
    state.apply(2, {"predict": {"cities": c[6:9]}})
    assert state.phase == "PHASE_PLACE" and state.active_seats() == [state.start]


def test_prediction_points():
    totals = {1: 9, 2: 7, 3: 5, 4: 5, 5: 1, 6: 0}
    assert prediction_points([1, 2, 3], totals) == 15
    assert prediction_points([2, 1, 5], totals) == 2 + 2 + 0
    assert prediction_points([1, 2, 4], totals) == 15  # 3 and 4 share ranks 3-4
    assert prediction_points([3, 4, 1], totals) == 2 + 2 + 2  # ranks 3-4 predicted 1st and 2nd
    assert prediction_points([1, 6, 3], totals) == 5 + 0 + 5  # no houses: no rank
    assert prediction_points([], totals) == 0


def test_predictions_revealed_and_scored_at_the_end():
    sticks = [[0, A_, Y1], [0, Y1, B_], [0, B_, O3], [0, O3, R4], [0, R4, C_]]
    state = street(
        3,
        options={"prediction": True},
        sticks=sticks,
        predictions=[[A_, B_, C_], [D_, E_, A_], [A_, B_, D_]],
        blocks=[0] * len(STREET),
        phase="PHASE_BUILD",
    )
    # A, B, C hold 2 each and share ranks 1-3: every one of them is at a right rank
    before = state.scores()
    assert before == [12 + 6, 0, 0]  # prediction points hidden until the end
    events = state.apply(0, END)
    assert state.is_over()
    assert state.scores() == [12 + 6 + 15, 5, 10]
    over = events[-1].body["game_over"]
    assert over["predictions"] == [
        {"seat": 0, "cities": [A_, B_, C_]},
        {"seat": 1, "cities": [D_, E_, A_]},
        {"seat": 2, "cities": [A_, B_, D_]},
    ]
    assert len(state.view(None)["predictions"]) == 3


# ---------------------------------------------------------------- views and errors


def test_view_shows_own_blocks_by_colour_and_only_totals_of_others():
    state = street(hands=[hand(Y=2, B=1), hand(R=4), hand()])
    v0, v1, spectator = state.view(0), state.view(1), state.view(None)
    assert v0["my_blocks"] == hand(Y=2, B=1) and v1["my_blocks"] == hand(R=4)
    assert spectator["my_blocks"] == []
    assert [p["block_count"] for p in v0["players"]] == [3, 4, 0]
    for v in (v0, v1, spectator):
        assert len(v["tiles"]) == len(STREET) and v["phase"] == "PHASE_BUILD"
        text = json.dumps(v)
        assert "seed" not in text and "hands" not in text


def test_view_shows_the_board():
    state = street(sticks=[[1, A_, Y1], [1, Y1, B_]], pawns=[11, 3, -1])
    v = state.view(2)
    assert v["sticks"] == [
        {"seat": 1, "a": A_, "b": Y1, "paid": Y1, "cost": 1},
        {"seat": 1, "a": Y1, "b": B_, "paid": Y1, "cost": 1},
    ]
    assert v["spent_blocks"] == hand(Y=2)
    assert {c["city"]: c["points"] for c in v["cities"]}[A_] == [0, 1, 0]
    assert v["players"][1]["pawn_placed"] and v["players"][1]["pawn_tile"] == 3
    assert not v["players"][2]["pawn_placed"]
    assert v["scoring_cities"] == [A_, B_]
    assert v["tiles"][Y1] == {"index": Y1, "q": 1, "r": 0, "terrain": Y, "circled": False, "blocks": 1}


def test_malformed_moves():
    state = street(hands=[hand(Y=2), hand(), hand()])
    for move, field in (
        ({"fly": {}}, "move"),
        ({}, "move"),
        ({"end_turn": {}, "undo_stick": {}}, "move"),
        ({"lay_stick": {"anchor": 99, "paid": 1}}, "move.lay_stick.anchor"),
        ({"lay_stick": {"anchor": 0, "paid": -1}}, "move.lay_stick.paid"),
        ({"lay_stick": {"anchor": "0", "paid": 1}}, "move.lay_stick.anchor"),
        ({"lay_stick": {"anchor": True, "paid": 1}}, "move.lay_stick.anchor"),
        ({"lay_stick": {"anchor": 0, "paid": 1, "cost": 1}}, "move.lay_stick.cost"),
        ({"move_pawn": [1]}, "move.move_pawn"),
        ({"predict": {"cities": []}}, "move.predict.cities"),
        ({"predict": {"cities": [0, 40]}}, "move.predict.cities"),
    ):
        unchanged(state, 0, move, MalformedMove, field)


def test_not_your_turn_and_wrong_phase():
    state = street(hands=[hand(Y=2), hand(Y=2), hand()])
    unchanged(state, 1, lay(A_, Y1), NotYourTurn, "not_your_turn")
    assert state.legal_moves(1) == []
    unchanged(state, 0, {"move_pawn": {"tile": 10}}, RuleViolation, "phase")
    unchanged(state, 0, {"place_pawn": {"tile": 10}}, RuleViolation, "phase")
    unchanged(state, 0, UNDO, RuleViolation, "undo_nothing")
    unchanged(state, 0, BUILD, RuleViolation, "route_empty")


def test_for_test_state_round_trips():
    state = street(hands=[hand(Y=2), hand(), hand()], sticks=[[1, A_, Y1]])
    state.apply(0, lay(B_, Y1))
    copy = State.from_dict(json.loads(json.dumps(state.to_dict())))
    assert copy == state and copy.to_dict() == state.to_dict()
    assert sum(state.box) + sum(state.spent) + sum(map(sum, state.hands)) + sum(state.blocks) == 70


# ---------------------------------------------------------------- review additions


def test_custom_layout_tile_set_error_names_a_tile():
    # one land tile turned into a tenth city: the error names the rule and a surplus tile
    tiles = custom_tiles(3)
    wrong = [dict(t) for t in tiles]
    extra = next(t for t in wrong if t["terrain"] == Y and not t["circled"])
    extra["terrain"] = C
    with pytest.raises(BadOptions) as info:
        State.new(3, 1, {"layout": "custom", "custom_tiles": wrong})
    assert (
        info.value.rule == "layout.tile_set"
        and "9 TERRAIN_CITY tiles; this layout has 10" in info.value.message
    )
    named = [t for t in wrong if f"tile ({t['q']}, {t['r']})" in info.value.message]
    assert len(named) == 1 and named[0]["terrain"] == C  # one of the ten cities: any of them is one too many


def test_custom_layout_duplicate_cell_is_named_before_the_tile_set():
    # two tiles on one cell and a wrong tile set: the first rule of the list (duplicate_tile) is named
    tiles = custom_tiles(3)
    bad = [dict(t) for t in tiles]
    bad[1]["q"], bad[1]["r"] = bad[0]["q"], bad[0]["r"]
    bad[2]["circled"] = bad[2]["terrain"] != C and not bad[2]["circled"]
    bad[2]["terrain"] = bad[2]["terrain"] if bad[2]["terrain"] != C else Y
    with pytest.raises(BadOptions) as info:
        State.new(3, 1, {"layout": "custom", "custom_tiles": bad})
    assert info.value.rule == "layout.duplicate_tile"
    assert f"({bad[0]['q']}, {bad[0]['r']})" in info.value.message


def test_custom_layout_shape_rules_name_the_tile():
    tiles = custom_tiles(3)
    # a corner tile moved next to a single tile
    lonely = [dict(t) for t in tiles]
    moved = next(t for t in lonely if (t["q"], t["r"]) == (-3, 3))
    moved["q"], moved["r"] = 5, -1  # touches only (4, -1)
    with pytest.raises(BadOptions) as info:
        State.new(3, 1, {"layout": "custom", "custom_tiles": lonely})
    assert info.value.rule == "layout.min_neighbours" and "(5, -1) has 1" in info.value.message
    # a hole in the middle without the variant; allowed with it
    holed = [dict(t) for t in tiles]
    centre = next(t for t in holed if (t["q"], t["r"]) == (0, 0))
    centre["q"], centre["r"] = 4, -3  # next to (3, -3), (3, -2) and (4, -2)
    with pytest.raises(BadOptions) as info:
        State.new(3, 1, {"layout": "custom", "custom_tiles": holed})
    assert info.value.rule == "layout.holes" and "(0, 0)" in info.value.message
    assert len(State.new(3, 1, {"layout": "custom", "custom_tiles": holed, "allow_holes": True}).tiles) == 39


def test_parallel_stick_over_three_others_costs_four():
    # "in the case of three existing sticks the cost is quadrupled"
    others = [[1, A_, Y1], [2, A_, Y1], [3, A_, Y1]]
    state = street(4, hands=[hand(Y=3), hand(), hand(), hand()], sticks=others)
    unchanged(state, 0, lay(A_, Y1), RuleViolation, "stick_blocks")
    state = street(4, hands=[hand(Y=4), hand(), hand(), hand()], sticks=others)
    events = state.apply(0, lay(A_, Y1))
    assert events[0].body["stick_laid"]["cost"] == 4 and state.hands[0] == hand()


# Eight cities on one line, land between them: city 2k at q=2k (k = 0..7), land at odd q.
LONG = [(q, 0, C if q % 2 == 0 else (Y, O, R, G, B, Y, O)[q // 2]) for q in range(15)]


def long_chain(players: int, last_city: int, **fields) -> State:
    """LONG with seat 0's sticks joining cities 0, 2, ..., ``last_city`` in one network."""
    sticks = []
    for land in range(1, last_city, 2):
        sticks += [[0, land - 1, land], [0, land, land + 1]]
    fields.setdefault("pawns", [0, 14, 12, 10][:players])
    return hand_built(
        players,
        LONG,
        blocks=[0 if t[2] == C else 3 for t in LONG],
        sticks=sticks,
        phase="PHASE_BUILD",
        **fields,
    )


def board_total(state: State, seat: int) -> int:
    return sum(row["points"][seat] for row in state.view(None)["cities"])


@pytest.mark.parametrize("players", [2, 3])
def test_house_supply_is_33_with_two_players_and_31_otherwise(players):
    # six cities joined (6 x 5 = 30 house-points); a route joining two more cities needs 2 more
    state = long_chain(players, 10, hands=[hand(Y=2, O=2)] + [hand()] * (players - 1))
    state.apply(0, lay(12, 13))
    state.apply(0, lay(14, 13))
    events = state.apply(0, BUILD)
    route = events[0].body["route_built"]
    if players == 3:  # 31 in the supply: one point left, city 12 (first in tile order) takes it
        assert route["house_points"] == 31 and route["houses_left"] == 0
        assert route["houses"] == [{"city": 12, "points": 1}]
        assert state.house_points(0)[12] == 1 and 14 not in state.house_points(0)
        assert state.is_over() and state.end_reason == "END_REASON_HOUSES_EXHAUSTED"
        assert state.winners() == [0] and board_total(state, 0) == 31
        return
    # 33 with two players: 32 placed, one house-point left, the game goes on
    assert route["house_points"] == 32 and route["houses_left"] == 1
    assert not state.is_over() and state.active_seats() == [1]
    assert state.view(1)["players"][0]["houses_left"] == 1
    state.apply(1, {"move_pawn": {"tile": 13}})
    state.apply(1, END)
    state.apply(0, {"move_pawn": {"tile": 1}})
    state.apply(0, lay(10, 11))
    state.apply(0, lay(12, 11))
    events = state.apply(0, BUILD)
    # the network would give 8 x 7 = 56; the board shows the supply: city 0 takes the last point
    assert state.is_over() and state.end_reason == "END_REASON_HOUSES_EXHAUSTED" and state.winners() == [0]
    route = events[0].body["route_built"]
    assert route["house_points"] == 33 and route["houses_left"] == 0
    assert route["houses"] == [{"city": 0, "points": 6}]
    assert board_total(state, 0) == 33 and state.view(0)["players"][0]["house_points"] == 33


def test_last_houses_go_to_the_cities_in_the_order_the_route_connects_them():
    # 3 players, cities 0..8 joined (5 cities x 4 = 20 of 31). The route 8-9-10-11-12 first joins
    # city 10 (second stick: 6 cities x 5 = 30), then city 12 (fourth stick: 7 x 6 = 42 > 31).
    state = long_chain(3, 8, hands=[hand(Y=2, B=2), hand(), hand()])
    for anchor, paid in ((8, 9), (10, 9), (10, 11), (12, 11)):
        state.apply(0, lay(anchor, paid))
    events = state.apply(0, BUILD)
    # after the second stick: 0, 2, 4, 6, 8 go from 4 to 5 and city 10 gets 5 (30 placed); the
    # fourth stick raises every city: one point is left, and city 0 is first in tile order
    shown = state.house_points(0)
    assert shown == {0: 6, 2: 5, 4: 5, 6: 5, 8: 5, 10: 5}
    route = events[0].body["route_built"]
    assert route["house_points"] == 31 and route["houses_left"] == 0
    assert route["houses"] == [{"city": c, "points": p} for c, p in sorted(shown.items())]
    assert [e.body for e in events[1:]] == [
        {
            "game_over": {
                "reason": "END_REASON_HOUSES_EXHAUSTED",
                "scores": state.scores(),
                "winners": [0],
                "predictions": [{"seat": s, "cities": []} for s in range(3)],
            }
        }
    ]
    # all sticks are on the board; city 12 shows none of seat 0's houses
    assert len(state.sticks) == 12 and 12 not in shown
    view = state.view(None)
    assert {row["city"]: row["points"][0] for row in view["cities"]} == {
        c: shown.get(c, 0) for c in state.cities
    }
    assert view["players"][0]["house_points"] == 31 and view["players"][0]["houses_left"] == 0
    # scores count the board: 6 cities x 4 + the three largest (6, 5, 5 and the tied 5s: all 31)
    assert state.scores() == [24 + 31, 0, 0]
    again = State.from_dict(json.loads(json.dumps(state.to_dict())))
    assert again.house_points(0) == shown and again.scores() == state.scores()


def seed_2_position() -> State:
    """2 players, the map of seed 2. Seat 0 has cities 8, 13, 19, 22, 24, 27 in one network (6 x 5)
    through tile 12 and cities 3, 4 in another (1 each) through tile 7: 32 of 33 house-points."""
    new = State.new(2, 2, {})
    tiles = [(t["q"], t["r"], t["terrain"], t["circled"]) for t in new.tiles]
    network_a = [(8, 12), (12, 13), (13, 18), (18, 19), (18, 24), (23, 24), (22, 23), (22, 28), (27, 28)]
    network_b = [(3, 7), (4, 7)]
    sticks = [[0, a, b] for a, b in network_a + network_b]
    return hand_built(2, tiles, blocks=list(new.blocks), sticks=sticks, pawns=[6, 32], phase="PHASE_MOVE")


def test_seed_2_ending_shows_no_more_houses_than_the_supply():
    # issue 13's example (2 players, seed 2, versions 161-163): move_pawn{7}, lay_stick{12, 7},
    # build_route joins all 8 cities (8 x 7 = 56 house-points) with one house-point left
    state = seed_2_position()
    assert sum(state.house_points(0).values()) == 32
    state.apply(0, {"move_pawn": {"tile": 7}})
    assert state.hands[0] == hand(G=1)
    state.apply(0, lay(12, 7))
    events = state.apply(0, BUILD)
    route = events[0].body["route_built"]
    assert route["house_points"] == 33 and route["houses_left"] == 0
    assert route["houses"] == [{"city": 3, "points": 2}]  # city 3: first of the raised cities
    view = state.view(1)
    assert sum(row["points"][0] for row in view["cities"]) == 33
    assert all(row["total"] <= 7 for row in view["cities"])
    assert view["players"][0]["house_points"] == 33 and view["players"][0]["houses_left"] == 0
    assert state.is_over() and state.winners() == [0] and view["end_reason"] == "END_REASON_HOUSES_EXHAUSTED"
    # 8 cities x 4, plus the largest city: six cities tied at 5, all counted
    assert state.scores() == [32 + 6 * 5, 0]


def test_legal_moves_are_steps_not_routes():
    # BUILD lists single sticks (each accepted), undo and build when they apply, end_turn last
    state = street(hands=[hand(Y=2, O=1, R=1, B=2), hand(), hand()])
    moves = state.legal_moves(0)
    assert moves[-1] == END and UNDO not in moves and BUILD not in moves
    sticks = [m for m in moves[:-1]]
    assert sticks and all(set(m) == {"lay_stick"} for m in sticks)
    cities = len(state.cities)
    assert len(sticks) <= 6 * cities
    for m in sticks:
        copy = State.from_dict(state.to_dict())
        copy.apply(0, m)
        assert len(copy.pending) == 1
    state.apply(0, lay(A_, Y1))
    state.apply(0, lay(B_, Y1))
    moves = state.legal_moves(0)
    assert moves[-3:] == [UNDO, BUILD, END]
    # MOVE: one destination per direction at most
    state = street(phase="PHASE_MOVE", pawns=[Y1, D_, E_])
    moves = state.legal_moves(0)
    assert 0 < len(moves) <= 6 and all(set(m) == {"move_pawn"} for m in moves)


def twenty_stick_position(laid: int) -> State:
    """Hexagon map, one city at the centre; seat 0 already has ``laid`` sticks between land tiles."""
    cells = sorted(board.hexagon(3), key=lambda c: (c[1], c[0]))
    tiles = [(q, r, C if (q, r) == (0, 0) else Y) for q, r in cells]
    at = {c: i for i, c in enumerate(cells)}
    land_pairs = [
        (at[c], at[n])
        for c in cells
        for n in board.neighbours(c)
        if n in at and c < n and (0, 0) not in (c, n)
    ]
    return (
        hand_built(
            3,
            tiles,
            blocks=[0 if t[2] == C else 2 for t in tiles],
            sticks=[[0, a, b] for a, b in land_pairs[:laid]],
            hands=[hand(Y=5), hand(), hand()],
            pawns=[at[(3, 0)], at[(-3, 0)], at[(0, 3)]],
            phase="PHASE_BUILD",
        ),
        at[(0, 0)],
        [at[n] for n in board.neighbours((0, 0))],
    )


def test_a_player_has_twenty_sticks():
    # the box holds 20 sticks per colour: the 21st stick of a player cannot be laid
    state, city, around = twenty_stick_position(19)
    state.apply(0, lay(city, around[0]))  # the 20th
    assert not any("lay_stick" in m for m in state.legal_moves(0))
    unchanged(state, 0, lay(city, around[1]), RuleViolation, "stick_supply")
    state.apply(0, UNDO)  # taking a pending stick back returns it to the supply
    assert lay(city, around[1]) in state.legal_moves(0)
    state, city, around = twenty_stick_position(20)
    unchanged(state, 0, lay(city, around[0]), RuleViolation, "stick_supply")
    assert state.legal_moves(0) == [END]


# ---------------------------------------------------------------- platform hooks


def test_timeout_move_builds_nothing_and_moves_to_a_block():
    state = street(hands=[hand(Y=2), hand(), hand()])
    state.apply(0, lay(A_, Y1))
    assert state.timeout_move(0) == END
    events = state.apply(0, END)
    assert events[0].body["turn_ended"]["discarded"] == 1 and state.hands[0] == hand(Y=2)
    # seat 1's pawn on O3: B_ (a city) is listed first, R4 is the first tile with a block
    state = street(phase="PHASE_MOVE", pawns=[Y11, O3, E_], turn=1)
    assert [m["move_pawn"]["tile"] for m in state.legal_moves(1)] == [B_, R4, F_]
    assert state.timeout_move(1) == {"move_pawn": {"tile": R4}}
    with pytest.raises(NotYourTurn):
        state.timeout_move(0)


def test_timeout_move_walks_the_pawn_towards_the_nearest_block():
    line = [(q, 0, Y if q % 2 else O) for q in range(8)]  # 0..7 along one straight line

    def pawn_step(blocks: dict[int, int], pawns: list[int]) -> int:
        on_tiles = [blocks.get(t, 0) for t in range(len(line))]
        state = hand_built(2, line, blocks=on_tiles, pawns=pawns, phase="PHASE_MOVE")
        move = state.timeout_move(0)
        assert move in state.legal_moves(0)
        return move["move_pawn"]["tile"]

    # no destination holds a block: a step towards the only one, not the first listed tile 1
    # (which, turn after turn, shuttled pawns between empty tiles for ever)
    assert pawn_step({7: 1}, pawns=[2, 0]) == 3
    assert pawn_step({7: 1}, pawns=[5, 6]) == 7  # a jump over the other pawn
    # the nearest block wins, counting jumps: 2 moves to 7, 4 to 0
    assert pawn_step({0: 1, 7: 1}, pawns=[4, 6]) == 5
    # equally near blocks: the lowest destination
    assert pawn_step({0: 1, 6: 1}, pawns=[3, 7]) == 2
    # the pawn's own tile is a target too once it has stepped off it: 2 moves back, 4 to 7
    assert pawn_step({3: 1, 7: 1}, pawns=[3, 0]) == 2
    # no block anywhere (the match is over at the end of the turn): the first listed tile
    assert pawn_step({}, pawns=[4, 7]) == 3


def test_opening_event_is_the_public_board():
    state = State.new(3, 9, {"prediction": True})
    (event,) = state.opening_events()
    assert event.to is None
    body = event.body["board_set_up"]
    assert body["tiles"] == state.view(None)["tiles"] and body["phase"] == "PHASE_PREDICT"
    assert (
        body["start_seat"] == state.start and body["house_supply"] == 31 and body["box_blocks"] == state.box
    )


def test_states_stored_in_the_earlier_form_still_load():
    # before the compact map code: one dict per tile, the custom tiles repeated in the options,
    # no final_houses
    state = State.new(3, 4, {"layout": "custom", "custom_tiles": custom_tiles(3)})
    old = state.to_dict()
    old["tiles"] = [{k: t[k] for k in ("q", "r", "terrain", "circled")} for t in state.tiles]
    old["options"] = {**old["options"], "custom_tiles": custom_tiles(3)}
    del old["final_houses"]
    again = State.from_dict(json.loads(json.dumps(old)))
    assert again == state and again.to_dict() == state.to_dict()
    assert isinstance(state.to_dict()["tiles"], str) and state.to_dict()["options"]["custom_tiles"] == []
