"""More: one hand-built position per rule (docs/rules/more.md)."""

from __future__ import annotations

import json

import pytest

from services.engine import BadOptions, MalformedMove, NotYourTurn, RuleViolation
from services.more.cards import half_points, is_dirty, parse_meld, points, wild_index
from services.more.rules import GAME, State
from services.more.scoring import match_winners, solo_score
from tests.engine_checks import refused as refused_unchanged
from tests.more.helpers import all_cards, c, check_invariants, cs, hand_points, meld, position

OPTS = {"bid_for_solo": False, "max_rounds": 0}


def refused(state: State, seat: int, move: dict, exc: type, rule: str) -> None:
    refused_unchanged(state, seat, move, exc, rule)
    assert move not in state.legal_moves(seat)


def lay(cards: list[int]) -> dict:
    return {"lay_meld": {"cards": cards}}


def add(index: int, card: int, low_end: bool = False) -> dict:
    return {"add_to_meld": {"meld": index, "card": card, "low_end": low_end}}


def discard(card: int) -> dict:
    return {"discard": {"card": card}}


# ---- setup, deal, roles ----


def test_game_info_and_options():
    assert (GAME.name, GAME.package, GAME.service, GAME.min_players, GAME.max_players) == (
        "more",
        "more",
        "More",
        3,
        3,
    )
    assert {o.name: o.default for o in GAME.options} == {"bid_for_solo": False, "max_rounds": 0}
    for players in (2, 4):
        with pytest.raises(BadOptions):
            State.new(players, 1, OPTS)
    for bad in ({"colour": 1}, {"bid_for_solo": 1}, {"max_rounds": -1}, {"max_rounds": "3"}):
        with pytest.raises(BadOptions):
            State.new(3, 1, {**OPTS, **bad})


def test_deal_106_cards_11_each_two_more_piles_and_initial_discard():
    state = State.new(3, 5, OPTS)
    s = state.to_dict()
    assert [len(h) for h in s["hands"]] == [11, 11, 11]
    assert len(s["more"]["pair"]) == len(s["more"]["solo"]) == 11
    assert len(s["discard"]) == 1
    assert len(s["draw"]) == 106 - 33 - 22 - 1 == 50
    assert sorted(all_cards(state)) == list(range(106))
    json.dumps(s)


def test_first_round_solo_is_left_of_dealer_who_plays_first_and_turns_go_clockwise():
    for seed in range(6):
        state = State.new(3, seed, OPTS)
        s = state.to_dict()
        left = (s["dealer"] + 1) % 3
        assert s["solo"] == left and s["turn"] == left and state.active_seats() == [left]
        assert state.view(0)["roles"][left] == "ROLE_SOLO"
        hand = s["hands"][left]
        state.apply(left, {"draw": {}})
        state.apply(left, discard(state.to_dict()["hands"][left][0]))
        assert state.active_seats() == [(left + 1) % 3]
        assert len(hand) == 11


def test_dealer_rotates_and_next_solo_is_lowest_score():
    state = position([cs("3C 4C 5C"), cs("3D 9D KD"), cs("3H 9H KH")], solo=0, turn=1, scores=(0, 0, 0))
    d = state.to_dict()
    d["draw"], d["more_state"], d["more"] = [], {"pair": "taken", "solo": "taken"}, {"pair": [], "solo": []}
    state = State.from_dict(d)
    dealer = d["dealer"]
    state.apply(1, discard(c("3D")))  # the draw pile is empty, nothing to refill: the round ends
    s = state.to_dict()
    assert s["round"] == 2 and s["dealer"] == (dealer + 1) % 3
    # both More piles taken, no melds: each loses his hand (the Solo's -15 is negative: not multiplied)
    assert s["rounds"][0]["totals"] == [-15, -20, -25]
    assert s["solo"] == 2
    assert s["rounds"][0]["end"] == "ROUND_END_EXHAUSTED"


def _choose(scores, history, dealer):
    state = State.new(3, 3, OPTS)
    d = state.to_dict()
    d.update(scores=list(scores), solo_history=list(history), dealer=dealer)
    return State.from_dict(d)._choose_solo()


def test_roles_lowest_cumulative_score_is_solo():
    assert _choose((500, 200, 900), [0], 0) == 1


def test_roles_tiebreak_solo_least_recently():
    # seats 1 and 2 tie on 200; seat 2 was Solo in round 2, seat 1 in round 1: seat 1 less recently
    assert _choose((500, 200, 200), [1, 2, 0], 0) == 1
    # never Solo is least recent of all
    assert _choose((500, 200, 200), [1, 1, 0], 0) == 2


def test_roles_tiebreak_left_of_dealer():
    assert _choose((100, 100, 100), [], 0) == 1
    assert _choose((100, 100, 100), [], 2) == 0
    assert _choose((300, 100, 100), [0], 2) == 1  # seats 1, 2 tied and never Solo: 1 is nearer the left


def test_roles_two_consecutive_solo_cap_gives_second_lowest():
    assert _choose((100, 200, 300), [0, 0], 1) == 1
    assert _choose((100, 200, 300), [1, 0], 1) == 0  # only one consecutive round: no cap


# ---- the turn ----


def test_draw_then_meld_then_one_discard():
    hand = cs("3S 4S 5S 9H")
    state = position([cs("KC KD KH"), hand, cs("QC QD QH")], turn=1, phase="draw")
    top = state.to_dict()["draw"][-1]
    refused(state, 1, lay(cs("3S 4S 5S")), RuleViolation, "draw_first")
    refused(state, 1, discard(c("9H")), RuleViolation, "draw_first")
    events = state.apply(1, {"draw": {}})
    assert top in state.to_dict()["hands"][1]
    assert events[0].body == {"card_drawn": {"seat": 1}} and events[0].to is None
    assert events[1].to == (1,) and events[1].body["drew_card"]["card"]["id"] == top
    refused(state, 1, {"draw": {}}, RuleViolation, "already_drew")
    refused(state, 1, {"take_pile": {}}, RuleViolation, "already_drew")
    state.apply(1, lay(cs("3S 4S 5S")))
    state.apply(1, discard(c("9H")))
    assert state.active_seats() == [2] and state.to_dict()["discard"][-1] == c("9H")
    refused(state, 1, {"draw": {}}, NotYourTurn, "not_your_turn")


def test_take_pile_needs_top_card_meldable():
    state = position(
        [cs("KC KD KH"), cs("3S 4S 9H"), cs("QC QD QH")], turn=1, phase="draw", discard=[c("KS")]
    )
    refused(state, 1, {"take_pile": {}}, RuleViolation, "take_pile_meld_top")
    assert {"take_pile": {}} not in state.legal_moves(1)


def test_take_pile_then_top_card_must_be_melded_rest_locked_and_kept():
    pile = [c("8D"), c("9D"), c("5S")]
    state = position([cs("KC KD KH"), cs("3S 4S 9H 10D"), cs("QC QD QH")], turn=1, phase="draw", discard=pile)
    assert {"take_pile": {}} in state.legal_moves(1)
    state.apply(1, {"take_pile": {}})
    s = state.to_dict()
    assert s["discard"] == [] and set(pile) <= set(s["hands"][1])
    assert state.view(0)["must_meld_top"] and state.view(0)["top_card"] == c("5S")
    refused(state, 1, discard(c("9H")), RuleViolation, "meld_top_card")
    refused(state, 1, discard(c("5S")), RuleViolation, "meld_top_card")
    # the rest of the pile cannot be melded this turn, though 8D 9D 10D is a run
    refused(state, 1, lay([c("8D"), c("9D"), c("10D")]), RuleViolation, "pile_cards_locked")
    state.apply(1, lay(cs("3S 4S 5S")))
    state.apply(1, discard(c("8D")))  # a locked card may still be discarded
    assert c("9D") in state.to_dict()["hands"][1]


def test_take_pile_by_adding_top_to_own_side_meld_before_going_down():
    melds = [meld("pair", cs("5H 6H 7H"))]  # the partner's meld: seat 1 has not gone down himself
    state = position(
        [cs("KC KD KH"), cs("9S 10S"), cs("QC QD QH")], turn=1, phase="draw", melds=melds, discard=[c("8H")]
    )
    state.apply(1, {"take_pile": {}})
    state.apply(1, add(0, c("8H")))
    state.apply(1, discard(c("9S")))
    assert state.to_dict()["melds"][0]["cards"] == cs("5H 6H 7H 8H")


def test_take_back_returns_pile_and_then_you_must_draw():
    pile = [c("9D"), c("5S")]
    state = position([cs("KC KD KH"), cs("3S 4S 9H"), cs("QC QD QH")], turn=1, phase="draw", discard=pile)
    before = state.to_dict()
    state.apply(1, {"take_pile": {}})
    state.apply(1, lay(cs("3S 4S 5S")))
    events = state.apply(1, {"take_back": {}})
    assert events[0].body["took_back"]["pile_returned"] is True
    s = state.to_dict()
    assert s["discard"] == pile and s["hands"][1] == before["hands"][1] and s["melds"] == []
    assert s["phase"] == "draw"
    refused(state, 1, {"take_pile": {}}, RuleViolation, "pile_given_back")
    state.apply(1, {"draw": {}})
    refused(state, 1, lay(cs("3S 4S 5S")), RuleViolation, "melding_closed")


def test_take_back_melds_after_draw():
    state = position([cs("KC KD KH"), cs("3S 4S 5S 9H 9D"), cs("QC QD QH")], turn=1)
    refused(state, 1, {"take_back": {}}, RuleViolation, "nothing_to_take_back")
    state.apply(1, lay(cs("3S 4S 5S")))
    state.apply(1, {"take_back": {}})
    assert state.to_dict()["melds"] == [] and sorted(state.to_dict()["hands"][1]) == sorted(
        cs("3S 4S 5S 9H 9D")
    )
    refused(state, 1, lay(cs("3S 4S 5S")), RuleViolation, "melding_closed")
    assert all("discard" in m for m in state.legal_moves(1))


# ---- melds ----


def test_runs_only_no_sets_no_mixed_suits_at_least_three():
    state = position([cs("KC KD KH"), cs("9S 9H 9D 5S 6S 7H 3S 4S"), cs("QC QD QH")], turn=1)
    refused(state, 1, lay(cs("9S 9H 9D")), RuleViolation, "runs_only")
    refused(state, 1, lay(cs("5S 6S 7H")), RuleViolation, "runs_only")
    refused(state, 1, lay(cs("3S 4S")), RuleViolation, "meld_too_short")
    refused(state, 1, lay(cs("4S 3S 5S")), RuleViolation, "runs_only")  # listed low to high


def test_ace_low_and_high_but_never_around():
    hand = [*cs("AS 2S 3S QH KH AH KD AD"), c("2D", 1)]
    state = position([cs("KC 5C 6C"), hand, cs("QC JC 10C")], turn=1)
    ok = State.from_dict(state.to_dict())
    ok.apply(1, lay(cs("AS 2S 3S")))
    ok.apply(1, lay(cs("QH KH AH")))
    refused(state, 1, lay([c("KD"), c("AD"), c("2D", 1)]), RuleViolation, "runs_only")


def test_run_cannot_grow_past_fourteen_cards():
    full = [c("AS"), *[c(f"{r}S") for r in range(2, 11)], *cs("JS QS KS"), c("AS", 1)]
    assert len(full) == 14
    state = position(
        [cs("KC 5C 6C"), [c("JK"), *cs("9H 9D")], cs("QC JC 10C")], turn=1, melds=[meld("pair", full)]
    )
    refused(state, 1, add(0, c("JK"), low_end=True), RuleViolation, "meld_fit")
    refused(state, 1, add(0, c("JK"), low_end=False), RuleViolation, "meld_fit")


def test_at_most_one_pankal_per_meld():
    hand = [*cs("5S 7S JK 9H 10H"), c("JK", 1), c("2D")]
    melds = [meld("pair", [c("8C"), c("JK", 1), c("10C")])]
    hand.remove(c("JK", 1))
    state = position([cs("KC 5C 6C"), hand, cs("QC JC 10D")], turn=1, melds=melds)
    refused(state, 1, lay([c("5S"), c("2D"), c("7S"), c("JK")]), RuleViolation, "one_pankal")
    refused(state, 1, add(0, c("2D")), RuleViolation, "meld_fit")  # the meld has its pankal already
    state.apply(1, lay([c("5S"), c("JK"), c("7S")]))
    assert is_dirty(state.to_dict()["melds"][1])


def test_natural_two_keeps_the_meld_pure_other_twos_are_pankals():
    pure, _ = parse_meld(cs("AS 2S 3S 4S"))
    assert pure is not None and wild_index(pure) == -1 and not is_dirty(pure)
    other, _ = parse_meld(cs("AS 2H 3S"))
    assert other is not None and wild_index(other) == 1 and is_dirty(other)
    misplaced, _ = parse_meld(cs("4S 2S 6S"))  # 2S standing in for 5S is the pankal
    assert misplaced is not None and wild_index(misplaced) == 1
    joker, _ = parse_meld([c("AS"), c("JK"), c("3S")])
    assert joker is not None and is_dirty(joker)
    # a natural 2 plus a pankal is still one pankal
    both, _ = parse_meld([c("AS"), c("2S"), c("3S"), c("JK"), c("5S")])
    assert both is not None and wild_index(both) == 3
    # adding the natural 2 at the low end of 3S-4S-5S keeps it pure
    state = position(
        [cs("KC 5C 6C"), cs("2S 9H 9D"), cs("QC JC 10C")], turn=1, melds=[meld("pair", cs("3S 4S 5S"))]
    )
    state.apply(1, add(0, c("2S"), low_end=True))
    assert not is_dirty(state.to_dict()["melds"][0])


def test_ace_sets_only_above_1500_for_the_player_himself():
    hand = [*cs("AS AH AD 9H 9D"), c("AS", 1)]
    for score, ok in ((1500, False), (1501, True)):
        scores = (0, score, 2500)  # the partner (seat 2) is far above 1500: no help
        melds = [meld("pair", [*cs("9S 10S JS QS KS"), c("2C")])]
        state = position([cs("KC 5C 6C"), hand, cs("QC JC 10C")], turn=1, scores=scores, melds=melds)
        if ok:
            state.apply(1, lay(cs("AS AH AD")))
            state.apply(1, add(1, c("AS", 1)))
            assert state.to_dict()["melds"][1]["kind"] == "ace_set"
        else:
            refused(state, 1, lay(cs("AS AH AD")), RuleViolation, "ace_set_1500")


def test_adding_to_an_ace_set_also_needs_1500():
    melds = [meld("pair", cs("AC AH AD"))]
    state = position(
        [cs("KC 5C 6C"), cs("AS 9H 9D"), cs("QC JC 10C")], turn=1, scores=(0, 1500, 2000), melds=melds
    )
    refused(state, 1, add(0, c("AS")), RuleViolation, "ace_set_1500")


def test_partners_share_melds_but_not_the_solos():
    melds = [meld("pair", cs("5H 6H 7H")), meld("solo", cs("5D 6D 7D"))]
    state = position([cs("KC 5C 6C"), cs("8H 8D 9S"), cs("QC JC 10C")], turn=1, solo=0, melds=melds)
    refused(state, 1, add(1, c("8D")), RuleViolation, "own_side_melds")
    state.apply(1, add(0, c("8H")))
    assert state.to_dict()["melds"][0]["cards"][-1] == c("8H")


def test_going_down_point_values():
    assert [half_points(c(x)) for x in ("JK", "AS", "2S", "8S", "KS", "3S", "7S")] == [4, 3, 2, 2, 2, 1, 1]
    assert [points(c(x)) for x in ("JK", "AS", "2S", "8S", "KS", "3S", "7S")] == [20, 15, 10, 10, 10, 5, 5]


def test_going_down_above_1500_needs_7_5_below_not():
    # 8S 9S 10S = 3.0; JH QH KH = 3.0; 3D 4D 5D = 1.5 -> 7.5 exactly; without the diamonds 6.0
    hand = cs("8S 9S 10S JH QH KH 3D 4D 5D 9C 9C")
    hand[-1] = c("9C", 1)
    for score, need in ((1500, False), (1501, True)):
        state = position([cs("KC 5C 6C"), hand, cs("QC JC 10C")], turn=1, scores=(0, score, 0))
        assert state.view(1)["opening"] is need
        state.apply(1, lay(cs("8S 9S 10S")))
        state.apply(1, lay(cs("JH QH KH")))
        if need:
            refused(state, 1, discard(c("9C")), RuleViolation, "going_down_7_5")
            state.apply(1, lay(cs("3D 4D 5D")))
            assert state.view(1)["opening_half_points"] == 15
        state.apply(1, discard(c("9C")))
        assert state.active_seats() == [2]


def test_solo_above_1500_follows_the_7_5_rule_and_jokers_count_2():
    hand = [c("JK"), *cs("4S 5S 9C 9D")]
    state = position([hand, cs("KC 5C 6C"), cs("QC JC 10C")], turn=0, solo=0, scores=(1600, 0, 0))
    state.apply(0, lay([c("JK"), *cs("4S 5S")]))  # 2.0 + 0.5 + 0.5 = 3.0
    assert state.view(0)["opening_half_points"] == 6
    refused(state, 0, discard(c("9C")), RuleViolation, "going_down_7_5")


def test_partner_exempt_once_the_pair_has_gone_down():
    melds = [meld("pair", cs("5H 6H 7H"))]
    hand = cs("3S 4S 5S 9D 9C")
    state = position([cs("KC 5C 6C"), hand, cs("QC JC 10C")], turn=1, scores=(0, 2000, 0), melds=melds)
    assert state.view(1)["opening"] is False
    state.apply(1, lay(cs("3S 4S 5S")))
    state.apply(1, discard(c("9D")))


def test_not_melding_at_all_needs_no_minimum():
    state = position([cs("KC 5C 6C"), cs("3S 4S 5S 9D"), cs("QC JC 10C")], turn=1, scores=(0, 2000, 0))
    state.apply(1, discard(c("9D")))


# ---- biribas and More piles ----


def test_biriba_pure_and_dirty():
    pure = meld("pair", cs("3S 4S 5S 6S 7S 8S 9S"))
    dirty = meld("pair", [*cs("3H 4H 5H"), c("JK"), *cs("7H 8H 9H")])
    short = meld("pair", cs("3D 4D 5D 6D 7D 8D"))
    state = position([[], [], []], melds=[pure, dirty, short])
    views = state.view(None)["melds"]
    assert [(m["biriba"], m["dirty"]) for m in views] == [(True, False), (True, True), (False, False)]


def test_more_pile_pickup_mid_turn_by_melding_after_a_biriba():
    biriba = meld("pair", cs("3S 4S 5S 6S 7S 8S 9S"))
    state = position([cs("KC 5C 6C"), cs("10S JS QS"), cs("QC JC 10C")], turn=1, melds=[biriba])
    pile = state.to_dict()["more"]["pair"]
    state.apply(1, add(0, c("10S")))
    state.apply(1, add(0, c("JS")))
    events = state.apply(1, add(0, c("QS")))
    s = state.to_dict()
    assert s["hands"][1] == pile and s["more_state"]["pair"] == "taken" and s["phase"] == "play"
    public = [e for e in events if e.to is None]
    assert {"more_pile_taken": {"seat": 1, "side": "ROLE_PAIR", "count": 11}} in [e.body for e in public]
    assert all("more_pile_cards" not in e.body for e in public)
    assert [e.to for e in events if "more_pile_cards" in e.body] == [(1,)]
    assert s["hands"][2] == cs("QC JC 10C")  # only the partner who emptied his hand picks it up
    assert not state.view(1)["can_take_back"]


def test_more_pile_pickup_by_discard():
    biriba = meld("solo", [*cs("3S 4S 5S 6S 7S 8S"), c("JK")])
    state = position([cs("9D"), cs("KC 5C 6C"), cs("QC JC 10C")], turn=0, solo=0, melds=[biriba])
    pile = state.to_dict()["more"]["solo"]
    state.apply(0, discard(c("9D")))
    s = state.to_dict()
    assert s["hands"][0] == pile and s["more_state"]["solo"] == "taken" and s["turn"] == 1


def test_emptying_the_hand_without_a_biriba_is_illegal():
    state = position([cs("KC 5C 6C"), cs("3S 4S 5S"), cs("QC JC 10C")], turn=1)
    refused(state, 1, lay(cs("3S 4S 5S")), RuleViolation, "empty_hand")
    one = position([cs("KC 5C 6C"), cs("9D"), cs("QC JC 10C")], turn=1)
    refused(one, 1, discard(c("9D")), RuleViolation, "empty_hand")
    # leaving a single card that could not be discarded is refused too
    four = position([cs("KC 5C 6C"), cs("3S 4S 5S 9D"), cs("QC JC 10C")], turn=1)
    refused(four, 1, lay(cs("3S 4S 5S")), RuleViolation, "empty_hand")


def test_going_out_only_by_discard_with_both_biribas_and_the_pile_taken():
    pure = meld("pair", cs("3S 4S 5S 6S 7S 8S 9S"))
    dirty = meld("pair", [*cs("3H 4H 5H"), c("JK"), *cs("7H 8H 9H")])
    taken = {"pair": "taken", "solo": "waiting"}
    hand = cs("10S 9D")
    state = position([cs("KC 5C 6C"), hand, cs("QC JC 10C")], turn=1, melds=[pure, dirty], more_state=taken)
    # melding down to one card is fine now (it can be discarded to go out) ...
    state.apply(1, add(0, c("10S")))
    # ... but the last card may not be melded
    one = position(
        [cs("KC 5C 6C"), cs("10S"), cs("QC JC 10C")], turn=1, melds=[pure, dirty], more_state=taken
    )
    refused(one, 1, add(0, c("10S")), RuleViolation, "meld_last_card")
    events = state.apply(1, discard(c("9D")))
    assert state.to_dict()["rounds"][0]["went_out"] == 1
    assert any(e.body.get("discarded", {}).get("went_out") for e in events)


def test_no_going_out_without_both_biribas_or_before_the_pile_is_taken():
    pure = meld("pair", cs("3S 4S 5S 6S 7S 8S 9S"))
    dirty = meld("pair", [*cs("3H 4H 5H"), c("JK"), *cs("7H 8H 9H")])
    taken = {"pair": "taken", "solo": "waiting"}
    only_pure = position([cs("KC 5C 6C"), cs("9D"), cs("QC JC 10C")], turn=1, melds=[pure], more_state=taken)
    refused(only_pure, 1, discard(c("9D")), RuleViolation, "empty_hand")
    # both biribas but the pile still waiting: the discard takes the pile, the round goes on
    waiting = position([cs("KC 5C 6C"), cs("9D"), cs("QC JC 10C")], turn=1, melds=[pure, dirty])
    waiting.apply(1, discard(c("9D")))
    assert waiting.to_dict()["round"] == 1 and len(waiting.to_dict()["hands"][1]) == 11


def test_the_solo_needs_both_biribas_too():
    pure = meld("solo", cs("3S 4S 5S 6S 7S 8S 9S"))
    taken = {"pair": "waiting", "solo": "taken"}
    state = position(
        [cs("9D"), cs("KC 5C 6C"), cs("QC JC 10C")], turn=0, solo=0, melds=[pure], more_state=taken
    )
    refused(state, 0, discard(c("9D")), RuleViolation, "empty_hand")


# ---- draw pile exhausted ----


def _empty_draw(state: State) -> State:
    d = state.to_dict()
    d["draw"] = []
    return State.from_dict(d)


def test_exhausted_with_both_more_piles_waiting_shuffles_them_together():
    state = _empty_draw(position([cs("KC 5C 6C"), cs("3S 9D"), cs("QC JC 10C")], turn=1))
    piles = state.to_dict()["more"]
    events = state.apply(1, discard(c("9D")))
    s = state.to_dict()
    assert sorted(s["draw"]) == sorted(piles["pair"] + piles["solo"])
    assert s["more_state"] == {"pair": "drawn", "solo": "drawn"}
    assert {"draw_pile_refilled": {"source": "REFILL_BOTH_MORE_PILES", "size": 22}} in [
        e.body for e in events
    ]


def test_exhausted_with_one_more_pile_taken_uses_the_other():
    taken = {"pair": "taken", "solo": "waiting"}
    state = _empty_draw(position([cs("KC 5C 6C"), cs("3S 9D"), cs("QC JC 10C")], turn=1, more_state=taken))
    pile = state.to_dict()["more"]["solo"]
    state.apply(1, discard(c("9D")))
    s = state.to_dict()
    assert s["draw"] == pile and s["more_state"]["solo"] == "drawn" and s["turn"] == 2


def test_exhausted_with_nothing_left_ends_the_round_without_going_out():
    gone = {"pair": "taken", "solo": "drawn"}
    state = _empty_draw(position([cs("KC 5C 6C"), cs("3S 9D"), cs("QC JC 10C")], turn=1, more_state=gone))
    state.apply(1, discard(c("9D")))
    result = state.to_dict()["rounds"][0]
    assert result["end"] == "ROUND_END_EXHAUSTED" and result["went_out"] == -1
    assert all(seat["go_out_bonus"] == 0 for seat in result["seats"])
    # the Solo's pile went into the draw pile without being taken: -100 for the Solo
    assert result["seats"][0]["more_penalty"] == 100 and result["seats"][1]["more_penalty"] == 0


# ---- scoring ----


def test_solo_worked_example_930():
    total, multiplied = solo_score(400 - 80 + 200, 0)
    assert (total, multiplied) == (780, True)
    assert total + 150 == 930


def test_solo_order_of_operations():
    assert solo_score(333, 0) == (499, True)  # 499.5 rounded down
    assert solo_score(150, 100) == (75, True)  # penalty before the multiplier
    assert solo_score(50, 100) == (-50, False)  # negative: not multiplied
    assert solo_score(-200, 0) == (-200, False)


def test_solo_worked_example_as_a_round():
    # exactly the rulebook's numbers: 400 melded with one pure biriba, 80 in hand, Solo goes out last move
    melds = [
        meld("solo", cs("8S 9S 10S JS QS KS AS")),  # 75, pure biriba
        meld("solo", cs("8H 9H 10H JH QH KH")),  # 60
        meld("solo", cs("8D 9D 10D JD QD KD")),  # 60
        meld("solo", cs("8C 9C 10C JC QC KC")),  # 60
        meld("solo", [c("8S", 1), c("9S", 1), c("10S", 1), c("JS", 1), c("QS", 1), c("KS", 1)]),  # 60
        meld("solo", [c("8H", 1), c("9H", 1), c("10H", 1), c("JH", 1), c("QH", 1)]),  # 50
        meld("solo", [c("3D", 1), c("4D", 1), c("5D", 1)]),  # 15
        meld("solo", [c("3C", 1), c("4C", 1), c("5C", 1), c("6C", 1)]),  # 20
    ]
    assert sum(points(x) for m in melds for x in m["cards"]) == 400
    hand = [c(x, 1) for x in ("KD", "QD", "JD", "10D", "9D", "8D", "7D", "6D", "3H", "4H")]
    assert hand_points(hand) == 6 * 10 + 4 * 5 == 80
    taken = {"pair": "taken", "solo": "taken"}
    state = position([hand, cs("3H"), cs("4H")], solo=0, turn=1, melds=melds, more_state=taken)
    solo = state.round_result(-1)["seats"][0]
    assert (solo["meld_points"], solo["biriba_bonus"], solo["hand_points"]) == (400, 200, 80)
    assert solo["total"] == 780 and solo["solo_bonus"] == 0
    # the same table with the Solo having gone out (the +100 go-out bonus joins the net, then +150)
    state2 = position([[], cs("3H"), cs("4H")], solo=0, turn=1, melds=melds, more_state=taken)
    out = state2.round_result(0)["seats"][0]
    assert out["total"] == (400 + 200 + 100) * 3 // 2 + 150


def test_pair_round_scored_exactly():
    melds = [
        meld("pair", cs("3S 4S 5S 6S 7S 8S 9S")),  # 5*5 + 10*2 = 45, pure: +200
        meld("pair", [*cs("3H 4H 5H"), c("JK"), *cs("7H 8H 9H")]),  # 5*4 + 20 + 20 = 60, dirty: +100
        meld("pair", cs("QD KD AD")),  # 35
        meld("solo", cs("8C 9C 10C")),  # 30
    ]
    hands = [cs("KC"), [], cs("AH 3D")]  # the Solo holds 10; seat 2 holds 20
    taken = {"pair": "taken", "solo": "waiting"}
    state = position(hands, solo=0, turn=1, melds=melds, more_state=taken)
    result = state.round_result(1)
    p1, p2, solo = result["seats"][1], result["seats"][2], result["seats"][0]
    assert (p1["meld_points"], p1["biriba_bonus"]) == (140, 300) == (p2["meld_points"], p2["biriba_bonus"])
    assert p1["total"] == 140 + 300 + 100 - 0
    assert p2["total"] == 140 + 300 - 20
    assert solo["total"] == 30 - 10 - 100  # -80: negative, not multiplied
    assert not solo["multiplied"]
    # the Pair's pile never taken: -100 to each partner
    state = position(hands, solo=0, turn=1, melds=melds)
    result = state.round_result(-1)
    assert (
        result["seats"][1]["total"] == 140 + 300 - 100 and result["seats"][2]["total"] == 140 + 300 - 20 - 100
    )


# ---- game end ----


def test_game_ends_at_3100_highest_wins_then_the_one_who_went_out():
    assert match_winners([3200, 3150, 1000], 1) == [0]
    assert match_winners([3200, 3200, 1000], 1) == [1]
    assert match_winners([3200, 3200, 1000], 2) == [0, 1]
    assert match_winners([3200, 3200, 1000], -1) == [0, 1]


def test_round_end_reaching_3100_finishes_the_match():
    gone = {"pair": "taken", "solo": "drawn"}
    melds = [meld("pair", cs("8S 9S 10S"))]
    state = _empty_draw(
        position(
            [cs("KC"), cs("3S 9D"), cs("QC")], turn=1, more_state=gone, melds=melds, scores=(0, 3090, 3090)
        )
    )
    state.apply(1, discard(c("9D")))
    assert state.is_over() and state.active_seats() == [] and state.legal_moves(1) == []
    assert state.scores() == [0 - 10 - 100 + 0, 3090 + 30 - 5, 3090 + 30 - 10]
    assert state.winners() == [1]
    assert state.view(None)["phase"] == "PHASE_OVER"


def test_max_rounds_option_ends_the_match():
    opts = {"bid_for_solo": False, "max_rounds": 1}
    gone = {"pair": "taken", "solo": "drawn"}
    state = _empty_draw(position([cs("KC"), cs("3S 9D"), cs("QC")], turn=1, more_state=gone, options=opts))
    state.apply(1, discard(c("9D")))
    assert state.is_over()


# ---- Bid-for-Solo ----


def test_bidding_sealed_simultaneous_then_highest_pays_each_opponent():
    opts = {"bid_for_solo": True, "max_rounds": 0}
    state = State.new(3, 11, opts)
    s = state.to_dict()
    assert s["phase"] == "bidding" and state.active_seats() == [0, 1, 2]
    assert all(h == [] for h in s["hands"])  # bids come before anyone sees a hand
    assert state.legal_moves(0) == [{"bid": {"amount": a}} for a in range(4)]
    refused(state, 0, {"draw": {}}, RuleViolation, "bid_first")
    refused(state, 0, {"bid": {"amount": 4}}, MalformedMove, "move.bid.amount")
    events = state.apply(0, {"bid": {"amount": 2}})
    assert [e.body for e in events] == [{"bid_placed": {"seat": 0}}]
    assert state.view(1)["my_bid"] == -1 and state.view(0)["my_bid"] == 2
    assert state.view(1)["bids"] == [] and state.view(1)["bid_made"] == [True, False, False]
    refused(state, 0, {"bid": {"amount": 1}}, NotYourTurn, "not_your_turn")
    state.apply(2, {"bid": {"amount": 1}})
    events = state.apply(1, {"bid": {"amount": 0}})
    revealed = next(e.body["bids_revealed"] for e in events if "bids_revealed" in e.body)
    assert revealed["bids"] == [2, 0, 1] and revealed["solo"] == 0 and revealed["payment"] == 2
    assert state.scores() == [-4, 2, 2]
    assert state.to_dict()["solo"] == 0 and state.view(2)["bids"] == [2, 0, 1]


def test_bid_tie_goes_to_the_left_of_the_dealer():
    opts = {"bid_for_solo": True, "max_rounds": 0}
    state = State.new(3, 11, opts)
    dealer = state.to_dict()["dealer"]
    for seat in range(3):
        state.apply(seat, {"bid": {"amount": 3}})
    assert state.to_dict()["solo"] == (dealer + 1) % 3


def test_bid_winner_exempt_from_the_consecutive_cap():
    opts = {"bid_for_solo": True, "max_rounds": 0}
    d = State.new(3, 11, opts).to_dict()
    d["solo_history"] = [0, 0]
    state = State.from_dict(d)
    for seat, amount in ((0, 3), (1, 0), (2, 1)):
        state.apply(seat, {"bid": {"amount": amount}})
    assert state.to_dict()["solo"] == 0 and state.to_dict()["solo_history"] == [0, 0, 0]


# ---- malformed moves, views ----


def test_malformed_moves():
    state = position([cs("KC 5C 6C"), cs("3S 4S 5S 9H"), cs("QC JC 10C")], turn=1)
    refused(state, 1, {"fly": {}}, MalformedMove, "move")
    refused(state, 1, {"draw": {}, "discard": {"card": 1}}, MalformedMove, "move")
    refused(state, 1, discard(106), MalformedMove, "move.discard.card")
    refused(state, 1, {"discard": {"card": "x"}}, MalformedMove, "move.discard.card")
    refused(state, 1, {"discard": {"card": 3, "extra": 1}}, MalformedMove, "move.discard.extra")
    refused(state, 1, add(5, c("9H")), MalformedMove, "move.add_to_meld.meld")
    refused(state, 1, lay([c("3S"), c("3S"), c("4S")]), MalformedMove, "move.lay_meld.cards")
    refused(state, 1, discard(c("KC")), RuleViolation, "not_in_hand")
    refused(state, 2, discard(c("QC")), NotYourTurn, "not_your_turn")


def test_view_shows_own_hand_only_and_everything_public():
    pile = [c("9D"), c("5S")]
    state = position(
        [cs("KC 5C 6C"), cs("3S 4S 9C"), cs("QC JC 10C")],
        turn=1,
        phase="draw",
        discard=pile,
        melds=[meld("solo", cs("8H 9H 10H"))],
    )
    for seat in (0, 1, 2, None):
        v = state.view(seat)
        ids = {x["id"] for x in v["hand"]}
        assert ids == (set(state.to_dict()["hands"][seat]) if seat is not None else set())
        assert [x["id"] for x in v["discard_pile"]] == pile
        assert v["hand_sizes"] == [3, 3, 3] and v["draw_pile_size"] == len(state.to_dict()["draw"])
        assert v["pair_more_pile_size"] == 11 and v["pair_more_pile"] == "PILE_STATE_WAITING"
        assert len(v["melds"]) == 1 and v["roles"][0] == "ROLE_SOLO"
        text = json.dumps(v)
        assert "seed" not in text
        for other in range(3):
            if other != seat:
                for card in state.to_dict()["hands"][other]:
                    assert card not in ids


def test_a_position_keeps_all_cards():
    state = position([cs("KC 5C 6C"), cs("3S 4S 9D"), cs("QC JC 10C")], melds=[meld("pair", cs("8H 9H 10H"))])
    check_invariants(state)


# ---- primitive steps ----


def test_legal_lay_melds_are_3_card_steps_and_longer_melds_are_accepted():
    hand = cs("3S 4S 5S 6S 7S 9D 9C")
    state = position([cs("KC 5C 6C"), hand, cs("QC JC 10C")], turn=1)
    lays = [m["lay_meld"]["cards"] for m in state.legal_moves(1) if "lay_meld" in m]
    assert sorted(lays) == sorted([cs("3S 4S 5S"), cs("4S 5S 6S"), cs("5S 6S 7S")])
    state.apply(1, lay(cs("3S 4S 5S 6S 7S")))
    assert state.to_dict()["melds"][0]["cards"] == cs("3S 4S 5S 6S 7S")
    # the same meld built from steps
    steps = position([cs("KC 5C 6C"), hand, cs("QC JC 10C")], turn=1)
    steps.apply(1, lay(cs("4S 5S 6S")))
    assert add(0, c("3S"), low_end=True) in steps.legal_moves(1)
    assert add(0, c("7S"), low_end=False) in steps.legal_moves(1)
    steps.apply(1, add(0, c("3S"), low_end=True))
    steps.apply(1, add(0, c("7S")))
    assert steps.to_dict()["melds"] == state.to_dict()["melds"]


def test_pickup_mid_turn_needs_the_7_5_going_down_first():
    # seat 1 above 1500, his side not down: melding all 3 cards would take the pile (after a biriba)
    # but 3S 4S 5S is only 1.5 points
    biriba = meld("solo", cs("3H 4H 5H 6H 7H 8H 9H"))  # the Solo's biriba does not help the Pair
    state = position(
        [cs("KC 5C 6C"), cs("3S 4S 5S"), cs("QC JC 10C")], turn=1, scores=(0, 1600, 0), melds=[biriba]
    )
    refused(state, 1, lay(cs("3S 4S 5S")), RuleViolation, "empty_hand")
    # the Solo above 1500 laid his biriba this turn (5.0 points so far): emptying his hand now takes his
    # More pile only if this turn's melds reach 7.5
    for halves, ok in ((10, False), (12, True)):
        turn = {"opening": True, "halves": halves, "melded": True}
        solo = position(
            [cs("3S 4S 5S"), cs("KC 5C 6C"), cs("QC JC 10C")],
            turn=0,
            solo=0,
            scores=(1600, 0, 0),
            melds=[meld("solo", cs("3H 4H 5H 6H 7H 8H 9H"))],
            turn_info=turn,
        )
        if ok:
            solo.apply(0, lay(cs("3S 4S 5S")))
            assert solo.to_dict()["more_state"]["solo"] == "taken"
        else:
            refused(solo, 0, lay(cs("3S 4S 5S")), RuleViolation, "going_down_7_5")
