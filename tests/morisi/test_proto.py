"""Every move, event, view and options dict the engine produces round-trips through its proto message."""

from __future__ import annotations

import random

from mogames.morisi.v1 import morisi_pb2

from services.morisi.rules import GAME, State
from tests.engine_checks import round_trip
from tests.morisi.positions import hand_built
from tests.morisi.test_playouts import Player
from tests.morisi.test_rules import STREET, hand, lay


def collect(players: int, seed: int, options: dict) -> tuple[list, list, list]:
    """Moves, events and views of one seeded match."""
    state = State.new(players, seed, options)
    rnd = random.Random(seed)
    player = Player(random.Random(seed + 1))
    moves, events, views = [], [], []
    step = 0
    while not state.is_over():
        seat = rnd.choice(state.active_seats())
        legal = state.legal_moves(seat)
        moves.extend(legal if step % 5 == 0 else legal[:3])
        if step % 10 == 0:
            views += [state.view(s) for s in [None, *range(players)]]
        move = player.choose(state, seat, legal)
        events.extend(e.body for e in state.apply(seat, move))
        step += 1
    views += [state.view(s) for s in [None, *range(players)]]
    return moves, events, views


def test_moves_events_views_round_trip():
    kinds_seen: set[str] = set()
    for players, seed, options in ((2, 1, {}), (3, 2, {"prediction": True}), (4, 3, {"allow_holes": True})):
        moves, events, views = collect(players, seed, options)
        for m in moves:
            assert round_trip(m, morisi_pb2.Move()) == m
            kinds_seen.add(next(iter(m)))
        for e in events:
            full = {"version": "0", "seq": 0, **e}  # the platform fills the version
            assert round_trip(full, morisi_pb2.MatchEvent()) == full
            kinds_seen.add(next(iter(e)))
        for v in views:
            full = {"version": "0", "seat": 0, "active_seats": [], "clocks": [], **v}
            assert round_trip(full, morisi_pb2.View()) == full
    for kind in ("predict", "place_pawn", "move_pawn", "lay_stick", "undo_stick", "build_route", "end_turn"):
        assert kind in kinds_seen
    for kind in ("prediction_sealed", "prediction_recorded", "pawn_placed", "pawn_moved", "stick_laid"):
        assert kind in kinds_seen
    for kind in ("stick_undone", "route_built", "turn_ended", "game_over"):
        assert kind in kinds_seen


def test_rare_events_round_trip():
    line = [(q, 0, "TERRAIN_YELLOW" if q % 2 else "TERRAIN_ORANGE") for q in range(3)]
    blocked = hand_built(3, line, blocks=[1, 1, 1], pawns=[0, 1, 2], phase="PHASE_BUILD", turn=2)
    events = [e.body for e in blocked.apply(2, {"end_turn": {}})]
    assert "pawn_blocked" in events[-1]
    street = hand_built(3, STREET, blocks=[0] * len(STREET), pawns=[11, 7, 8], phase="PHASE_BUILD")
    street.hands[0] = hand(Y=2)
    street.apply(0, lay(0, 1))
    street.apply(0, lay(2, 1))
    events += [e.body for e in street.apply(0, {"build_route": {}})]
    assert "game_over" in events[-1]
    events += [e.body for e in State.new(3, 5, {"prediction": True}).opening_events()]
    assert "board_set_up" in events[-1]
    for e in events:
        full = {"version": "0", "seq": 0, **e}
        assert round_trip(full, morisi_pb2.MatchEvent()) == full


def test_options_round_trip_and_defaults_match_the_proto():
    state = State.new(3, 1, {"layout": "hexagon"})
    tiles = [{k: t[k] for k in ("q", "r", "terrain", "circled")} for t in state.tiles]
    for options in (
        {"layout": "random", "custom_tiles": [], "allow_holes": False, "prediction": False},
        {"layout": "custom", "custom_tiles": tiles, "allow_holes": True, "prediction": True},
    ):
        assert round_trip(options, morisi_pb2.MorisiOptions()) == options
        State.new(3, 1, options)
    # the proto's empty form (layout "") is accepted and means the random layout
    empty = round_trip({}, morisi_pb2.MorisiOptions())
    assert State.new(3, 1, empty).options["layout"] == "random"
    assert [o.name for o in GAME.options] == list(morisi_pb2.MorisiOptions.DESCRIPTOR.fields_by_name)
