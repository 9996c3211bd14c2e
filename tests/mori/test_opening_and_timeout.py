"""Mori: round 1's set-up events (opening_events) and the timeout policy (docs/rules/mori.md §9, §10)."""

from __future__ import annotations

import pytest

from services.engine import NotYourTurn
from services.mori.rules import State
from tests.mori.test_rules import AU, SP, SU, WI, XC, bodies, build, c, play

X = 4


@pytest.mark.parametrize("players", [3, 4, 5])
def test_opening_events_are_round_1s_deal_and_roll(players):
    state = State.new(players, 21, {"first_player": players - 1})
    opening = state.opening_events()
    assert [e.to for e in opening] == [None] + [(s,) for s in range(players)]
    (started,) = bodies(opening, "round_started")
    assert started == {
        "round": 1,
        "start_player": players - 1,
        "mat": state.view(None)["mat"],
        "hand_sizes": [11] * players,
    }
    dealt = bodies(opening, "hand_dealt")
    assert [d["seat"] for d in dealt] == list(range(players)) and {d["round"] for d in dealt} == {1}
    assert [[card["id"] for card in d["hand"]] for d in dealt] == state.hands
    for seat, d in enumerate(dealt):
        assert d["hand"] == state.view(seat)["hand"]


def test_opening_events_match_what_a_later_round_emits_and_do_not_change_with_play():
    state = State.new(3, 4, {})
    opening = state.opening_events()
    before = state.to_dict()
    assert state.opening_events() == opening and state.to_dict() == before
    later: list = []
    while state.round == 1:
        (seat,) = state.active_seats()
        later = state.apply(seat, state.legal_moves(seat)[0])
    round_2 = later[next(i for i, e in enumerate(later) if "round_ended" in e.body) + 1 :]
    assert [(list(e.body), e.to) for e in round_2] == [(list(e.body), e.to) for e in opening]
    assert bodies(round_2, "round_started")[0]["round"] == 2
    assert state.opening_events() == opening


def test_timeout_plays_the_lowest_ranked_card_when_free_to_play_any():
    state = build(hands=[[c(SU, 6), c(SP, 4), c(WI, 2), XC[0]], [c(SP, 1)], [c(SP, 2)], [c(SP, 3)]])
    state.aids[0] = [3]
    assert state.timeout_move(0) == {"play_card": {"card": c(WI, 2)}}


def test_timeout_follows_suit_with_the_lowest_lead_card():
    state = build(hands=[[c(SU, 1)], [c(SU, 7), c(SU, 3), c(SP, 1), XC[2]], [c(SP, 2)], [c(SP, 3)]])
    play(state, 0, c(SU, 1))
    assert state.timeout_move(1) == {"play_card": {"card": c(SU, 3)}}


def test_timeout_without_the_lead_suit_plays_the_lowest_card_of_any_suit():
    state = build(hands=[[c(SU, 1)], [c(AU, 5), c(WI, 4), XC[2]], [c(SP, 2)], [c(SP, 3)]])
    play(state, 0, c(SU, 1))
    assert state.timeout_move(1) == {"play_card": {"card": c(WI, 4)}}


def test_timeout_plays_an_x_card_only_when_the_hand_holds_nothing_else():
    state = build(hands=[[c(SU, 1)], [XC[3], XC[2]], [c(SP, 2)], [c(SP, 3)]], aids=[[], [5], [], []])
    play(state, 0, c(SU, 1))
    assert state.timeout_move(1) == {"play_card": {"card": XC[2]}}


def test_timeout_claims_the_first_die_of_the_mat_suited_before_x():
    faces = [X, X, WI, SU, SU, X, AU, X, X, X]
    state = build(
        3, hands=[[c(SP, 1)], [c(SP, 2)], [c(SP, 3)]], faces=faces, mat=[0, 2, 4, 6, 7], phase="claim"
    )
    assert state.timeout_move(0) == {"claim_die": {"die": 4}}  # Summer comes first on the mat
    state = build(3, hands=[[c(SP, 1)], [c(SP, 2)], [c(SP, 3)]], faces=faces, mat=[7, 1], phase="claim")
    assert state.timeout_move(0) == {"claim_die": {"die": 1}}  # only X dice: the lowest id


def test_a_seat_without_a_decision_has_no_timeout_move():
    state = build(hands=[[c(SP, 1)], [c(SP, 2)], [c(SP, 3)], [c(SP, 4)]])
    with pytest.raises(NotYourTurn):
        state.timeout_move(1)


@pytest.mark.parametrize("players", [3, 4, 5])
def test_matches_where_every_seat_times_out_end(players):
    for seed in range(5):
        state = State.new(players, seed, {"first_player": seed % players})
        for _ in range(players * 10 * (players + 1)):
            if state.is_over():
                break
            (seat,) = state.active_seats()
            move = state.timeout_move(seat)
            assert move in state.legal_moves(seat)
            state.apply(seat, move)
        assert state.is_over()
