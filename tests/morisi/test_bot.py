"""The Morisi bot adapter: its samples agree with what the seat knows and hold every block once;
the events tell the other screens exactly; its playout policy builds routes and plays matches out."""

from __future__ import annotations

import random

import pytest

from services.morisi.board import BLOCKS_PER_COLOR, COLORS
from services.morisi.bot import determinize, playout_move
from services.morisi.rules import State
from tests.bots.positions import positions


def blocks_by_colour(state: State) -> list[int]:
    """Per colour, every block wherever it is: tiles, screens, handed in, box."""
    total = [state.box[c] + state.spent[c] + sum(h[c] for h in state.hands) for c in range(len(COLORS))]
    for tile, count in enumerate(state.blocks):
        if state.colors[tile] >= 0:
            total[state.colors[tile]] += count
    return total


@pytest.mark.parametrize("players", [2, 3, 4])
def test_a_sample_shows_the_seat_its_view_and_holds_every_block_once(players):
    checked = 0
    for seed in range(2):  # odd seeds: with the prediction variant
        for position in positions("morisi", players, seed, every=6):
            view, history = position.information()
            true = position.state
            for past in (history, None):
                state = determinize(view, position.seat, random.Random(seed), past)
                assert state.view(position.seat) == view
                assert state.legal_moves(position.seat) == true.legal_moves(position.seat)
                assert blocks_by_colour(state) == [BLOCKS_PER_COLOR] * len(COLORS)
                checked += 1
            told = determinize(view, position.seat, random.Random(7), history)
            assert told.hands == true.hands, "every block taken and paid is public"
            if players == 2:
                alone = determinize(view, position.seat, random.Random(7), None)
                assert alone.hands == true.hands, "with two players the other screen is what is left"
    assert checked > 40


def test_without_the_events_the_other_screens_are_sampled():
    position = next(p for p in positions("morisi", 4, seed=0, every=5) if p.state.turn_no > 12)
    view, _ = position.information()
    samples = {str(determinize(view, position.seat, random.Random(i), None).hands) for i in range(20)}
    assert len(samples) > 1


def test_hidden_predictions_are_sampled_and_the_seats_own_kept():
    state = State.new(3, 4, {"prediction": True})
    cities = state.cities
    state.apply(0, {"predict": {"cities": cities[:3]}})
    state.apply(1, {"predict": {"cities": cities[3:5]}})
    sample = determinize(state.view(0), 0, random.Random(1))
    assert sample.predictions[0] == cities[:3]
    assert len(sample.predictions[1]) == 2 and len(sample.predictions[2]) == 0
    assert set(sample.predictions[1]) <= set(cities)


def play(state: State, chooser) -> State:
    rng = random.Random(5)
    for _ in range(20000):
        if state.is_over():
            return state
        seat = state.active_seats()[0]
        move = chooser(state, seat, rng)
        assert move in state.legal_moves(seat)
        state.apply(seat, move)
    raise AssertionError("the match did not end")


@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_playout_policy_builds_routes_and_wins_against_random_moves(players):
    wins = 0
    for seed in range(6):
        hero = seed % players

        def chooser(state, seat, rng, hero=hero):
            if seat == hero:
                return playout_move(state, seat, rng)
            return rng.choice(state.legal_moves(seat))

        end = play(State.new(players, seed, {}), chooser)
        assert any(stick[0] == hero for stick in end.sticks)
        wins += end.winners() == [hero]
    assert wins >= 5


def test_a_planned_route_is_laid_stick_by_stick_and_built():
    state = State.new(2, 3, {})
    rng = random.Random(2)
    built = 0
    while not state.is_over() and state.turn_no < 30:
        seat = state.active_seats()[0]
        move = playout_move(state, seat, rng)
        kinds = [next(iter(e.body)) for e in state.apply(seat, move)]
        built += "route_built" in kinds
        assert "stick_undone" not in kinds
    assert built >= 4
