"""Event bodies as the history stores them (MatchEvent bytes) read back exactly as their
engine or the platform wrote them, whole matches long, and smaller than MessagePack."""

from __future__ import annotations

import random

import msgspec
import pytest

from services.catalog import GAME_PACKAGES, rules_module
from services.runtime.event_packing import packing_for
from services.runtime.proto_dicts import generated_modules

# The platform's own events, in every game's MatchEvent (services/runtime: matches,
# lifecycle, timers), with values that differ from the defaults.
PLATFORM_EVENTS = [
    {"player_joined": {"seat": 1, "player_name": "ann"}},
    {"match_started": {"players": 3}},
    {"player_left": {"seat": 2, "seat_freed": False}},
    {"player_rejoined": {"seat": 2}},
    {"bot_seated": {"seat": 0, "level": "random", "reason": "timeouts"}},
    {"timed_out": {"seat": 1, "consecutive": 2}},
    {"match_abandoned": {"reason": "idle"}},
    # Scores are sint64, which JSON would turn into strings: stored, they stay ints.
    {"match_ended": {"status": "FINISHED", "scores": [12, -3, 2**40], "winners": [0]}},
    {"match_ended": {"status": "ABANDONED", "scores": [0, 0], "winners": []}},
]


@pytest.mark.parametrize("game", GAME_PACKAGES)
def test_every_event_of_whole_matches_reads_back_as_written(game: str) -> None:
    rules = rules_module(game)
    packing = packing_for(game)
    rng = random.Random(11)
    packed_bytes = map_bytes = events = 0
    for match in range(3):
        state = rules.State.new(rules.GAME.min_players, 100 + match, {})
        written = [e.body for e in state.opening_events()]
        while not state.is_over():
            seat = rng.choice(list(state.active_seats()))
            written += [e.body for e in state.apply(seat, rng.choice(state.legal_moves(seat)))]
        for body in [*written, *PLATFORM_EVENTS]:
            packed = packing.pack(body)
            # A fresh EventPacking: nothing remembered, read from the bytes alone.
            assert type(packing)(rules_module(game).GAME.package).unpack(packed) == body
            packed_bytes += len(packed)
            map_bytes += len(msgspec.msgpack.encode(body))
            events += 1
    assert events > 100
    assert packed_bytes < 0.5 * map_bytes, f"{packed_bytes} bytes against {map_bytes} as MessagePack"


def test_a_stored_event_of_a_kind_this_server_does_not_know_is_refused_by_name() -> None:
    pb2, _ = generated_modules("happymochi")
    newer = pb2.MatchEvent(version=3).SerializeToString() + b"\xa0\x1f\x00"  # field 500, empty
    with pytest.raises(ValueError, match="no kind this server knows"):
        packing_for("happy_mochi").unpack(newer)
