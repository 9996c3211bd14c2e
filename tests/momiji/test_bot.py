"""The Momiji bot adapter: its samples agree with what the seat knows and hold every card once;
cards the events showed going into a hand stay there; its playout policy plays good matches."""

from __future__ import annotations

import random

import pytest

from services.momiji.bot import candidate_moves, determinize, playout_move
from services.momiji.cards import CARDS_PER_TYPE
from services.momiji.rules import State
from tests.bots.positions import positions


def every_card(state: State) -> list[int]:
    return sorted(state.all_cards())


@pytest.mark.parametrize("players", [2, 3, 4])
def test_a_sample_shows_the_seat_its_view_and_holds_every_card_once(players):
    checked = 0
    for seed in range(3):
        for position in positions("momiji", players, seed, every=4):
            view, history = position.information()
            true = position.state
            for past in (history, None):
                state = determinize(view, position.seat, random.Random(seed), past)
                assert state.view(position.seat) == view
                assert state.legal_moves(position.seat) == true.legal_moves(position.seat)
                assert every_card(state) == list(range(state.types * CARDS_PER_TYPE))
                assert [len(h) for h in state.hands] == [len(h) for h in true.hands]
                checked += 1
    assert checked > 40


def test_cards_seen_going_into_a_hand_are_dealt_to_it():
    told = 0
    for seed in range(6):
        for position in positions("momiji", 3, seed, every=3):
            view, history = position.information()
            true = position.state
            events_known = set()
            for event in history:
                if "collected" in event and event["collected"]["seat"] != position.seat:
                    events_known |= {
                        (event["collected"]["seat"], c["id"]) for c in event["collected"]["cards"]
                    }
            still_held = {(s, c) for s, c in events_known if c in true.hands[s]}
            for sample in range(3):
                state = determinize(view, position.seat, random.Random(sample), history)
                assert all(c in state.hands[s] for s, c in still_held)
            told += len(still_held)
    assert told > 10


def test_the_temple_bell_cards_another_seat_looks_at_are_sampled_from_the_unseen():
    state = State.new(2, 3, {})
    state.landscapes[0] = ["POWER_TEMPLE_BELL"]
    state.apply(0, {"use_power": {"power": "POWER_TEMPLE_BELL"}})
    view = state.view(1)
    assert view["temple_bell_cards"] == []
    sample = determinize(view, 1, random.Random(3))
    assert sample.view(1) == view and len(sample.peek) == 3
    assert not set(sample.peek) & set(state.hands[1] + state.display)
    assert every_card(sample) == list(range(sample.types * CARDS_PER_TYPE))


def test_candidates_are_legal_and_fewer_than_the_legal_moves():
    fewer = 0
    for seed in range(4):
        state = State.new(3, seed, {})
        rng = random.Random(seed)
        while not state.is_over():
            seat = state.active_seats()[0]
            legal = state.legal_moves(seat)
            candidates = candidate_moves(state, seat, rng)
            assert candidates and all(move in legal for move in candidates)
            fewer += len(candidates) < len(legal)
            state.apply(seat, playout_move(state, seat, rng))
    assert fewer > 20


@pytest.mark.parametrize("players", [2, 4])
def test_the_playout_policy_wins_against_random_and_policy_moves(players):
    for opponent in ("random", "policy"):
        wins = 0.0
        for seed in range(10):
            state = State.new(players, seed, {})
            rng = random.Random(seed)
            hero = seed % players
            while not state.is_over():
                seat = state.active_seats()[0]
                if seat == hero:
                    move = playout_move(state, seat, rng)
                    assert move in state.legal_moves(seat)
                elif opponent == "random":
                    move = rng.choice(state.legal_moves(seat))
                else:
                    move = state.timeout_move(seat)
                state.apply(seat, move)
            wins += hero in state.winners()
        assert wins >= 9, (opponent, wins)
