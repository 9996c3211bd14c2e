"""What every engine in the catalog owes the platform beyond the rules (services/engine.py):
``opening_events`` (round 1's set-up, stored at version 0), ``timeout_move`` (the move made
for a seat whose decision timed out, also the ``policy`` bot's move), from every
``apply``, at least one event someone can see (issue 14 point 5), and a ``State`` that is an
``EngineState`` whose codecs give it back (issue 15 item 3).

Seeded playouts, every game at its smallest and largest player count.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from google.protobuf import json_format

from clients.game_client import game_modules
from services.catalog import GAME_PACKAGES, rules_module
from services.engine import EngineState
from services.runtime.codec import to_dict
from tests.engine_checks import codecs_give_back

GAMES = sorted(GAME_PACKAGES)
SEEDS = (3, 17)
MAX_STEPS = 20_000
# A match in which every seat times out (default options) must end within this many moves.
MAX_TIMEOUT_STEPS = 20_000


def player_counts(game: str) -> list[int]:
    info = rules_module(game).GAME
    return sorted({info.min_players, info.max_players})


CASES = [(game, players) for game in GAMES for players in player_counts(game)]


def case_id(case: tuple[str, int]) -> str:
    return f"{case[0]}-{case[1]}p"


def flat_dicts(obj: Any, out: set[str]) -> set[str]:
    """Every dict of scalars inside ``obj`` (cards, dice, ...), as canonical JSON."""
    if isinstance(obj, dict):
        if not any(isinstance(v, dict | list) for v in obj.values()):
            out.add(json.dumps(obj, sort_keys=True))
        for value in obj.values():
            flat_dicts(value, out)
    elif isinstance(obj, list):
        for value in obj:
            flat_dicts(value, out)
    return out


def secrets(state: Any, seat: int) -> set[str]:
    """What ``seat`` sees and a spectator does not: its hidden set-up (a dealt hand)."""
    return flat_dicts(state.view(seat), set()) - flat_dicts(state.view(None), set())


def check_events(game: str, events: list[Any], players: int, shapes: bool = True) -> None:
    """Addressed to real seats, someone sees one, and (``shapes``) shaped like MatchEvent."""
    pb2, _ = game_modules(game)
    assert events, "apply/opening gave no event"
    assert any(e.to is None or e.to for e in events), "no event is visible to anyone"
    for event in events:
        assert event.to is None or (event.to and set(event.to) <= set(range(players))), event
        if not shapes:
            continue
        message = json_format.ParseDict(event.body, pb2.MatchEvent())
        assert to_dict(message) == {"version": "0", "seq": 0, **event.body}


def timeout_checked(state: Any, seat: int) -> dict[str, Any]:
    """``timeout_move(seat)``, checked: a legal move, the same on a copy, state untouched."""
    before = state.to_dict()
    move: dict[str, Any] = state.timeout_move(seat)
    assert move in state.legal_moves(seat), (seat, move)
    assert state.to_dict() == before, "timeout_move changed the state"
    copy = type(state).from_dict(json.loads(json.dumps(before)))
    assert copy.timeout_move(seat) == move, "timeout_move is not a function of the state"
    return move


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_opening_events_give_each_seat_its_set_up_and_tell_everyone_only_public_facts(case):
    game, players = case
    rules = rules_module(game)
    for seed in SEEDS:
        state = rules.State.new(players, seed, {})
        before = state.to_dict()
        opening = state.opening_events()
        assert state.to_dict() == before, "opening_events changed the state"
        check_events(game, opening, players)
        public = flat_dicts([e.body for e in opening if e.to is None], set())
        for seat in range(players):
            hidden = secrets(state, seat)
            # Everything the seat sees that spectators do not was told to it at version 0 ...
            told = flat_dicts([e.body for e in opening if e.visible_to(seat)], set())
            assert hidden <= told, f"seat {seat} is not told {sorted(hidden - told)[:3]}"
            if hidden:
                assert any(e.to == (seat,) for e in opening), f"no private set-up event for {seat}"
            # ... and to nobody else, spectators included.
            assert not hidden & public, f"seat {seat}'s set-up is in a public event"
            for other in range(players):
                if other != seat:
                    to_other = [e.body for e in opening if e.to is not None and other in e.to]
                    assert not hidden & flat_dicts(to_other, set()), (seat, other)
        again = rules.State.from_dict(json.loads(json.dumps(before)))
        assert again.opening_events() == opening, "opening_events is not a function of the state"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_random_play_timeout_moves_are_legal_and_every_apply_tells_someone(case):
    game, players = case
    rules = rules_module(game)
    for seed in SEEDS:
        state = rules.State.new(players, seed, {})
        rng = random.Random(seed)
        for step in range(MAX_STEPS):
            if state.is_over():
                break
            active = state.active_seats()
            sampled = step < 60 or step % 10 == 0  # the costlier checks, sampled later on
            if sampled:
                for seat in active:
                    timeout_checked(state, seat)
            seat = rng.choice(active)
            events = state.apply(seat, rng.choice(state.legal_moves(seat)))
            check_events(game, events, players, shapes=sampled)
        assert state.is_over(), f"{game} seed {seed}: no end after {MAX_STEPS} random moves"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_match_where_every_seat_times_out_ends(case):
    game, players = case
    rules = rules_module(game)
    for seed in SEEDS:
        state = rules.State.new(players, seed, {})
        steps = 0
        while not state.is_over() and steps < MAX_TIMEOUT_STEPS:
            for seat in state.active_seats():
                if seat in state.active_seats():  # an earlier seat's move may have ended it
                    move = state.timeout_move(seat)
                    assert move in state.legal_moves(seat)
                    check_events(game, state.apply(seat, move), players)
                    steps += 1
        assert state.is_over(), f"{game} seed {seed}: no end after {steps} timeout moves"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_state_is_an_engine_state_that_its_codecs_give_back_along_random_play(case):
    game, players = case
    rules = rules_module(game)
    assert issubclass(rules.State, EngineState), f"{game}'s State is not an EngineState"
    seed = SEEDS[0]
    state = rules.State.new(players, seed, {})
    rng = random.Random(seed)
    for step in range(MAX_STEPS):
        if step < 60 or step % 5 == 0:
            codecs_give_back(state)
        if state.is_over():
            break
        seat = rng.choice(state.active_seats())
        state.apply(seat, rng.choice(state.legal_moves(seat)))
    assert state.is_over(), f"{game} seed {seed}: no end after {MAX_STEPS} random moves"
    codecs_give_back(state)
