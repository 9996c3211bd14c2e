"""Nim's rules, each on a hand-built position, and its options."""

from __future__ import annotations

import pytest

from services.engine import BadOptions, MalformedMove, NotYourTurn, RuleViolation
from tests.engine_checks import refused
from tests.nim.positions import last_stone, position
from tests.nim.rules import State


def test_piles_are_drawn_from_the_seed_within_the_options() -> None:
    state = State.new(2, 5, {"piles": 5, "largest": 4})
    assert len(state.piles) == 5 and all(1 <= stones <= 4 for stones in state.piles)
    assert State.new(2, 5, {"piles": 5, "largest": 4}).piles == state.piles
    assert len(State.new(2, 5, {}).piles) == 3
    assert state.opening_events()[0].body == {"piles_set": {"piles": state.piles}}


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"piles": 9}, "options.piles"),
        ({"largest": 21}, "options.largest"),
        ({"colour": 1}, "options.colour"),
    ],
)
def test_bad_options_are_refused_naming_the_option(options, field) -> None:
    with pytest.raises(BadOptions) as raised:
        State.new(2, 1, options)
    assert raised.value.rule == field
    with pytest.raises(BadOptions):
        State.new(5, 1, {})


def test_a_take_removes_stones_and_passes_the_turn() -> None:
    state = position([3, 2], turn=1)
    events = state.apply(1, {"take": {"pile": 0, "count": 2}})
    assert [e.body for e in events] == [{"stones_taken": {"seat": 1, "pile": 0, "count": 2, "left": 1}}]
    assert state.piles == [1, 2] and state.active_seats() == [0] and not state.is_over()
    assert state.legal_moves(1) == []
    assert len(state.legal_moves(0)) == 3


def test_taking_the_last_stone_wins() -> None:
    state = last_stone(turn=2)
    state.apply(2, {"take": {"pile": 1, "count": 1}})
    assert state.is_over() and state.winners() == [2] and state.scores() == [0, 0, 1]
    assert state.active_seats() == [] and state.legal_moves(2) == []


def test_refusals_name_their_rule_and_change_nothing() -> None:
    state = position([3, 0, 2])
    refused(state, 1, {"take": {"pile": 0, "count": 1}}, NotYourTurn, "not_your_turn")
    refused(state, 0, {"take": {"pile": 1, "count": 1}}, RuleViolation, "not_enough_stones")
    refused(state, 0, {"take": {"pile": 0, "count": 4}}, RuleViolation, "not_enough_stones")
    refused(state, 0, {"take": {"pile": 3, "count": 1}}, MalformedMove, "move.take.pile")
    refused(state, 0, {"take": {"pile": 0, "count": 0}}, MalformedMove, "move.take.count")
    refused(state, 0, {"pass": {}}, MalformedMove, "move")


def test_the_timeout_move_takes_one_stone_from_the_first_pile_with_any() -> None:
    state = position([0, 0, 4, 1])
    assert state.timeout_move(0) == {"take": {"pile": 2, "count": 1}}
    assert state.timeout_move(0) in state.legal_moves(0)


def test_every_view_is_the_same_public_one() -> None:
    state = position([1, 2], turn=1, players=3)
    assert {str(state.view(seat)) for seat in (None, 0, 1, 2)} == {
        str({"player_count": 3, "piles": [1, 2], "turn": 1})
    }
