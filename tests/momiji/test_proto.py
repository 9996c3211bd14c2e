"""Momiji: every move, event, view and option dict the engine produces round-trips through the protos."""

from __future__ import annotations

import random

from mogames.momiji.v1 import momiji_pb2

from services.momiji.cards import POWERS
from services.momiji.moves import MOVE_FIELDS
from services.momiji.rules import GAME, State
from tests.engine_checks import round_trip as roundtrip
from tests.momiji.test_playouts import options_of, pick, players_of, with_stacks_started

POWER_KINDS = {"use_power", "stone_lantern", "koi_pond", "moss_garden", "pagoda"}
PLATFORM_FIELDS = {"version", "seat", "active_seats", "clocks"}  # filled by the platform, not the engine


def check_move(move: dict) -> None:
    assert roundtrip(move, momiji_pb2.Move()) == move


def check_event(body: dict) -> None:
    back = roundtrip(body, momiji_pb2.MatchEvent())
    back.pop("version")
    back.pop("seq")
    assert back == body


def check_view(view: dict) -> None:
    back = roundtrip(view, momiji_pb2.View())
    assert set(back) - set(view) == PLATFORM_FIELDS
    assert {k: v for k, v in back.items() if k not in PLATFORM_FIELDS} == view


def test_options_roundtrip():
    defaults = {o.name: o.default for o in GAME.options}
    assert roundtrip(defaults, momiji_pb2.MomijiOptions()) == defaults
    assert roundtrip({"draft_landscapes": True}, momiji_pb2.MomijiOptions()) == {"draft_landscapes": True}


def test_moves_events_views_roundtrip_through_proto():
    seen_moves, seen_events = set(), set()
    for seed in range(6):
        s = State.new(players_of(seed), seed, options_of(seed))
        if seed % 2:
            s = with_stacks_started(s)
        r = random.Random(seed)
        step = 0
        while not s.is_over():
            if step % 3 == 0:
                for v_seat in [*range(s.players), None]:
                    check_view(s.view(v_seat))
            seat = r.choice(s.active_seats())
            moves = s.legal_moves(seat)
            for m in moves:
                check_move(m)
            move = pick(r, moves)
            seen_moves.add(next(iter(move)))
            for e in s.apply(seat, move):
                check_event(e.body)
                seen_events.add(next(iter(e.body)))
            step += 1
        for v_seat in [*range(s.players), None]:
            check_view(s.view(v_seat))
    event_fields = {f.name for f in momiji_pb2.MatchEvent.DESCRIPTOR.oneofs_by_name["event"].fields}
    assert seen_events <= event_fields
    assert len(seen_moves) >= 10 and len(seen_events) >= 12, (seen_moves, seen_events)


def test_engine_move_kinds_are_the_proto_move_kinds():
    proto_moves = {f.name for f in momiji_pb2.Move.DESCRIPTOR.oneofs_by_name["kind"].fields}
    assert proto_moves == set(MOVE_FIELDS)


def test_every_engine_event_kind_roundtrips():
    """Matches where every seat holds all nine powers and many acorns produce every event kind."""
    seen = set()
    for seed in range(6):
        s = State.new(players_of(seed), seed, {"draft_landscapes": seed == 0})
        for e in s.opening_events():
            check_event(e.body)
        r = random.Random(seed)
        boosted = False
        while not s.is_over():
            if not boosted and s.phase != "PHASE_DRAFT":  # after the draft (if any) is over
                s.landscapes = [list(POWERS) for _ in range(s.players)]
                s.acorns = [12] * s.players
                boosted = True
            seat = r.choice(s.active_seats())
            moves = s.legal_moves(seat)
            powers = [m for m in moves if set(m) & POWER_KINDS]
            move = r.choice(powers) if powers and r.random() < 0.5 else pick(r, moves)
            for e in s.apply(seat, move):
                check_event(e.body)
                seen.add(next(iter(e.body)))
    engine_fields = {
        f.name
        for f in momiji_pb2.MatchEvent.DESCRIPTOR.oneofs_by_name["event"].fields
        if 10 <= f.number < 100
    }
    assert seen == engine_fields
