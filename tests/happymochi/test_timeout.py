"""Happy Mochi's timeout policy (docs/rules/happymochi.md, "Timeouts"), on hand-built positions."""

from __future__ import annotations

import pytest

from services.engine import NotYourTurn
from services.happymochi.rules import State
from tests.happymochi.positions import hand_built

R, OR, Y, G, B, U, K = range(7)  # red, orange, yellow, green, blue, purple, pink


def c(color: int, value: int) -> int:
    return color * 10 + value


def test_the_leftmost_legal_duo_is_played():
    # 12, 26 and 18 do not beat 50; 61 and 87 do: the leftmost of those.
    hand = [c(R, 1), c(R, 2), c(G, 6), c(Y, 1), c(B, 8), c(B, 7)]
    state = hand_built([hand, [c(G, 4)]], [c(B, 5)], [c(U, 0)], deck=[c(K, 1)])
    assert state.timeout_move(0) == {"play_duo": {"position": 2}}


def test_without_a_duo_the_seat_draws_from_the_deck_and_places_at_the_right_end():
    state = hand_built([[c(R, 1), c(OR, 2)], [c(G, 4)]], [c(B, 5)], [c(U, 0)], deck=[c(K, 7)])
    move = state.timeout_move(0)
    assert move == {"draw": {"source": "DRAW_SOURCE_DECK"}}
    state.apply(0, move)
    assert state.timeout_move(0) == {"place_card": {"position": 2}}


def test_a_drawn_card_goes_just_right_of_the_last_card_of_its_value():
    hand = [c(R, 7), c(OR, 2), c(Y, 7), c(G, 3)]
    state = hand_built([hand, [c(G, 4)]], [c(B, 9)], [c(U, 9)], deck=[c(K, 7)])
    state.apply(0, state.timeout_move(0))
    assert state.held == c(K, 7)
    assert state.timeout_move(0) == {"place_card": {"position": 3}}  # after the yellow 7


def test_an_empty_deck_with_cards_under_the_tops_still_draws_from_the_deck():
    state = hand_built([[c(R, 1), c(R, 2)], [c(G, 4)]], [c(B, 2)], [c(U, 9), c(U, 5)], deck=[])
    assert state.timeout_move(0) == {"draw": {"source": "DRAW_SOURCE_DECK"}}


def test_nothing_to_draw_and_no_duo_passes():
    state = hand_built([[c(R, 1), c(R, 2)], [c(G, 4)]], [c(B, 2)], [c(U, 5)], deck=[])
    assert state.timeout_move(0) == {"pass_turn": {}}


def test_a_draw_effect_names_the_next_seat_clockwise_who_draws_from_the_deck():
    hands = [[c(R, 1)], [c(G, 4)], [c(B, 1), c(R, 9), c(OR, 7)]]
    state = hand_built(hands, [c(B, 2)], [c(U, 0)], deck=[c(K, 1), c(K, 2)], turn=2)
    state.apply(2, state.timeout_move(2))  # 97
    assert state.phase == "PHASE_EFFECTS"
    assert state.timeout_move(2) == {"name_drawer": {"seat": 0}}  # wraps from the last seat
    state.apply(2, {"name_drawer": {"seat": 0}})
    assert state.timeout_move(0) == {"draw": {"source": "DRAW_SOURCE_DECK"}}


def test_a_seat_without_a_decision_has_no_timeout_move():
    state = hand_built([[c(R, 1)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    with pytest.raises(NotYourTurn):
        state.timeout_move(1)


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_matches_where_every_seat_times_out_end(players):
    for seed in range(20):
        state = State.new(players, seed, {})
        for _ in range(2_000):
            if state.is_over():
                break
            (seat,) = state.active_seats()
            move = state.timeout_move(seat)
            assert move in state.legal_moves(seat)
            state.apply(seat, move)
        assert state.is_over(), f"seed {seed}: no end after 2000 timeouts"
