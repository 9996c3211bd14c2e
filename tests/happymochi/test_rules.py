"""Happy Mochi: one hand-built position per rule (docs/rules/happymochi.md)."""

from __future__ import annotations

import json
import random

import pytest

from services.engine import BadOptions, MalformedMove, NotYourTurn, RuleViolation
from services.happymochi import rules
from services.happymochi.cards import DECK_SIZE, MINUS, PLUS, check_duo, playable_duos
from services.happymochi.rules import GAME, State
from tests.engine_checks import refused
from tests.happymochi.positions import hand_built

R, OR, Y, G, B, U, K = range(7)  # red, orange, yellow, green, blue, purple, pink


def c(color: int, value: int) -> int:
    """Card id of a colour index and a value."""
    return color * 10 + value


def draw(source: str) -> dict:
    return {"draw": {"source": f"DRAW_SOURCE_{source}"}}


def place(position: int) -> dict:
    return {"place_card": {"position": position}}


def duo(position: int) -> dict:
    return {"play_duo": {"position": position}}


def name(seat: int) -> dict:
    return {"name_drawer": {"seat": seat}}


FLIP = {"flip_value": {}}
PASS = {"pass_turn": {}}


def bodies(events, kind):
    return [e.body[kind] for e in events if kind in e.body]


# ---------------------------------------------------------------- setup and options


def test_game_info():
    assert (GAME.name, GAME.title, GAME.package, GAME.service) == (
        "happy_mochi",
        "Happy Mochi",
        "happymochi",
        "HappyMochi",
    )
    assert (GAME.min_players, GAME.max_players) == (2, 6)
    assert [o.name for o in GAME.options] == ["first_player"]


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_setup_deals_seven_cards_two_central_and_the_rest_as_deck(players):
    state = State.new(players, 42, {"first_player": 0})
    assert [len(h) for h in state.hands] == [7] * players
    assert len(state.left) == len(state.right) == 1
    assert len(state.deck) == 70 - 7 * players - 2
    assert sorted(state.all_cards()) == list(range(70))
    assert state.value_side == "VALUE_SIDE_PLUS"
    assert state.round == 1 and state.totals == [0] * players
    assert state.active_seats() == [0]


def test_setup_is_deterministic_and_depends_on_the_seed():
    assert State.new(4, 7, {}).to_dict() == State.new(4, 7, {}).to_dict()
    assert State.new(4, 7, {}).hands != State.new(4, 8, {}).hands


@pytest.mark.parametrize("players", [2, 4, 6])
def test_opening_events_are_round_1s_deal_shaped_like_every_later_rounds(players):
    state = State.new(players, 11, {"first_player": 1})
    opening = state.opening_events()
    (started,) = [e for e in opening if "round_started" in e.body]
    assert started.to is None
    assert started.body["round_started"] == {
        "round": 1,
        "start_seat": 1,
        "central_left": rules.card_dict(state.left[-1]),
        "central_right": rules.card_dict(state.right[-1]),
        "deck_size": len(state.deck),
        "value_side": "VALUE_SIDE_PLUS",
        "hand_sizes": [7] * players,
    }
    dealt = [e for e in opening if "hand_dealt" in e.body]
    assert [e.to for e in dealt] == [(s,) for s in range(players)]
    assert [e.body["hand_dealt"]["seat"] for e in dealt] == list(range(players))
    assert [[card["id"] for card in e.body["hand_dealt"]["cards"]] for e in dealt] == state.hands
    assert len(opening) == 1 + players
    # A later round emits exactly these kinds, in this order, to the same audiences.
    later = hand_built([[c(R, 7), c(OR, 8)]] + [[c(G, 4)]] * (players - 1), [c(B, 2)], [c(U, 0)])
    events = later.apply(0, duo(0))
    round_2 = events[next(i for i, e in enumerate(events) if "round_ended" in e.body) + 1 :]
    assert [(list(e.body), e.to) for e in round_2] == [(list(e.body), e.to) for e in opening]


def test_opening_events_do_not_change_with_play_or_change_the_state():
    state = State.new(3, 5, {})
    opening = state.opening_events()
    before = state.to_dict()
    assert state.opening_events() == opening and state.to_dict() == before
    state.apply(0, state.legal_moves(0)[0])
    assert state.opening_events() == opening


def test_first_player_option():
    state = State.new(3, 5, {"first_player": 2})
    assert state.active_seats() == [2]
    assert state.view(0)["round_start_seat"] == 2


@pytest.mark.parametrize(
    ("players", "options"),
    [
        (1, {}),
        (7, {}),
        (3, {"first_player": 3}),
        (3, {"first_player": -1}),
        (3, {"first_player": True}),
        (3, {"first_player": "1"}),
        (3, {"allow_holes": False}),
    ],
)
def test_bad_options_are_refused(players, options):
    with pytest.raises(BadOptions):
        State.new(players, 1, options)


def test_options_are_filled_with_defaults():
    assert State.new(2, 1, {}).options == {"first_player": 0}


# ---------------------------------------------------------------- ordered hands


def test_drawn_card_is_inserted_where_the_drawer_chooses():
    hand = [c(R, 1), c(OR, 2), c(Y, 3)]
    for position in range(4):
        state = hand_built([list(hand), [c(G, 4)]], [c(B, 6)], [c(B, 8)], deck=[c(K, 0), c(U, 7)])
        state.apply(0, draw("DECK"))
        assert state.active_seats() == [0] and state.phase == "PHASE_PLACE"
        assert state.legal_moves(0) == [place(i) for i in range(4)]
        events = state.apply(0, place(position))
        expected = list(hand)
        expected.insert(position, c(U, 7))
        assert state.hands[0] == expected
        assert bodies(events, "card_placed") == [{"seat": 0, "position": position, "hand_size": 4}]
        assert state.active_seats() == [1]  # drawing ends the turn


def test_place_position_beyond_the_hand_is_malformed():
    state = hand_built([[c(R, 1)], [c(G, 4)]], [c(B, 6)], [c(B, 8)], deck=[c(K, 0)])
    state.apply(0, draw("DECK"))
    refused(state, 0, place(2), MalformedMove, "move.place_card.position")


def test_duo_takes_two_adjacent_cards_left_is_tens_and_the_rest_keeps_its_order():
    hand = [c(R, 1), c(OR, 7), c(Y, 3), c(G, 2)]
    state = hand_built([hand, [c(G, 4)]], [c(B, 1)], [c(R, 0)])  # 10 to beat, on +
    events = state.apply(0, duo(1))  # 73
    assert state.hands[0] == [c(R, 1), c(G, 2)]
    assert state.left[-1] == c(OR, 7) and state.right[-1] == c(Y, 3)
    (played,) = bodies(events, "duo_played")
    assert played["number"] == 73 and played["happy_mochi"] is False and played["hand_size"] == 2
    view = state.view(1)
    assert view["number_to_beat"] == 73 and (view["left_height"], view["right_height"]) == (2, 2)
    assert view["central_left"]["id"] == c(OR, 7) and view["central_right"]["id"] == c(Y, 3)


def test_duo_position_without_a_right_neighbour_is_malformed():
    state = hand_built([[c(R, 1), c(OR, 7)], [c(G, 4)]], [c(B, 1)], [c(R, 0)])
    refused(state, 0, duo(1), MalformedMove, "move.play_duo.position")


# ---------------------------------------------------------------- restrictions


def test_value_restriction_plus_needs_strictly_greater():
    central = ([c(R, 6)], [c(B, 8)])  # 68, different colours
    ok = hand_built([[c(R, 6), c(OR, 9), c(G, 0)], [c(G, 4)]], *central)
    ok.apply(0, duo(0))
    assert ok.left[-1] == c(R, 6) and ok.right[-1] == c(OR, 9)
    equal = hand_built([[c(Y, 6), c(OR, 8)], [c(G, 4)]], *central, deck=[c(K, 1)])
    assert equal.legal_moves(0) == [draw("DECK"), draw("LEFT"), draw("RIGHT")]
    refused(equal, 0, duo(0), RuleViolation, "value_restriction")
    lower = hand_built([[c(Y, 6), c(OR, 7)], [c(G, 4)]], *central)
    refused(lower, 0, duo(0), RuleViolation, "value_restriction")


def test_value_restriction_minus_needs_strictly_less():
    central = ([c(R, 6)], [c(B, 8)])
    ok = hand_built([[c(Y, 5), c(OR, 7)], [c(G, 4)]], *central, value_side="VALUE_SIDE_MINUS")
    assert duo(0) in ok.legal_moves(0)
    equal = hand_built([[c(Y, 6), c(OR, 8)], [c(G, 4)]], *central, value_side="VALUE_SIDE_MINUS")
    refused(equal, 0, duo(0), RuleViolation, "value_restriction")
    higher = hand_built([[c(Y, 7), c(OR, 0)], [c(G, 4)]], *central, value_side="VALUE_SIDE_MINUS")
    refused(higher, 0, duo(0), RuleViolation, "value_restriction")


def test_color_restriction_when_the_central_duo_shares_a_colour():
    central = ([c(Y, 5)], [c(Y, 7)])  # yellow 57
    mixed = hand_built([[c(R, 6), c(OR, 8)], [c(G, 4)]], *central)
    refused(mixed, 0, duo(0), RuleViolation, "color_restriction")
    other_colour = hand_built([[c(U, 6), c(U, 8)], [c(G, 4)]], *central)
    assert duo(0) in other_colour.legal_moves(0)  # any single colour will do
    assert other_colour.view(0)["color_restriction"] is True


def test_no_color_restriction_when_the_central_colours_differ():
    state = hand_built([[c(R, 6), c(OR, 8)], [c(G, 4)]], [c(Y, 5)], [c(B, 7)])
    assert duo(0) in state.legal_moves(0)
    assert state.view(0)["color_restriction"] is False


def test_value_and_color_restrictions_stack():
    # rulebook example: under 95 on the - side, same colour
    central = ([c(G, 9)], [c(G, 5)])
    kw = {"value_side": "VALUE_SIDE_MINUS"}
    low_mixed = hand_built([[c(R, 4), c(U, 6)], [c(G, 4)]], *central, **kw)
    refused(low_mixed, 0, duo(0), RuleViolation, "color_restriction")
    high_same = hand_built([[c(R, 9), c(R, 7)], [c(G, 4)]], *central, **kw)
    refused(high_same, 0, duo(0), RuleViolation, "value_restriction")
    good = hand_built([[c(U, 4), c(U, 6)], [c(G, 4)]], *central, **kw)
    assert duo(0) in good.legal_moves(0)


def test_rulebook_turn_example_purple_46_and_happy_mochi_11_on_yellow_57_minus():
    hand = [c(U, 4), c(U, 6), c(R, 1), c(B, 1), c(G, 8)]
    state = hand_built([[c(G, 0)], hand], [c(Y, 5)], [c(Y, 7)], value_side="VALUE_SIDE_MINUS", turn=1)
    duos = [m for m in state.legal_moves(1) if "play_duo" in m]
    assert duos == [duo(0), duo(2)]  # purple 46 and the 11 Happy Mochi; not 61, not 18


def test_happy_mochi_ignores_value_and_color_restrictions():
    # Central yellow 98 on +: 11 in two colours is neither greater nor one colour.
    state = hand_built([[c(R, 1), c(B, 1)], [c(G, 4)]], [c(Y, 9)], [c(Y, 8)])
    events = state.apply(0, duo(0))
    assert bodies(events, "duo_played")[0]["happy_mochi"] is True
    # and on the - side against 00
    low = hand_built([[c(R, 3), c(B, 3)], [c(G, 4)]], [c(Y, 0)], [c(Y, 0)], value_side="VALUE_SIDE_MINUS")
    assert duo(0) in low.legal_moves(0)


def test_playable_duos_is_check_duo_for_every_pair():
    """The legal-move listing's one-pass Duo check allows exactly the pairs check_duo
    allows, over random hands, Central Duos and Value sides."""
    rng = random.Random(11)
    for _ in range(3000):
        hand = rng.sample(range(DECK_SIZE), rng.randint(0, 12))
        top_left, top_right = rng.sample(range(DECK_SIZE), 2)
        for side in (PLUS, MINUS):
            expected = [
                i
                for i in range(len(hand) - 1)
                if check_duo(hand[i], hand[i + 1], top_left, top_right, side) is None
            ]
            assert playable_duos(hand, top_left, top_right, side) == expected


def test_legal_moves_list_exactly_the_playable_duos():
    hand = [c(R, 1), c(R, 2), c(OR, 9), c(OR, 9), c(Y, 3), c(G, 7)]
    state = hand_built([hand, [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    # 20 to beat on +: 12 no, 29 yes, 99 yes (mochi), 93 yes, 37 yes
    assert [m["play_duo"]["position"] for m in state.legal_moves(0) if "play_duo" in m] == [1, 2, 3, 4]
    for position in range(5):
        if duo(position) not in state.legal_moves(0):
            refused(state, 0, duo(position), RuleViolation, "value_restriction")


# ---------------------------------------------------------------- Central Duo stacks


def test_draw_from_a_central_stack_takes_its_top_card_face_up():
    state = hand_built([[c(R, 1)], [c(G, 4)]], [c(B, 2), c(B, 3)], [c(U, 0)], deck=[c(K, 1)])
    events = state.apply(0, draw("LEFT"))
    assert state.left == [c(B, 2)] and state.held == c(B, 3)
    (drawn,) = bodies(events, "card_drawn")
    assert drawn["card"]["id"] == c(B, 3) and drawn["source"] == "DRAW_SOURCE_LEFT"
    assert state.view(1)["drawn_card"]["id"] == c(B, 3)  # a face-up card is seen by all
    state.apply(0, place(0))
    assert state.hands[0] == [c(B, 3), c(R, 1)]
    assert state.view(1)["number_to_beat"] == 20


def test_emptied_stack_is_refilled_from_the_deck_note_a():
    state = hand_built([[c(R, 1)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1), c(K, 9)])
    events = state.apply(0, draw("LEFT"))
    assert state.held == c(B, 2)
    assert state.left == [c(K, 9)] and state.deck == [c(K, 1)]
    assert bodies(events, "stack_refilled") == [{"stack": "STACK_LEFT", "card": rules.card_dict(c(K, 9))}]


def test_revealed_effect_card_does_nothing_note_b():
    # The refill reveals a 9 (Draw) and a 5 (Value-flip): neither triggers.
    state = hand_built([[c(R, 1)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 5), c(K, 9)])
    state.apply(0, draw("LEFT"))
    state.apply(0, place(1))
    assert state.pending == [] and state.value_side == "VALUE_SIDE_PLUS"
    assert state.active_seats() == [1] and state.phase == "PHASE_TURN"


def test_deck_draw_is_secret_to_the_drawer():
    state = hand_built([[c(R, 1)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1), c(K, 7)])
    events = state.apply(0, draw("DECK"))
    public = [e for e in events if e.to is None]
    private = [e for e in events if e.to is not None]
    assert [e.body for e in public] == [
        {"card_drawn": {"seat": 0, "source": "DRAW_SOURCE_DECK", "by_effect": False}}
    ]
    assert [(e.to, e.body) for e in private] == [
        ((0,), {"card_received": {"seat": 0, "card": rules.card_dict(c(K, 7))}})
    ]
    assert state.view(0)["drawn_card"]["id"] == c(K, 7)
    assert "drawn_card" not in state.view(1) and "drawn_card" not in state.view(None)
    assert c(K, 7) not in _ids(state.view(1)) and c(K, 1) not in _ids(state.view(0))


# ---------------------------------------------------------------- empty deck


def test_empty_deck_reshuffles_the_cards_under_the_central_tops():
    left, right = [c(R, 3), c(R, 4), c(R, 5)], [c(OR, 3), c(OR, 6)]
    state = hand_built([[c(R, 1)], [c(G, 4)]], left, right, deck=[])
    events = state.apply(0, draw("DECK"))
    assert state.left == [c(R, 5)] and state.right == [c(OR, 6)]
    assert bodies(events, "deck_reshuffled") == [{"deck_size": 3}]
    assert sorted([*state.deck, state.held]) == sorted([c(R, 3), c(R, 4), c(OR, 3)])
    assert len(state.deck) == 2


def test_refill_with_an_empty_deck_reshuffles_first():
    state = hand_built([[c(R, 1)], [c(G, 4)]], [c(B, 2)], [c(U, 0), c(U, 1), c(U, 2)], deck=[])
    events = state.apply(0, draw("LEFT"))
    assert state.held == c(B, 2)
    assert state.right == [c(U, 2)]
    assert len(state.left) == 1 and state.left[0] in (c(U, 0), c(U, 1))
    assert [next(iter(e.body)) for e in events] == ["card_drawn", "deck_reshuffled", "stack_refilled"]


def test_one_card_under_the_tops_keeps_every_draw_available():
    state = hand_built([[c(R, 1), c(R, 2)], [c(G, 4)]], [c(B, 2)], [c(U, 9), c(U, 5)], deck=[])
    assert state.legal_moves(0) == [draw("DECK"), draw("LEFT"), draw("RIGHT")]
    state.apply(0, draw("LEFT"))  # the left stack empties and is refilled from the reshuffled U9
    assert state.held == c(B, 2) and state.left == [c(U, 9)] and state.right == [c(U, 5)]
    assert state.deck == []


def test_nothing_to_reshuffle_disables_deck_and_single_card_stacks():
    state = hand_built([[c(R, 1), c(R, 2)], [c(G, 4)]], [c(B, 2)], [c(U, 5)], deck=[])
    # 12 does not beat 25 and no card can be drawn: passing is the only move
    assert state.legal_moves(0) == [PASS]
    refused(state, 0, draw("DECK"), RuleViolation, "deck_empty")
    refused(state, 0, draw("LEFT"), RuleViolation, "stack_unavailable")
    refused(state, 0, draw("RIGHT"), RuleViolation, "stack_unavailable")


def test_a_player_with_no_legal_action_passes_and_a_full_cycle_of_passes_ends_the_round():
    # deck empty, each stack a single card, Central 98 on +, no duo beats it
    hands = [[c(R, 1), c(R, 2)], [c(G, 4), c(OR, 0), c(OR, 3)], [c(B, 1)]]
    state = hand_built(hands, [c(Y, 9)], [c(K, 8)], deck=[], round_start=1, turn=1)
    assert state.legal_moves(1) == [PASS]
    refused(state, 2, PASS, NotYourTurn)
    events = state.apply(1, PASS)
    assert bodies(events, "turn_passed") == [{"seat": 1, "consecutive_passes": 1}]
    assert state.active_seats() == [2]
    state.apply(2, PASS)
    events = state.apply(0, PASS)
    (ended,) = bodies(events, "round_ended")
    assert ended["went_out"] is False
    assert ended["round_points"] == [3, 7, 1]  # everyone scores their hand
    assert ended["total_scores"] == [3, 7, 1]
    assert ended["round_winner"] == 2  # fewest points
    assert state.round == 2 and state.active_seats() == [0]  # left of the round winner


def test_pass_is_refused_while_an_action_exists():
    state = hand_built([[c(R, 1), c(R, 2)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    assert PASS not in state.legal_moves(0)
    refused(state, 0, PASS, RuleViolation, "pass_not_allowed")


def test_any_other_action_resets_the_pass_count():
    hands = [[c(R, 1)], [c(G, 4), c(B, 4), c(OR, 2)], [c(B, 1)]]
    state = hand_built(hands, [c(Y, 9)], [c(K, 8)], deck=[])
    state.apply(0, PASS)
    assert state.passes == 1 and state.view(1)["consecutive_passes"] == 1
    state.apply(1, duo(0))  # the 44 Happy Mochi
    assert state.passes == 0 and state.active_seats() == [2]


# ---------------------------------------------------------------- effects


def test_value_flip_effect_flips_the_value_card():
    state = hand_built([[c(R, 5), c(OR, 7), c(G, 0)], [c(G, 4)]], [c(B, 2)], [c(U, 0)])
    events = state.apply(0, duo(0))  # 57, the 5 flips
    assert state.value_side == "VALUE_SIDE_MINUS"
    assert bodies(events, "value_flipped") == [{"seat": 0, "value_side": "VALUE_SIDE_MINUS"}]
    assert state.active_seats() == [1] and state.phase == "PHASE_TURN"


def test_double_five_happy_mochi_flips_twice():
    state = hand_built([[c(R, 5), c(OR, 5), c(G, 0)], [c(G, 4)]], [c(B, 8)], [c(U, 0)])
    events = state.apply(0, duo(0))
    assert len(bodies(events, "value_flipped")) == 2
    assert state.value_side == "VALUE_SIDE_PLUS"


def test_draw_effect_is_a_pending_decision_of_the_named_player():
    state = hand_built(
        [[c(R, 9), c(OR, 7), c(G, 0)], [c(G, 4)], [c(B, 1)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1), c(K, 2)]
    )
    state.apply(0, duo(0))  # 97, the 9 draws
    assert state.phase == "PHASE_EFFECTS" and state.active_seats() == [0]
    assert state.legal_moves(0) == [name(0), name(1), name(2)]
    refused(state, 0, name(3), MalformedMove, "move.name_drawer.seat")
    refused(state, 0, FLIP, RuleViolation, "no_flip_effect")
    refused(state, 0, draw("DECK"), RuleViolation, "wrong_phase")
    state.apply(0, name(2))
    assert state.active_seats() == [2] and state.phase == "PHASE_EFFECT_DRAW"
    for viewer in (0, 1, 2, None):  # everyone sees whose decision is pending
        view = state.view(viewer)
        assert view["phase"] == "PHASE_EFFECT_DRAW" and view["drawer"] == 2 and view["turn_seat"] == 0
    refused(state, 0, draw("DECK"), NotYourTurn)
    refused(state, 1, draw("DECK"), NotYourTurn)
    assert state.legal_moves(0) == [] and state.legal_moves(1) == []
    assert draw("DECK") in state.legal_moves(2)
    events = state.apply(2, draw("DECK"))
    assert bodies(events, "card_drawn")[0]["by_effect"] is True
    state.apply(2, place(1))
    assert state.hands[2] == [c(B, 1), c(K, 2)]
    assert state.active_seats() == [1]  # the turn passes from the Duo's player to the next seat


def test_draw_effect_may_name_the_player_themself():
    state = hand_built([[c(R, 9), c(OR, 7), c(G, 0)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    state.apply(0, duo(0))
    state.apply(0, name(0))
    state.apply(0, draw("DECK"))
    state.apply(0, place(0))
    assert state.hands[0] == [c(K, 1), c(G, 0)]
    assert state.active_seats() == [1]


def test_two_effects_resolve_in_the_order_the_player_chooses():
    hand = [c(R, 9), c(OR, 5), c(G, 0)]
    flip_first = hand_built([list(hand), [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    flip_first.apply(0, duo(0))  # 95: Draw and Value-flip
    assert flip_first.value_side == "VALUE_SIDE_PLUS"
    assert flip_first.legal_moves(0) == [name(0), name(1), FLIP]
    events = flip_first.apply(0, FLIP)
    assert bodies(events, "value_flipped") and flip_first.value_side == "VALUE_SIDE_MINUS"
    assert flip_first.legal_moves(0) == [name(0), name(1)]
    flip_first.apply(0, name(1))
    flip_first.apply(1, draw("DECK"))
    flip_first.apply(1, place(0))
    assert flip_first.active_seats() == [1] and flip_first.phase == "PHASE_TURN"

    draw_first = hand_built([list(hand), [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    draw_first.apply(0, duo(0))
    draw_first.apply(0, name(1))
    draw_first.apply(1, draw("DECK"))
    assert draw_first.value_side == "VALUE_SIDE_PLUS"  # not yet
    events = draw_first.apply(1, place(0))
    assert bodies(events, "value_flipped") == [{"seat": 0, "value_side": "VALUE_SIDE_MINUS"}]
    assert draw_first.active_seats() == [1]


def test_special_case_draw_the_second_card_of_the_duo_and_still_trigger_it():
    # 95: resolve the Draw on yourself first, take back the 5 from the right stack: it still flips.
    state = hand_built([[c(R, 9), c(OR, 5), c(G, 0)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    state.apply(0, duo(0))
    state.apply(0, name(0))
    assert draw("RIGHT") in state.legal_moves(0)
    state.apply(0, draw("RIGHT"))
    assert state.held == c(OR, 5) and state.right == [c(U, 0)]
    events = state.apply(0, place(1))
    assert state.hands[0] == [c(G, 0), c(OR, 5)]
    assert state.value_side == "VALUE_SIDE_MINUS"
    assert bodies(events, "value_flipped")
    assert state.active_seats() == [1]


def test_a_named_player_may_take_back_the_flip_card_and_the_flip_still_happens():
    state = hand_built([[c(R, 9), c(OR, 5), c(G, 0)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    state.apply(0, duo(0))
    state.apply(0, name(1))
    events = state.apply(1, draw("RIGHT"))
    assert bodies(events, "card_drawn")[0]["card"]["id"] == c(OR, 5)
    events = state.apply(1, place(0))
    assert state.hands[1] == [c(OR, 5), c(G, 4)]
    assert bodies(events, "value_flipped") and state.value_side == "VALUE_SIDE_MINUS"


def test_special_case_with_two_draw_effects():
    # 99: take back the other 9 with the first Draw; the second Draw still happens.
    state = hand_built(
        [[c(R, 9), c(OR, 9), c(G, 0)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1), c(K, 2)]
    )
    state.apply(0, duo(0))
    assert [p["effect"] for p in state.view(1)["pending_effects"]] == ["EFFECT_DRAW", "EFFECT_DRAW"]
    state.apply(0, name(0))
    state.apply(0, draw("RIGHT"))
    state.apply(0, place(0))
    assert state.hands[0] == [c(OR, 9), c(G, 0)]
    assert state.phase == "PHASE_EFFECTS" and state.legal_moves(0) == [name(0), name(1)]
    state.apply(0, name(1))
    state.apply(1, draw("DECK"))
    state.apply(1, place(1))
    assert state.hands[1] == [c(G, 4), c(K, 2)]
    assert state.active_seats() == [1] and state.phase == "PHASE_TURN"


def test_draw_effect_with_nothing_to_draw_is_void():
    # Unreachable in play (after a Duo both stacks hold two cards, so a draw is always possible,
    # see the rules doc); the engine still voids such a Draw effect instead of stalling.
    state = hand_built(
        [[c(G, 0)], [c(G, 4)]], [c(R, 9)], [c(OR, 7)], deck=[], phase="PHASE_EFFECTS", pending=[c(R, 9)]
    )
    assert state.available_sources() == []
    events = state._advance()
    assert bodies(events, "effect_voided") == [{"seat": 0, "effect": "EFFECT_DRAW"}]
    assert state.active_seats() == [1]


# ---------------------------------------------------------------- rounds and game end


def test_going_out_ends_the_round_others_score_their_hands_and_the_left_neighbour_starts():
    hands = [[c(R, 7), c(OR, 8)], [c(G, 4), c(G, 3)], [c(B, 9), c(B, 1), c(Y, 0)]]
    state = hand_built(hands, [c(B, 2)], [c(U, 0)], deck=[c(K, 1)], round_start=2, totals=[5, 0, 2])
    events = state.apply(0, duo(0))  # 78 > 20, last two cards
    (ended,) = bodies(events, "round_ended")
    assert ended["went_out"] is True and ended["out_seat"] == 0 and ended["round_winner"] == 0
    assert ended["round_points"] == [0, 7, 10]
    assert ended["total_scores"] == [5, 7, 12] and state.totals == [5, 7, 12]
    assert state.round == 2 and state.round_start == 1 and state.active_seats() == [1]
    assert [len(h) for h in state.hands] == [7, 7, 7]
    assert sorted(state.all_cards()) == list(range(70))  # a fresh deal of all 70 cards
    dealt = [e for e in events if "hand_dealt" in e.body]
    assert [e.to for e in dealt] == [(0,), (1,), (2,)]
    assert [[card["id"] for card in e.body["hand_dealt"]["cards"]] for e in dealt] == state.hands
    (started,) = [e for e in events if "round_started" in e.body]
    assert started.to is None and started.body["round_started"]["start_seat"] == 1
    assert started.body["round_started"]["hand_sizes"] == [7, 7, 7]
    assert state.view(0)["last_round_points"] == [0, 7, 10]


def test_the_value_card_keeps_its_side_into_the_next_round():
    state = hand_built([[c(R, 5), c(OR, 8)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    state.apply(0, duo(0))  # 58 flips to -, and seat 0 is out
    assert state.round == 2 and state.value_side == "VALUE_SIDE_MINUS"
    assert state.view(1)["value_side"] == "VALUE_SIDE_MINUS"


def test_round_does_not_end_if_the_player_draws_back_a_card_with_the_draw_effect():
    state = hand_built([[c(R, 9), c(OR, 8)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    state.apply(0, duo(0))  # hand empty, but the Draw effect is pending
    assert state.round == 1 and state.hands[0] == []
    state.apply(0, name(0))
    state.apply(0, draw("DECK"))
    state.apply(0, place(0))
    assert state.round == 1 and state.active_seats() == [1]


def test_round_ends_after_the_draw_effect_when_another_player_draws():
    state = hand_built([[c(R, 9), c(OR, 8)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    state.apply(0, duo(0))
    state.apply(0, name(1))
    state.apply(1, draw("DECK"))
    events = state.apply(1, place(0))
    (ended,) = bodies(events, "round_ended")
    assert ended["round_points"] == [0, 5]  # K1 + G4
    assert state.round == 2 and state.active_seats() == [1]


def test_game_ends_when_a_player_reaches_30_and_the_fewest_points_win():
    state = hand_built(
        [[c(R, 7), c(OR, 8)], [c(G, 4), c(G, 3)], [c(B, 9), c(B, 9)]],
        [c(B, 2)],
        [c(U, 0)],
        deck=[c(K, 1)],
        totals=[20, 23, 10],
    )
    events = state.apply(0, duo(0))
    (ended,) = bodies(events, "round_ended")
    assert ended["total_scores"] == [20, 30, 28]
    assert ended["game_over"] is True and ended["winners"] == [0]
    assert state.is_over() and state.scores() == [20, 30, 28] and state.winners() == [0]
    assert state.active_seats() == [] and all(state.legal_moves(s) == [] for s in range(3))
    assert not [e for e in events if "round_started" in e.body]
    refused(state, 1, draw("DECK"), RuleViolation, "game_over")
    assert state.view(2)["game_over"] is True and state.view(2)["winners"] == [0]


def test_game_continues_below_30():
    state = hand_built(
        [[c(R, 7), c(OR, 8)], [c(G, 4), c(G, 3)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)], totals=[0, 22]
    )
    state.apply(0, duo(0))
    assert state.totals == [0, 29] and not state.is_over() and state.winners() == []


def test_tied_fewest_points_share_the_victory():
    state = hand_built(
        [[c(R, 7), c(OR, 8)], [c(G, 9), c(G, 9)], [c(B, 1), c(B, 1)]],
        [c(B, 2)],
        [c(U, 0)],
        deck=[c(K, 1)],
        totals=[12, 20, 10],
    )
    state.apply(0, duo(0))
    assert state.totals == [12, 38, 12] and state.winners() == [0, 2]


# ---------------------------------------------------------------- turns, malformed moves, views


def test_turns_go_clockwise():
    state = hand_built([[c(R, 1)], [c(G, 4)], [c(B, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1), c(K, 2)])
    state.apply(0, draw("DECK"))
    state.apply(0, place(0))
    assert state.active_seats() == [1]
    refused(state, 0, draw("DECK"), NotYourTurn, "not_your_turn")
    refused(state, 2, draw("DECK"), NotYourTurn, "not_your_turn")


@pytest.mark.parametrize(
    ("move", "field"),
    [
        ({}, "move"),
        ({"draw": {}, "play_duo": {}}, "move"),
        ({"shuffle": {}}, "move"),
        ("draw", "move"),
        ({"draw": 3}, "move.draw"),
        ({"draw": {"source": "DRAW_SOURCE_UNSPECIFIED"}}, "move.draw.source"),
        ({"draw": {"source": "TOP"}}, "move.draw.source"),
        ({"draw": {"source": "DRAW_SOURCE_DECK", "position": 1}}, "move.draw.position"),
        ({"play_duo": {"position": -1}}, "move.play_duo.position"),
        ({"play_duo": {"position": "0"}}, "move.play_duo.position"),
        ({"play_duo": {"position": True}}, "move.play_duo.position"),
        ({"play_duo": {"position": 9}}, "move.play_duo.position"),
    ],
)
def test_malformed_moves(move, field):
    state = hand_built([[c(R, 1), c(R, 2)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    refused(state, 0, move, MalformedMove, field)


def test_moves_of_the_wrong_phase_are_rule_violations():
    state = hand_built([[c(R, 1), c(R, 2)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    for move in (place(0), name(0), FLIP):
        refused(state, 0, move, RuleViolation, "wrong_phase")
    state.apply(0, draw("DECK"))
    for move in (draw("DECK"), duo(0), PASS, name(1)):
        refused(state, 0, move, RuleViolation, "wrong_phase")


def _ids(obj) -> set[int]:
    """Every card id in a view or event body."""
    found: set[int] = set()
    if isinstance(obj, dict):
        if {"id", "value", "color", "effect"} <= obj.keys():
            found.add(obj["id"])
        for v in obj.values():
            found |= _ids(v)
    elif isinstance(obj, list):
        for v in obj:
            found |= _ids(v)
    return found


def test_view_shows_own_hand_in_order_and_only_sizes_of_other_hands():
    state = State.new(3, 11, {})
    for seat in range(3):
        view = state.view(seat)
        assert [card["id"] for card in view["hand"]] == state.hands[seat]
        assert view["hand_sizes"] == [7, 7, 7]
        others = {card for s in range(3) if s != seat for card in state.hands[s]}
        assert not _ids(view) & (others | set(state.deck))
        assert "seed" not in json.dumps(view)
    spectator = state.view(None)
    assert spectator["hand"] == []
    assert _ids(spectator) == {state.left[-1], state.right[-1]}


def test_state_round_trips_through_json():
    state = State.new(4, 3, {"first_player": 1})
    state.apply(1, draw("DECK"))
    data = json.loads(json.dumps(state.to_dict()))
    assert State.from_dict(data) == state
    assert State.from_dict(data).to_dict() == state.to_dict()


# ---------------------------------------------------------------- review: rules without a hand-built test yet


def test_turns_go_clockwise_and_wrap_from_the_last_seat_to_seat_0():
    hands = [[c(R, 1)], [c(G, 4)], [c(B, 4)]]
    state = hand_built(hands, [c(B, 2)], [c(U, 0)], deck=[c(K, 1), c(K, 2), c(K, 3)], turn=2)
    state.apply(2, draw("DECK"))
    state.apply(2, place(0))
    assert state.active_seats() == [0] and state.turn == 0


def test_a_one_card_hand_cannot_play_a_duo_and_must_draw():
    state = hand_built([[c(R, 9)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    assert state.legal_moves(0) == [draw("DECK"), draw("LEFT"), draw("RIGHT")]
    refused(state, 0, duo(0), MalformedMove, "move.play_duo.position")


def test_emptied_right_stack_is_refilled_from_the_deck_note_a():
    state = hand_built([[c(R, 1)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1), c(K, 3)])
    events = state.apply(0, draw("RIGHT"))
    assert state.held == c(U, 0)
    assert state.right == [c(K, 3)] and state.deck == [c(K, 1)]
    assert bodies(events, "stack_refilled") == [{"stack": "STACK_RIGHT", "card": rules.card_dict(c(K, 3))}]
    assert state.view(1)["number_to_beat"] == 23


def test_drawing_an_effect_card_from_the_central_duo_does_nothing_note_b():
    # The "Draw a card" action takes a face-up 9 and then a face-up 5: neither triggers.
    for top, source in ((c(B, 9), "LEFT"), (c(U, 5), "RIGHT")):
        left, right = [c(B, 2), c(B, 9)], [c(U, 0), c(U, 5)]
        state = hand_built([[c(R, 1)], [c(G, 4)]], left, right, deck=[c(K, 1)])
        state.apply(0, draw(source))
        assert state.held == top
        events = state.apply(0, place(0))
        assert [next(iter(e.body)) for e in events] == ["card_placed"]
        assert state.pending == [] and state.value_side == "VALUE_SIDE_PLUS"
        assert state.active_seats() == [1] and state.phase == "PHASE_TURN"


def test_special_case_draw_card_on_the_right_take_back_the_left_flip_card():
    # 59: the Draw effect is the right card; resolved first on yourself, you take back the 5 (left
    # stack) and its Value-flip still triggers.
    state = hand_built([[c(R, 5), c(OR, 9), c(G, 0)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)])
    state.apply(0, duo(0))
    assert state.legal_moves(0) == [name(0), name(1), FLIP]
    state.apply(0, name(0))
    events = state.apply(0, draw("LEFT"))
    assert bodies(events, "card_drawn")[0]["card"]["id"] == c(R, 5) and state.left == [c(B, 2)]
    events = state.apply(0, place(0))
    assert state.hands[0] == [c(R, 5), c(G, 0)]
    assert bodies(events, "value_flipped") == [{"seat": 0, "value_side": "VALUE_SIDE_MINUS"}]
    assert state.active_seats() == [1]


def test_named_player_decides_alone_and_only_draws():
    state = hand_built(
        [[c(R, 9), c(OR, 7), c(G, 0)], [c(G, 4), c(G, 6)], [c(B, 1)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1)]
    )
    state.apply(0, duo(0))
    state.apply(0, name(1))
    assert state.legal_moves(1) == [draw("DECK"), draw("LEFT"), draw("RIGHT")]
    for move in (duo(0), PASS, name(0), FLIP, place(0)):
        refused(state, 1, move, RuleViolation, "wrong_phase")
    for seat in (0, 2):
        refused(state, seat, draw("DECK"), NotYourTurn, "not_your_turn")


def test_a_named_players_deck_draw_is_secret_to_them():
    state = hand_built(
        [[c(R, 9), c(OR, 7), c(G, 0)], [c(G, 4)], [c(B, 1)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1), c(K, 2)]
    )
    state.apply(0, duo(0))
    state.apply(0, name(2))
    events = state.apply(2, draw("DECK"))
    assert [(e.to, e.body) for e in events] == [
        (None, {"card_drawn": {"seat": 2, "source": "DRAW_SOURCE_DECK", "by_effect": True}}),
        ((2,), {"card_received": {"seat": 2, "card": rules.card_dict(c(K, 2))}}),
    ]
    assert state.view(2)["drawn_card"]["id"] == c(K, 2)
    for viewer in (0, 1, None):
        view = state.view(viewer)
        assert "drawn_card" not in view and c(K, 2) not in _ids(view)


def test_an_effect_draw_that_empties_a_stack_refills_it_note_a():
    # 99 on a one-card stack: the first named draw takes the left 9, the second the card under it,
    # which empties the left stack: the deck's top card replaces it.
    state = hand_built(
        [[c(R, 9), c(OR, 9), c(G, 0)], [c(G, 4)]], [c(B, 2)], [c(U, 0)], deck=[c(K, 1), c(K, 3)]
    )
    state.apply(0, duo(0))
    state.apply(0, name(1))
    state.apply(1, draw("LEFT"))
    state.apply(1, place(0))
    state.apply(0, name(1))
    events = state.apply(1, draw("LEFT"))
    assert state.held == c(B, 2) and state.left == [c(K, 3)] and state.deck == [c(K, 1)]
    assert bodies(events, "stack_refilled") == [{"stack": "STACK_LEFT", "card": rules.card_dict(c(K, 3))}]


def test_two_draw_effects_can_be_carried_out_with_an_empty_deck():
    # Empty deck, one card per stack: after the 99 each stack holds two cards, so both Draw effects
    # can be carried out (the first reshuffles the two cards under the tops into a deck).
    state = hand_built([[c(R, 9), c(OR, 9), c(G, 0)], [c(G, 4)]], [c(B, 2)], [c(U, 1)], deck=[])
    state.apply(0, duo(0))
    state.apply(0, name(1))
    events = state.apply(1, draw("DECK"))
    assert bodies(events, "deck_reshuffled") == [{"deck_size": 2}]
    assert state.left == [c(R, 9)] and state.right == [c(OR, 9)] and len(state.deck) == 1
    state.apply(1, place(0))
    assert state.legal_moves(0) == [name(0), name(1)]
    state.apply(0, name(1))
    assert draw("DECK") in state.legal_moves(1)
    state.apply(1, draw("DECK"))
    state.apply(1, place(0))
    assert sorted(state.hands[1]) == sorted([c(B, 2), c(U, 1), c(G, 4)])
    assert state.active_seats() == [1] and state.phase == "PHASE_TURN"


def test_round_winner_when_nobody_went_out_ties_go_to_the_earliest_seat_from_the_round_start():
    # Deck empty, one card per stack, nobody can play on yellow-pink 98: a full cycle of passes.
    hands = [[c(R, 1), c(R, 2)], [c(G, 3), c(OR, 0)], [c(B, 1), c(B, 2)]]
    state = hand_built(hands, [c(Y, 9)], [c(K, 8)], deck=[], round_start=1, turn=1)
    for seat in (1, 2, 0):
        events = state.apply(seat, PASS)
    (ended,) = bodies(events, "round_ended")
    assert ended["round_points"] == [3, 3, 3] and ended["round_winner"] == 1
    assert state.round == 2 and state.round_start == 2 and state.active_seats() == [2]


def test_next_round_starts_at_seat_0_when_the_last_seat_went_out():
    state = hand_built(
        [[c(R, 1)], [c(G, 3)], [c(B, 7), c(B, 8)]], [c(Y, 2)], [c(K, 0)], deck=[c(K, 1)], turn=2
    )
    events = state.apply(2, duo(0))
    assert bodies(events, "round_ended")[0]["round_winner"] == 2
    assert state.round == 2 and state.round_start == 0 and state.active_seats() == [0]


def test_a_round_nobody_went_out_can_end_the_game():
    hands = [[c(R, 1), c(R, 2)], [c(G, 8), c(OR, 7)]]
    state = hand_built(hands, [c(Y, 9)], [c(K, 8)], deck=[], totals=[10, 15])
    state.apply(0, PASS)
    events = state.apply(1, PASS)
    (ended,) = bodies(events, "round_ended")
    assert ended["went_out"] is False and ended["total_scores"] == [13, 30]
    assert ended["game_over"] is True and state.is_over() and state.winners() == [0]
    assert not bodies(events, "round_started")


def test_a_duo_after_a_pass_makes_drawing_possible_again_so_the_next_seat_may_not_pass():
    # Seat 1 can play the 44 Happy Mochi; seats 0 and 2 cannot act. Seat 0 passes, seat 1 plays.
    hands = [[c(R, 1)], [c(G, 4), c(B, 4), c(OR, 2)], [c(B, 1)]]
    state = hand_built(hands, [c(Y, 9)], [c(K, 8)], deck=[])
    state.apply(0, PASS)
    state.apply(1, duo(0))
    # the Duo put cards under the tops: a draw is possible again, so nobody may pass
    assert state.legal_moves(2) == [draw("DECK"), draw("LEFT"), draw("RIGHT")]
    refused(state, 2, PASS, RuleViolation, "pass_not_allowed")
