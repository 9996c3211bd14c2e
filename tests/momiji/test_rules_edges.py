"""Momiji: hand-built positions for the edges of the rules (short deck, ending by a power,
the Part 2 decisions on the display, the turn structure and the powers)."""

from __future__ import annotations

from services.engine import RuleViolation
from tests.momiji.test_rules import (
    BIRCH,
    CHERRY,
    GINKGO,
    MAPLE,
    O_L,
    O_N,
    OAK,
    T_N,
    TH,
    TH2,
    Z_B,
    Z_L,
    Z_R,
    k,
    kinds,
    mk,
    refused,
    stacks,
)


def only_deck(players: int, deck: list[int], **fields):
    """A position whose deck is exactly ``deck`` (top last); every other free card is discarded."""
    s = mk(players, deck=list(deck), **fields)
    used = set(s.all_cards())
    s.discard = [c for c in range(14 * (players + 2)) if c not in used]
    return s


# --------------------------------------------------------------------------- display


def test_reveal_adds_four_cards_to_a_display_of_four():
    display = [k(MAPLE, Z_R), k(GINKGO, Z_L), k(CHERRY, Z_L), k(OAK, Z_L)]
    deck = [k(OAK, O_N), k(MAPLE, O_N), k(GINKGO, O_N), k(CHERRY, O_N), k(OAK, T_N)]  # top: Oak 2
    s = only_deck(2, deck, display=display)
    ev = s.apply(0, {"reveal": {}})
    added = ev[1].body["display_added"]["cards"]
    assert [c["id"] for c in added] == [k(OAK, T_N), k(CHERRY, O_N), k(GINKGO, O_N), k(MAPLE, O_N)]
    assert s.deck == [k(OAK, O_N)] and len(s.display) == 8
    assert s.display == sorted(s.display, key=lambda c: (c // 14, c % 14))


def test_reveal_adds_four_cards_to_a_display_of_seven():
    # Part 2: a reveal adds 4 more cards, leftovers from an earlier reveal included (7 + 4 = 11)
    display = [k(MAPLE, c) for c in range(7)]
    s = mk(2, display=display)
    ev = s.apply(0, {"reveal": {}})
    assert len(s.display) == 11 and s.acorns[0] == 1
    assert len(ev[1].body["display_added"]["cards"]) == 4


def test_reveal_when_the_display_already_holds_eight():
    # no display_full any more: a reveal at 8 is legal and shows 12 cards
    display = [k(MAPLE, c) for c in range(5)] + [k(GINKGO, c) for c in range(3)]
    deck = [k(OAK, O_N), k(BIRCH, Z_R), k(CHERRY, Z_L), k(OAK, Z_L), k(CHERRY, T_N)]
    s = only_deck(3, deck, display=display, acorns=[3, 2, 2])
    assert {"reveal": {}} in s.legal_moves(0)
    ev = s.apply(0, {"reveal": {}})
    assert kinds(ev) == ["acorns_changed", "display_added"]
    assert [c["id"] for c in ev[1].body["display_added"]["cards"]] == deck[:0:-1]
    assert len(s.display) == 12 and s.deck == [k(OAK, O_N)] and s.phase == "PHASE_COLLECT"
    assert s.legal_moves(0) == [
        {"collect": {"type": t}}
        for t in (
            "LEAF_TYPE_MAPLE",
            "LEAF_TYPE_GINKGO",
            "LEAF_TYPE_CHERRY",
            "LEAF_TYPE_OAK",
            "LEAF_TYPE_BIRCH",
        )
    ]
    s.apply(0, {"collect": {"type": "LEAF_TYPE_CHERRY"}})
    assert sorted(s.hands[0]) == sorted([k(CHERRY, Z_L), k(CHERRY, T_N)]) and len(s.display) == 10


def test_repeated_reveals_each_add_four_and_a_short_deck_gives_what_it_holds():
    # turn 1: reveal (4 -> 8), collect one type; turn 2: reveal again from the leftovers;
    # the deck then holds 3 cards: the reveal adds those 3 and the end is triggered
    display = [k(MAPLE, Z_R), k(GINKGO, Z_L), k(CHERRY, Z_L), k(OAK, Z_L)]
    deck = [k(OAK, O_L), k(OAK, Z_R), k(OAK, O_N),  # the last three, bottom first
            k(GINKGO, O_N), k(GINKGO, T_N), k(CHERRY, O_N), k(MAPLE, O_N)]  # fmt: skip
    s = only_deck(2, deck, display=display, acorns=[2, 2])
    s.apply(0, {"reveal": {}})
    assert len(s.display) == 8 and len(s.deck) == 3
    s.apply(0, {"collect": {"type": "LEAF_TYPE_MAPLE"}})
    assert len(s.display) == 6 and len(s.deck) == 3  # more than 4 left: no refill
    s.apply(0, {"end_turn": {}})
    s.apply(1, {"reveal": {}})
    assert len(s.display) == 9 and s.deck == []
    assert s.ending and s.end_reason == "END_REASON_DECK_EMPTY"
    s.apply(1, {"collect": {"type": "LEAF_TYPE_OAK"}})
    assert sorted(s.hands[1]) == sorted([k(OAK, Z_L), k(OAK, O_L), k(OAK, Z_R), k(OAK, O_N)])
    assert len(s.display) == 5 and s.deck == []


def test_collect_leaves_a_large_display_as_it_is():
    # refill only up to 4: five leftover cards stay, nothing is drawn
    display = [k(MAPLE, Z_R), k(GINKGO, Z_L), k(GINKGO, O_N), k(CHERRY, Z_L), k(OAK, Z_L), k(OAK, O_N)]
    s = mk(2, display=display)
    deck_before = list(s.deck)
    ev = s.apply(0, {"collect": {"type": "LEAF_TYPE_MAPLE"}})
    assert kinds(ev) == ["collected"] and len(s.display) == 5 and s.deck == deck_before


def test_reveal_that_empties_the_deck_triggers_the_end_and_collect_still_follows():
    display = [k(MAPLE, Z_R)]
    s = only_deck(2, [k(OAK, Z_R), k(OAK, O_N)], display=display)
    ev = s.apply(0, {"reveal": {}})
    assert s.deck == [] and s.phase == "PHASE_COLLECT"
    assert ev[-1].body == {"game_end_triggered": {"reason": "END_REASON_DECK_EMPTY", "seat": 0}}
    s.apply(0, {"collect": {"type": "LEAF_TYPE_OAK"}})  # the refill draws nothing
    assert s.display == [k(MAPLE, Z_R)] and s.hands[0] == [k(OAK, Z_R), k(OAK, O_N)]


# --------------------------------------------------------------------------- turn structure


def test_no_discard_or_power_in_the_middle_of_a_main_action():
    ls = [["POWER_TEA_HOUSE"], []]
    hand = [k(MAPLE, Z_R), k(GINKGO, Z_R), k(OAK, O_N), k(OAK, T_N)]
    s = mk(2, landscapes=ls, hands=[hand, []], display=[k(CHERRY, Z_L)])
    s.apply(0, {"place_card": {"card": k(MAPLE, Z_R)}})
    move = {"discard_for_acorn": {"cards": [k(OAK, O_N), k(OAK, T_N)]}}
    refused(s, 0, move, RuleViolation, "wrong_phase")
    refused(s, 0, {"use_power": {"power": "POWER_TEA_HOUSE"}}, RuleViolation, "wrong_phase")
    refused(s, 0, {"end_turn": {}}, RuleViolation, "wrong_phase")
    assert not any(next(iter(m)) in ("discard_for_acorn", "use_power") for m in s.legal_moves(0))
    s.apply(0, {"finish_play": {}})
    s.apply(0, {"discard_for_acorn": {"cards": [k(OAK, O_N), k(OAK, T_N)]}})
    s.apply(0, {"use_power": {"power": "POWER_TEA_HOUSE"}})
    assert s.acorns[0] == 2 + 1 - 1 + 2
    # between a reveal and its collect too
    s = mk(2, hands=[[k(OAK, O_N), k(OAK, T_N)], []], display=[k(CHERRY, Z_L)])
    s.apply(0, {"reveal": {}})
    refused(s, 0, move, RuleViolation, "wrong_phase")


def test_main_action_required_while_any_is_possible():
    # display and deck empty: a placeable card, or an affordable goal, still makes a main action due
    s = only_deck(2, [], hands=[[k(MAPLE, Z_R)], []])
    refused(s, 0, {"end_turn": {}}, RuleViolation, "main_action_required")
    assert {"end_turn": {}} not in s.legal_moves(0)
    s = only_deck(2, [], hands=[[k(MAPLE, O_N)], []], goals=["GOAL_MOST_CARDS"], acorns=[3, 0])
    refused(s, 0, {"end_turn": {}}, RuleViolation, "main_action_required")
    s.holders = [1]  # the only goal is taken: nothing is possible any more
    s.apply(0, {"end_turn": {}})
    assert s.turn == 1


def test_bamboo_bridge_lapses_at_the_end_of_the_turn():
    st = stacks(2, s0={MAPLE: [k(MAPLE, Z_R)]})
    hand = [k(MAPLE, T_N)]
    s = mk(2, landscapes=[["POWER_BAMBOO_BRIDGE"], []], stacks=st, hands=[hand, []], display=[k(OAK, Z_R)])
    s.apply(0, {"use_power": {"power": "POWER_BAMBOO_BRIDGE"}})
    s.apply(0, {"collect": {"type": "LEAF_TYPE_OAK"}})
    s.apply(0, {"end_turn": {}})
    assert not s.bamboo and not s.view(0)["bamboo_bridge_active"]
    s.main_done = True
    s.apply(1, {"end_turn": {}})
    refused(s, 0, {"place_card": {"card": k(MAPLE, T_N)}}, RuleViolation, "stack_order")


# --------------------------------------------------------------------------- powers at the edges


def test_mountain_path_with_a_short_deck_draws_what_is_there_and_ends_the_game():
    s = only_deck(3, [k(OAK, TH)], landscapes=[["POWER_MOUNTAIN_PATH"], [], []])
    ev = s.apply(0, {"use_power": {"power": "POWER_MOUNTAIN_PATH"}})
    assert s.hands[0] == [k(OAK, TH)] and s.deck == []
    public = [e.body["cards_drawn"] for e in ev if "cards_drawn" in e.body and e.to is None]
    assert public == [{"seat": 0, "count": 1, "cards": []}]
    assert ev[-1].body == {"game_end_triggered": {"reason": "END_REASON_DECK_EMPTY", "seat": 0}}


def test_temple_bell_on_a_short_deck_and_the_end_check_waits_for_the_returned_cards():
    # two cards: both peeked (the deck is empty for a moment), one kept, one back: no end
    deck = [k(OAK, Z_R), k(MAPLE, O_N)]
    s = only_deck(2, deck, landscapes=[["POWER_TEMPLE_BELL"], []])
    ev = s.apply(0, {"use_power": {"power": "POWER_TEMPLE_BELL"}})
    assert s.deck == [] and s.peek == [k(MAPLE, O_N), k(OAK, Z_R)] and not s.ending
    assert "game_end_triggered" not in kinds(ev)
    assert len(s.legal_moves(0)) == 2
    s.apply(0, {"temple_bell_choose": {"keep": k(OAK, Z_R), "back_on_top": [k(MAPLE, O_N)]}})
    assert s.deck == [k(MAPLE, O_N)] and not s.ending
    # one card: kept, the deck stays empty: the end is triggered once the choice is made
    s = only_deck(2, [k(OAK, Z_R)], landscapes=[["POWER_TEMPLE_BELL"], []])
    s.apply(0, {"use_power": {"power": "POWER_TEMPLE_BELL"}})
    assert not s.ending
    ev = s.apply(0, {"temple_bell_choose": {"keep": k(OAK, Z_R), "back_on_top": []}})
    assert ev[-1].body == {"game_end_triggered": {"reason": "END_REASON_DECK_EMPTY", "seat": 0}}


def test_temple_bell_refused_with_an_empty_deck():
    s = only_deck(2, [], landscapes=[["POWER_TEMPLE_BELL", "POWER_MOUNTAIN_PATH"], []])
    refused(s, 0, {"use_power": {"power": "POWER_TEMPLE_BELL"}}, RuleViolation, "deck_empty")
    refused(s, 0, {"use_power": {"power": "POWER_MOUNTAIN_PATH"}}, RuleViolation, "deck_empty")
    assert not any("use_power" in m for m in s.legal_moves(0))


def test_moss_garden_card_gets_no_acorn_pair_check():
    # Maple 0 (right acorn) then Moss Garden Ginkgo 0 (left acorn): a pair, but no check.
    st = stacks(2, s0={MAPLE: [k(MAPLE, Z_R)]})
    s = mk(2, landscapes=[["POWER_MOSS_GARDEN"], []], stacks=st, hands=[[k(GINKGO, Z_L)], []])
    s.main_done = True
    ev = s.apply(0, {"moss_garden": {"card": k(GINKGO, Z_L)}})
    assert "play_finished" not in kinds(ev) and s.acorns[0] == 1  # 2 - 1 for the power


def test_moss_garden_can_close_a_stack_and_place_the_last_torii():
    # 2 players, 4 torii, 3 already placed: the Moss Garden 3 takes the last one and ends the game
    three = {t: [k(t, Z_R), k(t, O_N), k(t, T_N), k(t, TH)] for t in (MAPLE, GINKGO, CHERRY)}
    st = stacks(2, s1=three, s0={OAK: [k(OAK, Z_R), k(OAK, O_N), k(OAK, T_N)]})
    s = mk(2, landscapes=[["POWER_MOSS_GARDEN"], []], stacks=st, hands=[[k(OAK, TH)], []], main_done=True)
    assert s.torii_supply() == 1
    ev = s.apply(0, {"moss_garden": {"card": k(OAK, TH)}})
    assert ev[-2].body["card_placed"]["closed"] is True and s.torii_supply() == 0
    assert ev[-1].body == {"game_end_triggered": {"reason": "END_REASON_LAST_TORII", "seat": 0}}


def test_rain_shower_with_no_other_cards_changes_only_the_acorns():
    s = mk(3, landscapes=[["POWER_RAIN_SHOWER"], [], []], hands=[[k(MAPLE, Z_R)], [], []])
    ev = s.apply(0, {"use_power": {"power": "POWER_RAIN_SHOWER"}})
    assert kinds(ev) == ["power_used", "acorns_changed"]
    assert s.phase == "PHASE_MAIN" and s.active_seats() == [0] and s.rain_pending == []


def test_pagoda_can_empty_a_stack_which_then_restarts_with_a_zero():
    st = stacks(2, s0={MAPLE: [k(MAPLE, Z_R)]})
    hand = [k(MAPLE, O_N), k(MAPLE, Z_L)]
    s = mk(2, landscapes=[["POWER_PAGODA"], []], stacks=st, hands=[hand, []])
    ev = s.apply(0, {"pagoda": {"type": "LEAF_TYPE_MAPLE"}})
    assert ev[-1].body["stack_card_removed"]["card"]["id"] == k(MAPLE, Z_R)
    assert s.stacks[0][MAPLE] == [] and s.view(1)["players"][0]["stacks"] == []
    refused(s, 0, {"place_card": {"card": k(MAPLE, O_N)}}, RuleViolation, "first_card_zero")
    s.apply(0, {"place_card": {"card": k(MAPLE, Z_L)}})


def test_koi_pond_keeps_the_display_size_and_order():
    display = [k(MAPLE, Z_R), k(GINKGO, Z_L), k(CHERRY, Z_L), k(OAK, Z_L)]
    s = mk(2, landscapes=[["POWER_KOI_POND"], []], display=display, hands=[[k(MAPLE, TH)], []])
    deck_before = list(s.deck)
    s.apply(0, {"koi_pond": {"hand_card": k(MAPLE, TH), "display_card": k(OAK, Z_L)}})
    assert s.display == [k(MAPLE, Z_R), k(MAPLE, TH), k(GINKGO, Z_L), k(CHERRY, Z_L)]
    assert s.deck == deck_before and not s.main_done


# --------------------------------------------------------------------------- end and scoring


def test_end_triggered_mid_round_by_the_last_torii_finishes_the_round_with_four_players():
    # 4 players, 6 torii: 5 placed; seat 1 places the last one; seats 2 and 3 still play.
    closed = {t: [k(t, Z_R), k(t, O_N), k(t, T_N), k(t, TH)] for t in (MAPLE, GINKGO, CHERRY, OAK, BIRCH)}
    st = stacks(4, s0=closed, s1={MAPLE: [k(MAPLE, Z_L), k(MAPLE, O_L), k(MAPLE, T_N + 1)]})
    s = mk(4, stacks=st, hands=[[], [k(MAPLE, TH2)], [], []], turn=1, display=[k(OAK, Z_B)])
    s.apply(1, {"place_card": {"card": k(MAPLE, TH2)}})
    assert s.ending and s.end_reason == "END_REASON_LAST_TORII"
    s.apply(1, {"finish_play": {}})
    s.apply(1, {"end_turn": {}})
    s.apply(2, {"collect": {"type": "LEAF_TYPE_OAK"}})
    s.apply(2, {"end_turn": {}})
    assert not s.is_over() and s.active_seats() == [3]
    ev = s.apply(3, {"collect": {"type": s.view(3)["display"][0]["type"]}})
    ev = s.apply(3, {"end_turn": {}})
    assert s.is_over() and kinds(ev)[-1] == "game_finished"


def test_hand_limit_discards_in_the_last_turn_then_the_match_ends():
    s = mk(2, hands=[[], [k(MAPLE, c) for c in range(9)]], turn=1, main_done=True, ending=True)
    s.end_reason = "END_REASON_DECK_EMPTY"
    s.apply(1, {"end_turn": {}})
    assert s.phase == "PHASE_HAND_LIMIT" and not s.is_over()
    ev = s.apply(1, {"discard_card": {"card": k(MAPLE, 8)}})
    assert s.is_over() and kinds(ev) == ["cards_discarded", "turn_ended", "game_finished"]
    assert len(s.hands[1]) == 8


def test_fewest_hand_goal_counts_an_empty_hand():
    # "fewest" has no above-zero condition: two empty hands tie for it
    s = mk(3, hands=[[], [], [k(OAK, O_N)]], goals=["GOAL_FEWEST_HAND"], holders=[1], acorns=[0, 0, 0])
    assert [line["goals"] for line in s.score_lines()] == [3, 10, 0]


def test_score_is_stacks_plus_acorns_plus_goals():
    st = stacks(2, s0={MAPLE: [k(MAPLE, Z_R), k(MAPLE, O_N), k(MAPLE, T_N)]}, s1={OAK: [k(OAK, Z_R)]})
    s = mk(2, stacks=st, acorns=[4, 1], goals=["GOAL_MOST_CARDS", "GOAL_MOST_ZEROS"], holders=[0, 1])
    # seat 0: 2 x 3 stacks + 4 acorns + 10 (most cards, holder) + 3 (tied on zeros, not holder);
    # seat 1: 0 x 1 stack + 1 acorn + 10 (tied on zeros, holder)
    assert [line["total"] for line in s.score_lines()] == [6 + 4 + 10 + 3, 0 + 1 + 10]
