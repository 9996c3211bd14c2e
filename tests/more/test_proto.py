"""More: every move, event and view dict the engine produces is exactly its proto message."""

from __future__ import annotations

import random

from google.protobuf import json_format
from mogames.more.v1 import more_pb2

from services.more.rules import GAME, State
from tests.engine_checks import round_trip
from tests.more.test_playouts import choose

PLATFORM_VIEW_FIELDS = {"version", "seat", "active_seats", "clocks"}


def check_move(move: dict) -> None:
    assert round_trip(move, more_pb2.Move()) == move


def check_event(body: dict) -> None:
    back = round_trip(body, more_pb2.MatchEvent())
    assert back.pop("version") == "0"
    assert back.pop("seq") == 0
    assert back == body


def check_view(view: dict) -> None:
    assert not PLATFORM_VIEW_FIELDS & set(view)
    back = round_trip(view, more_pb2.View())
    for key in PLATFORM_VIEW_FIELDS:
        back.pop(key)
    assert back == view


def test_service_and_options_match_the_proto():
    service = more_pb2.DESCRIPTOR.services_by_name[GAME.service]
    assert service.full_name == GAME.full_service == "mogames.more.v1.More"
    assert len(service.methods) == 11
    fields = more_pb2.MoreOptions.DESCRIPTOR.fields_by_name
    assert set(fields) == {o.name for o in GAME.options}
    defaults = json_format.MessageToDict(
        more_pb2.MoreOptions(), preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    state = State.new(3, 1, defaults)
    assert state.to_dict()["options"] == defaults == {o.name: o.default for o in GAME.options}


def test_moves_events_and_views_round_trip_through_the_proto():
    kinds_seen: set[str] = set()
    for seed in range(4):
        r = random.Random(seed)
        options = {"bid_for_solo": seed % 2 == 0, "max_rounds": 1}
        state = State.new(3, seed, options)
        for seat in (0, 1, 2, None):
            check_view(state.view(seat))
        step = 0
        while not state.is_over():
            step += 1
            seat = r.choice(state.active_seats())
            legal = state.legal_moves(seat)
            for move in legal:
                check_move(move)
            move = choose(r, legal)
            for event in state.apply(seat, move):
                check_event(event.body)
                kinds_seen.add(next(iter(event.body)))
            if step % 7 == 0 or state.is_over():
                for viewer in (0, 1, 2, None):
                    check_view(state.view(viewer))
    assert {"round_ended", "meld_laid", "card_added", "discarded", "bids_revealed"} <= kinds_seen
