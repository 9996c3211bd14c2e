"""The codec's fast path (a message's own constructor) builds exactly what json_format builds,
for every event, prompt, move and view of random play in every game."""

from __future__ import annotations

import json
import random

import msgspec
import pytest
from google.protobuf import json_format

from services.catalog import GAME_PACKAGES, rules_module
from services.runtime.codec import from_dict, generated_modules, to_dict
from services.runtime.event_packing import packing_for
from services.runtime.history import StoredCommit, StoredEvent
from services.runtime.proto_dicts import _json_format_dict
from services.runtime.record import MatchRecord, StateDecoder, encode_state


@pytest.mark.parametrize("game", GAME_PACKAGES)
def test_constructor_path_equals_json_format(game: str) -> None:
    rules = rules_module(game)
    pb2, _ = generated_modules(rules.GAME)
    checked = 0
    for seed in range(3):
        rng = random.Random(seed)
        players = rules.GAME.min_players + seed % (rules.GAME.max_players - rules.GAME.min_players + 1)
        state = rules.State.new(players, seed, {})
        bodies = [e.body for e in state.opening_events()]
        for _ in range(120):
            if state.is_over():
                break
            seat = rng.choice(list(state.active_seats()))
            moves = state.legal_moves(seat)
            bodies.append({"prompt": {"seat": seat, "moves": moves}})
            for move in moves[:5]:
                assert from_dict(pb2.Move, move) == json_format.ParseDict(move, pb2.Move())
            for viewer in (seat, None):
                view = state.view(viewer)
                assert from_dict(pb2.View, view) == json_format.ParseDict(view, pb2.View())
            bodies += [e.body for e in state.apply(seat, rng.choice(moves))]
        for body in bodies:
            assert from_dict(pb2.MatchEvent, body) == json_format.ParseDict(body, pb2.MatchEvent())
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("game", GAME_PACKAGES)
def test_message_to_dict_equals_json_format(game: str) -> None:
    """The codec's own message-to-dict (a plan per message type) gives what json_format
    gives, for every move, event and view of random play."""
    rules = rules_module(game)
    pb2, _ = generated_modules(rules.GAME)
    checked = 0
    for seed in range(3):
        rng = random.Random(seed)
        state = rules.State.new(rules.GAME.min_players, seed, {})
        for _ in range(100):
            if state.is_over():
                break
            seat = rng.choice(list(state.active_seats()))
            moves = state.legal_moves(seat)
            messages = [from_dict(pb2.Move, move) for move in moves[:8]]
            messages.append(from_dict(pb2.View, state.view(seat)))
            messages += [from_dict(pb2.MatchEvent, e.body) for e in state.apply(seat, rng.choice(moves))]
            for message in messages:
                assert to_dict(message) == _json_format_dict(message)
                checked += 1
    assert checked > 100


def test_message_to_dict_keeps_json_formats_spellings() -> None:
    """Unset optional fields and oneofs are left out, 64-bit integers are strings, an enum
    is its name (a number it does not know stays a number), and lists are new lists."""
    from mogames.common.v1 import common_pb2

    watch = common_pb2.WatchMatchRequest(match_id="m")
    assert (
        to_dict(watch) == _json_format_dict(watch) == {"match_id": "m", "after_seq": 0, "with_table": False}
    )
    watch.after_version = 2**40
    assert to_dict(watch) == _json_format_dict(watch)
    assert to_dict(watch)["after_version"] == str(2**40)
    event = common_pb2.MatchEnded(status=common_pb2.FINISHED, scores=[-3, 2**35])
    assert to_dict(event) == _json_format_dict(event)
    assert to_dict(event)["status"] == "FINISHED"
    event.status = 99  # type: ignore[assignment]
    assert to_dict(event) == _json_format_dict(event)
    assert to_dict(event)["status"] == 99
    empty = common_pb2.MatchEnded()
    first, second = to_dict(empty), to_dict(empty)
    assert first == _json_format_dict(empty)
    assert first["scores"] == [] and first["scores"] is not second["scores"]


def test_a_body_only_json_format_takes_still_converts() -> None:
    """camelCase is json_format's spelling, not the constructor's: the fallback takes it."""
    pb2, _ = generated_modules(rules_module("happy_mochi").GAME)
    body = {"playerJoined": {"seat": 1, "playerName": "ann"}}
    assert from_dict(pb2.MatchEvent, body) == json_format.ParseDict(body, pb2.MatchEvent())
    assert from_dict(pb2.MatchEvent, body).player_joined.player_name == "ann"


@pytest.mark.parametrize("game", GAME_PACKAGES)
def test_stored_states_and_events_read_back_as_json_would(game: str) -> None:
    """Documents are stored as MessagePack and event bodies as MatchEvent bytes: what an
    engine writes reads back exactly as a JSON round trip would give it (no key or value an
    engine relies on JSON to change)."""
    rules = rules_module(game)
    rng = random.Random(7)
    state = rules.State.new(rules.GAME.min_players, 7, {})
    record = MatchRecord("m", game, rules.GAME.min_players, 7, {}, [None], "IN_PROGRESS", 0, {}, 1.5, 2.5)
    decode = StateDecoder(rules.State)
    packing = packing_for(game)
    for step in range(150):
        if state.is_over():
            break
        seat = rng.choice(list(state.active_seats()))
        for n, event in enumerate(state.apply(seat, rng.choice(state.legal_moves(seat)))):
            stored = StoredEvent(step + 1, n + 1, event.to, event.body)
            # As a history element (the body as MatchEvent bytes).
            element = StoredCommit.of([stored], None, packing)
            (again,) = StoredCommit.decode(msgspec.msgpack.decode(element), packing).events
            assert msgspec.msgpack.decode(element)[2][0][1] == packing.pack(event.body)
            assert again == stored
            assert again.body == json.loads(json.dumps(event.body))
        record.state = encode_state(state)
        again = MatchRecord.decode(record.encode(), 3)
        assert again.state == record.state
        as_json = json.loads(json.dumps(state.to_dict()))
        assert decode(again.state) == state == rules.State.from_dict(as_json)
        assert msgspec.msgpack.decode(again.state) == as_json
