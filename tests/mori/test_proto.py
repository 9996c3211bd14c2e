"""Mori: every move, event and view dict the engine produces round-trips through the proto messages."""

from __future__ import annotations

import random

import pytest
from google.protobuf import json_format
from mogames.mori.v1 import mori_pb2

from services.mori.rules import GAME, State
from tests.engine_checks import round_trip

PLATFORM_VIEW_FIELDS = ("version", "seat", "active_seats", "clocks")


def check_view(view: dict) -> None:
    back = round_trip(view, mori_pb2.View())
    for key in PLATFORM_VIEW_FIELDS:
        assert key not in view
        back.pop(key)
    assert back == view


@pytest.mark.parametrize("players", [3, 4, 5])
def test_moves_events_and_views_round_trip(players):
    rnd = random.Random(players)
    state = State.new(players, 77 + players, {"first_player": 1})
    kinds_seen: set[str] = set()
    move_kinds: set[str] = set()
    for seat in [None, *range(players)]:
        check_view(state.view(seat))
    while not state.is_over():
        (seat,) = state.active_seats()
        for move in state.legal_moves(seat):
            assert round_trip(move, mori_pb2.Move()) == move
        move = rnd.choice(state.legal_moves(seat))
        move_kinds |= set(move)
        for event in state.apply(seat, move):
            back = round_trip(event.body, mori_pb2.MatchEvent())
            assert back.pop("version") == "0"  # filled by the platform
            assert back.pop("seq") == 0
            assert back == event.body
            kinds_seen |= set(event.body)
        for viewer in [None, *range(players)]:
            check_view(state.view(viewer))
    assert kinds_seen == {
        "round_started",
        "hand_dealt",
        "card_played",
        "die_played",
        "trick_won",
        "die_claimed",
        "round_ended",
    }
    assert move_kinds == {"play_card", "play_die", "claim_die"}


def test_claim_phase_view_round_trips():
    state = State.new(3, 5, {})
    while state.phase != "claim":
        (seat,) = state.active_seats()
        state.apply(seat, state.legal_moves(seat)[0])
    view = state.view(0)
    assert view["last_trick"]["complete"] and view["last_trick"]["plays"]
    check_view(view)


def test_options_message_matches_the_engine_options():
    defaults = json_format.MessageToDict(
        mori_pb2.MoriOptions(), preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    assert defaults == {o.name: o.default for o in GAME.options}
    State.new(3, 1, defaults)  # the platform's default options are accepted
    assert [f.name for f in mori_pb2.Move.DESCRIPTOR.oneofs_by_name["kind"].fields] == [
        "play_card",
        "play_die",
        "claim_die",
    ]
