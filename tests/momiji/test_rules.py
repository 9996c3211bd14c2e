"""Momiji: one hand-built position per rule of issue 6 (setup, actions, powers, goals, end, views)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from services.engine import BadOptions, MalformedMove, NotYourTurn, RuleViolation
from services.momiji.cards import COPY_LEFT, COPY_RIGHT, COPY_VALUE, GOAL_NAMES, POWERS
from services.momiji.rules import GAME, State
from tests.engine_checks import refused
from tests.momiji.positions import hand_built

MAPLE, GINKGO, CHERRY, OAK, BIRCH, BEECH = range(6)
LEAF = [
    "LEAF_TYPE_MAPLE",
    "LEAF_TYPE_GINKGO",
    "LEAF_TYPE_CHERRY",
    "LEAF_TYPE_OAK",
    "LEAF_TYPE_BIRCH",
    "LEAF_TYPE_BEECH",
]

# Copies of a type (docs/rules/momiji.md): 0s 0-4, 1s 5-8, 2s 9-11, 3s 12-13.
Z_R, Z_R2, Z_L, Z_L2, Z_B = 0, 1, 2, 3, 4  # 0s: right, right, left, left, both
O_R, O_L, O_N, O_N2 = 5, 6, 7, 8  # 1s: right, left, none, none
T_B, T_N, T_N2 = 9, 10, 11  # 2s: both, none, none
TH, TH2 = 12, 13  # 3s


def k(t: int, copy: int) -> int:
    return t * 14 + copy


def mk(players: int = 2, **fields) -> State:
    fields.setdefault("landscapes", [[] for _ in range(players)])
    return hand_built(players, **fields)


def stacks(players: int, **by_seat) -> list[list[list[int]]]:
    """stacks(2, s0={MAPLE: [..]}) -> the stacks field."""
    out = [[[] for _ in range(players + 2)] for _ in range(players)]
    for key, spec in by_seat.items():
        for t, cards in spec.items():
            out[int(key[1:])][t] = list(cards)
    return out


def kinds(events) -> list[str]:
    return [next(iter(e.body)) for e in events]


# --------------------------------------------------------------------------- setup


@pytest.mark.parametrize("players", [2, 3, 4])
def test_setup(players):
    s = State.new(players, 7, {"draft_landscapes": False})
    types = players + 2
    cards = s.all_cards()
    assert sorted(cards) == list(range(14 * types))
    per_value = Counter((c // 14, COPY_VALUE[c % 14]) for c in cards)
    for t in range(types):
        assert [per_value[(t, v)] for v in range(4)] == [5, 4, 3, 2]
    assert all(len(h) == 6 for h in s.hands)
    assert s.acorns == [2] * players
    assert len(s.display) == 4
    assert [c // 14 for c in s.display] == sorted(c // 14 for c in s.display)
    assert len(s.goals) == players + 2 and len(set(s.goals)) == players + 2
    assert set(s.goals) <= set(GOAL_NAMES)
    assert all(len(set(ls)) == 3 and set(ls) <= set(POWERS) for ls in s.landscapes)
    assert s.torii_supply() == types
    assert len(s.deck) == 14 * types - 6 * players - 4
    assert s.phase == "PHASE_MAIN" and s.active_seats() == [0]
    assert s.view(0)["leaf_types"] == LEAF[:types]


def test_acorn_corner_table():
    # 0s: 1-2 right, 3-4 left, 5 both; 1s: 1 right, 2 left; 2s: 1 both; 3s none.
    assert [(COPY_LEFT[i], COPY_RIGHT[i]) for i in range(5)] == [
        (False, True),
        (False, True),
        (True, False),
        (True, False),
        (True, True),
    ]
    assert [(COPY_LEFT[i], COPY_RIGHT[i]) for i in range(5, 9)] == [
        (False, True),
        (True, False),
        (False, False),
        (False, False),
    ]
    assert [(COPY_LEFT[i], COPY_RIGHT[i]) for i in range(9, 14)] == [(True, True)] + [(False, False)] * 4


def test_game_info_and_options():
    assert (GAME.name, GAME.package, GAME.service, GAME.min_players, GAME.max_players) == (
        "momiji",
        "momiji",
        "Momiji",
        2,
        4,
    )
    assert [(o.name, o.default) for o in GAME.options] == [("draft_landscapes", False)]
    with pytest.raises(BadOptions):
        State.new(2, 1, {"draft_landscapes": "yes"})
    with pytest.raises(BadOptions):
        State.new(2, 1, {"draft_landscapes": False, "bogus": True})
    with pytest.raises(BadOptions):
        State.new(1, 1, {"draft_landscapes": False})
    with pytest.raises(BadOptions):
        State.new(5, 1, {"draft_landscapes": False})


def test_same_seed_same_setup():
    a = State.new(3, 42, {"draft_landscapes": False})
    b = State.new(3, 42, {"draft_landscapes": False})
    c = State.new(3, 43, {"draft_landscapes": False})
    assert a == b and a.to_dict() != c.to_dict()
    assert State.from_dict(json.loads(json.dumps(a.to_dict()))) == a


def test_draft_landscapes():
    s = State.new(3, 5, {"draft_landscapes": True})
    assert s.phase == "PHASE_DRAFT" and s.landscapes == [[], [], []]
    picks = [
        (0, "POWER_TEA_HOUSE"),
        (1, "POWER_TEA_HOUSE"),  # several players may hold the same power
        (2, "POWER_PAGODA"),
        (0, "POWER_PAGODA"),
        (1, "POWER_KOI_POND"),
        (2, "POWER_RAIN_SHOWER"),
        (0, "POWER_MOSS_GARDEN"),
        (1, "POWER_TEMPLE_BELL"),
    ]
    for seat, power in picks:
        assert s.active_seats() == [seat]
        other = (seat + 1) % 3
        refused(s, other, {"draft_power": {"power": "POWER_MOUNTAIN_PATH"}}, NotYourTurn)
        s.apply(seat, {"draft_power": {"power": power}})
    assert s.active_seats() == [2]
    refused(s, 2, {"draft_power": {"power": "POWER_PAGODA"}}, RuleViolation, "power_already_chosen")
    assert {"draft_power": {"power": "POWER_PAGODA"}} not in s.legal_moves(2)
    refused(s, 2, {"collect": {"type": "LEAF_TYPE_MAPLE"}}, RuleViolation, "wrong_phase")
    ev = s.apply(2, {"draft_power": {"power": "POWER_BAMBOO_BRIDGE"}})
    assert ev[0].body == {"power_drafted": {"seat": 2, "power": "POWER_BAMBOO_BRIDGE"}}
    assert s.phase == "PHASE_MAIN" and s.active_seats() == [0] and s.round == 1
    assert s.landscapes[0] == ["POWER_TEA_HOUSE", "POWER_MOSS_GARDEN", "POWER_PAGODA"]
    assert all(len(set(ls)) == 3 for ls in s.landscapes)


# --------------------------------------------------------------------------- collect


def test_collect_takes_whole_type_and_refills():
    display = [k(MAPLE, Z_R), k(MAPLE, O_N), k(GINKGO, Z_L), k(OAK, TH)]
    deck_top = [k(CHERRY, Z_B), k(BIRCH, O_N)]  # the end of the list is the top
    rest = [c for c in range(70) if c not in display and c not in deck_top]
    s = mk(3, display=display, deck=rest + deck_top)
    ev = s.apply(0, {"collect": {"type": "LEAF_TYPE_MAPLE"}})
    assert sorted(s.hands[0]) == [k(MAPLE, Z_R), k(MAPLE, O_N)]
    assert s.display == sorted([k(GINKGO, Z_L), k(OAK, TH), k(BIRCH, O_N), k(CHERRY, Z_B)])
    assert kinds(ev) == ["collected", "display_added"]
    assert s.main_done
    refused(s, 0, {"collect": {"type": "LEAF_TYPE_GINKGO"}}, RuleViolation, "one_main_action")


def test_collect_type_must_be_in_display():
    s = mk(2, display=[k(MAPLE, Z_R)])
    refused(s, 0, {"collect": {"type": "LEAF_TYPE_OAK"}}, RuleViolation, "type_not_in_display")
    assert s.legal_moves(0)[0] == {"collect": {"type": "LEAF_TYPE_MAPLE"}}


def test_reveal_pays_acorn_then_must_collect():
    display = [k(MAPLE, Z_R), k(GINKGO, Z_L), k(CHERRY, Z_L), k(OAK, Z_L)]
    s = mk(2, display=display, hands=[[k(MAPLE, Z_B)], []])
    ev = s.apply(0, {"reveal": {}})
    assert s.acorns[0] == 1 and len(s.display) == 8 and s.phase == "PHASE_COLLECT"
    assert kinds(ev) == ["acorns_changed", "display_added"]
    assert ev[1].body["display_added"]["revealed"] is True
    assert all(next(iter(m)) == "collect" for m in s.legal_moves(0))
    refused(s, 0, {"place_card": {"card": k(MAPLE, Z_B)}}, RuleViolation, "wrong_phase")
    refused(s, 0, {"end_turn": {}}, RuleViolation, "wrong_phase")
    refused(s, 0, {"use_power": {"power": "POWER_TEA_HOUSE"}}, RuleViolation, "wrong_phase")
    t = s.display[-1] // 14
    count = sum(1 for c in s.display if c // 14 == t)
    s.apply(0, {"collect": {"type": LEAF[t]}})
    assert len(s.hands[0]) == 1 + count and s.phase == "PHASE_MAIN" and s.main_done
    assert len(s.display) == max(4, 8 - count)  # refilled up to 4 only


def test_reveal_needs_an_acorn_and_a_deck():
    s = mk(2, display=[k(MAPLE, Z_R)], acorns=[0, 2])
    refused(s, 0, {"reveal": {}}, RuleViolation, "not_enough_acorns")
    s = mk(2, display=[k(MAPLE, Z_R)], deck=[])
    s.discard = [c for c in range(56) if c != k(MAPLE, Z_R)]
    refused(s, 0, {"reveal": {}}, RuleViolation, "deck_empty")


# --------------------------------------------------------------------------- play


def test_first_card_must_be_zero():
    s = mk(2, hands=[[k(MAPLE, O_N), k(MAPLE, Z_R)], []])
    refused(s, 0, {"place_card": {"card": k(MAPLE, O_N)}}, RuleViolation, "first_card_zero")
    s.apply(0, {"place_card": {"card": k(MAPLE, Z_R)}})
    assert s.stacks[0][MAPLE] == [k(MAPLE, Z_R)] and s.phase == "PHASE_PLAYING"


def test_each_card_equal_or_one_more():
    st = stacks(2, s0={MAPLE: [k(MAPLE, Z_R), k(MAPLE, O_N)]})
    hand = [k(MAPLE, Z_L), k(MAPLE, O_L), k(MAPLE, T_N), k(MAPLE, TH)]
    s = mk(2, stacks=st, hands=[hand, []])
    refused(s, 0, {"place_card": {"card": k(MAPLE, Z_L)}}, RuleViolation, "stack_order")
    refused(s, 0, {"place_card": {"card": k(MAPLE, TH)}}, RuleViolation, "stack_order")
    legal = {m["place_card"]["card"] for m in s.legal_moves(0) if "place_card" in m}
    assert legal == {k(MAPLE, O_L), k(MAPLE, T_N)}
    s.apply(0, {"place_card": {"card": k(MAPLE, O_L)}})  # equal
    s.apply(0, {"place_card": {"card": k(MAPLE, T_N)}})  # one more
    assert [c % 14 for c in s.stacks[0][MAPLE]] == [Z_R, O_N, O_L, T_N]


def test_option_a_at_most_two_of_one_type():
    hand = [k(MAPLE, Z_R), k(MAPLE, Z_L), k(MAPLE, O_N), k(GINKGO, Z_R)]
    s = mk(2, hands=[hand, []])
    s.apply(0, {"place_card": {"card": k(MAPLE, Z_R)}})
    s.apply(0, {"place_card": {"card": k(MAPLE, Z_L)}})
    refused(s, 0, {"place_card": {"card": k(MAPLE, O_N)}}, RuleViolation, "play_same_type_max_two")
    refused(s, 0, {"place_card": {"card": k(GINKGO, Z_R)}}, RuleViolation, "play_same_type_max_two")
    assert s.legal_moves(0) == [{"finish_play": {}}]
    ev = s.apply(0, {"finish_play": {}})
    assert ev[0].body["play_finished"]["acorn_pairs"] == 0 and s.acorns[0] == 2
    refused(s, 0, {"place_card": {"card": k(GINKGO, Z_R)}}, RuleViolation, "one_main_action")


def test_option_b_one_card_per_type():
    hand = [k(MAPLE, Z_R), k(MAPLE, Z_L), k(GINKGO, Z_R2), k(CHERRY, Z_L)]
    s = mk(3, hands=[hand, [], []])
    s.apply(0, {"place_card": {"card": k(MAPLE, Z_R)}})
    s.apply(0, {"place_card": {"card": k(GINKGO, Z_R2)}})
    refused(s, 0, {"place_card": {"card": k(MAPLE, Z_L)}}, RuleViolation, "play_one_per_type")
    s.apply(0, {"place_card": {"card": k(CHERRY, Z_L)}})
    assert s.play_types == [MAPLE, GINKGO, CHERRY]
    s.apply(0, {"finish_play": {}})
    assert s.phase == "PHASE_MAIN" and s.play_types == []


def test_three_closes_with_torii_and_stack_takes_no_more():
    st = stacks(2, s0={MAPLE: [k(MAPLE, Z_R), k(MAPLE, O_N), k(MAPLE, T_N)]})
    s = mk(2, stacks=st, hands=[[k(MAPLE, TH), k(MAPLE, TH2)], []])
    assert s.torii_supply() == 4
    ev = s.apply(0, {"place_card": {"card": k(MAPLE, TH)}})
    assert ev[0].body["card_placed"]["closed"] is True and s.torii_supply() == 3
    refused(s, 0, {"place_card": {"card": k(MAPLE, TH2)}}, RuleViolation, "stack_closed")
    assert s.view(1)["players"][0]["stacks"][0]["closed"] is True


def test_acorn_pair_check_after_mixed_play():
    # Maple top right acorn | (Ginkgo empty) | Cherry top left acorn -> adjacent pair: +2.
    st = stacks(3, s0={MAPLE: [k(MAPLE, Z_R)]})
    s = mk(3, stacks=st, hands=[[k(CHERRY, Z_L), k(OAK, Z_R)], [], []])
    s.apply(0, {"place_card": {"card": k(CHERRY, Z_L)}})
    s.apply(0, {"place_card": {"card": k(OAK, Z_R)}})
    ev = s.apply(0, {"finish_play": {}})
    assert ev[0].body["play_finished"]["acorn_pairs"] == 1
    assert ev[1].body == {
        "acorns_changed": {"seat": 0, "delta": 2, "acorns": 4, "reason": "ACORN_REASON_ACORN_PAIRS"}
    }
    assert s.acorns[0] == 4


def test_acorn_pairs_count_every_adjacent_pair():
    # Maple 0(both) | Ginkgo 0(both) | Cherry 0(left): two pairs -> +4.
    st = stacks(3, s0={MAPLE: [k(MAPLE, Z_B)]})
    s = mk(3, stacks=st, hands=[[k(GINKGO, Z_B), k(CHERRY, Z_L)], [], []])
    s.apply(0, {"place_card": {"card": k(GINKGO, Z_B)}})
    s.apply(0, {"place_card": {"card": k(CHERRY, Z_L)}})
    s.apply(0, {"finish_play": {}})
    assert s.acorns[0] == 6


def test_acorn_pair_blocked_by_stack_between_or_wrong_corners():
    # Maple right | Ginkgo 1 (no acorn) | Cherry left: no adjacent pair.
    st = stacks(3, s0={MAPLE: [k(MAPLE, Z_R)], GINKGO: [k(GINKGO, Z_L)]})
    s = mk(3, stacks=st, hands=[[k(GINKGO, O_N), k(CHERRY, Z_L)], [], []])
    s.apply(0, {"place_card": {"card": k(GINKGO, O_N)}})
    s.apply(0, {"place_card": {"card": k(CHERRY, Z_L)}})
    s.apply(0, {"finish_play": {}})
    assert s.acorns[0] == 2
    # Left stack with a LEFT acorn next to a right stack with a RIGHT acorn: corners do not touch.
    s = mk(2, hands=[[k(MAPLE, Z_L), k(GINKGO, Z_R)], []])
    s.apply(0, {"place_card": {"card": k(MAPLE, Z_L)}})
    s.apply(0, {"place_card": {"card": k(GINKGO, Z_R)}})
    s.apply(0, {"finish_play": {}})
    assert s.acorns[0] == 2


def test_no_acorn_pair_check_after_single_type_play():
    st = stacks(2, s0={GINKGO: [k(GINKGO, Z_L)]})
    s = mk(2, stacks=st, hands=[[k(MAPLE, Z_R)], []])
    s.apply(0, {"place_card": {"card": k(MAPLE, Z_R)}})
    ev = s.apply(0, {"finish_play": {}})
    assert ev[0].body["play_finished"]["acorn_pairs"] == 0 and s.acorns[0] == 2


# --------------------------------------------------------------------------- goals


def test_activate_goal():
    goals = ["GOAL_MOST_ZEROS", "GOAL_MOST_CARDS", "GOAL_FEWEST_HAND", "GOAL_MOST_ACORNS"]
    s = mk(2, goals=goals, acorns=[3, 5])
    refused(s, 0, {"activate_goal": {"goal": "GOAL_LONGEST_STACK"}}, RuleViolation, "goal_not_in_play")
    ev = s.apply(0, {"activate_goal": {"goal": "GOAL_MOST_CARDS"}})
    assert kinds(ev) == ["acorns_changed", "goal_activated"]
    assert s.acorns[0] == 0 and s.holders == [None, 0, None, None] and s.main_done
    assert s.view(1)["goals"][1] == {"goal": "GOAL_MOST_CARDS", "activated": True, "holder": 0}
    s.apply(0, {"end_turn": {}})
    refused(s, 1, {"activate_goal": {"goal": "GOAL_MOST_CARDS"}}, RuleViolation, "goal_taken")
    s.acorns[1] = 2
    refused(s, 1, {"activate_goal": {"goal": "GOAL_MOST_ZEROS"}}, RuleViolation, "not_enough_acorns")


# --------------------------------------------------------------------------- discard, powers


def test_discard_two_for_an_acorn_once_per_turn_before_or_after_main():
    hand = [k(MAPLE, Z_R), k(MAPLE, O_N), k(GINKGO, O_N), k(CHERRY, TH)]
    s = mk(2, hands=[hand, []], display=[k(OAK, Z_R)])
    ev = s.apply(0, {"discard_for_acorn": {"cards": [k(MAPLE, O_N), k(CHERRY, TH)]}})
    assert kinds(ev) == ["cards_discarded", "acorns_changed"]
    assert s.acorns[0] == 3 and s.discard == [k(MAPLE, O_N), k(CHERRY, TH)] and len(s.hands[0]) == 2
    move = {"discard_for_acorn": {"cards": [k(MAPLE, Z_R), k(GINKGO, O_N)]}}
    refused(s, 0, move, RuleViolation, "discard_once_per_turn")
    s.apply(0, {"collect": {"type": "LEAF_TYPE_OAK"}})
    s.apply(0, {"end_turn": {}})
    # after the main action, on a later turn
    s2 = mk(2, hands=[hand, []], display=[k(OAK, Z_R)], main_done=True)
    s2.apply(0, {"discard_for_acorn": {"cards": [k(MAPLE, Z_R), k(GINKGO, O_N)]}})
    assert s2.acorns[0] == 3


def test_discard_for_acorn_shape_and_ownership():
    s = mk(2, hands=[[k(MAPLE, Z_R), k(MAPLE, O_N)], [k(OAK, Z_R)]])
    refused(s, 0, {"discard_for_acorn": {"cards": [k(MAPLE, Z_R)]}}, MalformedMove)
    refused(s, 0, {"discard_for_acorn": {"cards": [k(MAPLE, Z_R), k(MAPLE, Z_R)]}}, MalformedMove)
    refused(
        s,
        0,
        {"discard_for_acorn": {"cards": [k(MAPLE, Z_R), k(OAK, Z_R)]}},
        RuleViolation,
        "card_not_in_hand",
    )


def test_power_costs_acorn_once_per_turn_once_per_game():
    ls = [["POWER_TEA_HOUSE", "POWER_BAMBOO_BRIDGE", "POWER_MOUNTAIN_PATH"], []]
    s = mk(2, landscapes=ls, display=[k(OAK, Z_R), k(OAK, Z_L)])
    refused(s, 0, {"use_power": {"power": "POWER_PAGODA"}}, MalformedMove)  # Pagoda has its own move
    refused(s, 0, {"use_power": {"power": "POWER_RAIN_SHOWER"}}, RuleViolation, "power_not_in_landscape")
    ev = s.apply(0, {"use_power": {"power": "POWER_TEA_HOUSE"}})
    assert kinds(ev) == ["power_used", "acorns_changed", "acorns_changed"]
    assert s.acorns[0] == 3 and s.used[0] == ["POWER_TEA_HOUSE"]
    refused(s, 0, {"use_power": {"power": "POWER_BAMBOO_BRIDGE"}}, RuleViolation, "power_once_per_turn")
    s.apply(0, {"collect": {"type": "LEAF_TYPE_OAK"}})
    s.apply(0, {"end_turn": {}})
    s.apply(1, {"collect": {"type": s.view(1)["display"][0]["type"]}})
    s.apply(1, {"end_turn": {}})
    refused(s, 0, {"use_power": {"power": "POWER_TEA_HOUSE"}}, RuleViolation, "power_once_per_game")
    s.acorns[0] = 0
    refused(s, 0, {"use_power": {"power": "POWER_BAMBOO_BRIDGE"}}, RuleViolation, "not_enough_acorns")
    assert not any("use_power" in m for m in s.legal_moves(0))
    s.acorns[0] = 1
    s.apply(0, {"use_power": {"power": "POWER_BAMBOO_BRIDGE"}})  # a power after an earlier turn's power
    assert s.acorns[0] == 0 and s.bamboo


def test_power_mountain_path():
    deck = [k(OAK, Z_R), k(MAPLE, O_N), k(GINKGO, TH)]
    s = mk(2, landscapes=[["POWER_MOUNTAIN_PATH"], []], deck=deck)
    s.discard = [c for c in range(56) if c not in deck]
    ev = s.apply(0, {"use_power": {"power": "POWER_MOUNTAIN_PATH"}})
    assert sorted(s.hands[0]) == sorted([k(MAPLE, O_N), k(GINKGO, TH)]) and s.deck == [k(OAK, Z_R)]
    public = [e for e in ev if e.to is None and "cards_drawn" in e.body]
    private = [e for e in ev if e.to == (0,)]
    assert public[0].body["cards_drawn"] == {"seat": 0, "count": 2, "cards": []}
    assert len(private[0].body["cards_drawn"]["cards"]) == 2
    assert s.acorns[0] == 1


def test_power_stone_lantern():
    display = [k(MAPLE, Z_R), k(MAPLE, O_N), k(GINKGO, Z_L), k(OAK, TH)]
    s = mk(2, landscapes=[["POWER_STONE_LANTERN"], []], display=display)
    deck_before = list(s.deck)
    refused(s, 0, {"stone_lantern": {"card": k(OAK, Z_B)}}, RuleViolation, "card_not_in_display")
    ev = s.apply(0, {"stone_lantern": {"card": k(MAPLE, O_N)}})
    assert s.hands[0] == [k(MAPLE, O_N)] and k(MAPLE, Z_R) in s.display
    # Part 2: taking one card with Stone Lantern does not refill the display
    assert s.display == [k(MAPLE, Z_R), k(GINKGO, Z_L), k(OAK, TH)] and s.deck == deck_before
    assert kinds(ev) == ["power_used", "acorns_changed", "display_card_taken"]
    assert not s.main_done  # not the main action
    ev = s.apply(0, {"collect": {"type": "LEAF_TYPE_MAPLE"}})
    assert k(MAPLE, Z_R) in s.hands[0]
    # the collect refills to 4: two cards, as the display held two after it
    assert kinds(ev) == ["collected", "display_added"] and len(s.display) == 4


def test_stone_lantern_taking_the_last_display_card_leaves_it_empty():
    s = mk(2, landscapes=[["POWER_STONE_LANTERN"], []], display=[k(OAK, TH)], hands=[[k(MAPLE, Z_R)], []])
    s.apply(0, {"stone_lantern": {"card": k(OAK, TH)}})
    assert s.display == [] and s.deck
    # no type to collect; the main action is still owed (a reveal or a play is open)
    moves = s.legal_moves(0)
    assert not any("collect" in m for m in moves) and {"end_turn": {}} not in moves
    assert {"reveal": {}} in moves and {"place_card": {"card": k(MAPLE, Z_R)}} in moves


def test_power_koi_pond():
    display = [k(MAPLE, Z_R), k(GINKGO, Z_L)]
    s = mk(2, landscapes=[["POWER_KOI_POND"], []], display=display, hands=[[k(OAK, TH)], []])
    refused(
        s,
        0,
        {"koi_pond": {"hand_card": k(OAK, TH), "display_card": k(OAK, Z_R)}},
        RuleViolation,
        "card_not_in_display",
    )
    ev = s.apply(0, {"koi_pond": {"hand_card": k(OAK, TH), "display_card": k(GINKGO, Z_L)}})
    assert s.hands[0] == [k(GINKGO, Z_L)] and s.display == [k(MAPLE, Z_R), k(OAK, TH)]
    assert "cards_swapped" in kinds(ev)


def test_power_bamboo_bridge():
    st = stacks(2, s0={MAPLE: [k(MAPLE, Z_R), k(MAPLE, O_N)], GINKGO: [k(GINKGO, Z_R)]})
    hand = [k(MAPLE, TH), k(GINKGO, T_N)]
    s = mk(2, landscapes=[["POWER_BAMBOO_BRIDGE"], []], stacks=st, hands=[hand, []])
    refused(s, 0, {"place_card": {"card": k(MAPLE, TH)}}, RuleViolation, "stack_order")
    s.apply(0, {"use_power": {"power": "POWER_BAMBOO_BRIDGE"}})
    s.apply(0, {"place_card": {"card": k(MAPLE, TH)}})  # 1 -> 3: top + 2, closes the stack
    assert s.stacks[0][MAPLE][-1] == k(MAPLE, TH) and not s.bamboo
    # only the next placed card: 0 -> 2 is refused for the second card
    refused(s, 0, {"place_card": {"card": k(GINKGO, T_N)}}, RuleViolation, "stack_order")


def test_bamboo_bridge_does_not_allow_nonzero_start():
    s = mk(2, landscapes=[["POWER_BAMBOO_BRIDGE"], []], hands=[[k(MAPLE, O_N)], []])
    s.apply(0, {"use_power": {"power": "POWER_BAMBOO_BRIDGE"}})
    refused(s, 0, {"place_card": {"card": k(MAPLE, O_N)}}, RuleViolation, "first_card_zero")


def test_power_tea_house():
    s = mk(2, landscapes=[["POWER_TEA_HOUSE"], []], acorns=[1, 2])
    s.apply(0, {"use_power": {"power": "POWER_TEA_HOUSE"}})
    assert s.acorns == [2, 2]


def test_power_temple_bell():
    deck = [k(OAK, Z_R), k(MAPLE, O_N), k(GINKGO, TH), k(CHERRY, Z_L)]  # top is CHERRY 0
    s = mk(2, landscapes=[["POWER_TEMPLE_BELL"], []], deck=deck)
    s.discard = [c for c in range(56) if c not in deck]
    ev = s.apply(0, {"use_power": {"power": "POWER_TEMPLE_BELL"}})
    peek = [e for e in ev if "temple_bell_peek" in e.body]
    assert peek[0].to == (0,)
    assert [c["id"] for c in peek[0].body["temple_bell_peek"]["cards"]] == [
        k(CHERRY, Z_L),
        k(GINKGO, TH),
        k(MAPLE, O_N),
    ]
    assert s.phase == "PHASE_TEMPLE_BELL" and len(s.legal_moves(0)) == 6
    assert s.view(0)["temple_bell_cards"] and not s.view(1)["temple_bell_cards"]
    assert s.view(None)["temple_bell_cards"] == []
    refused(
        s,
        0,
        {"temple_bell_choose": {"keep": k(OAK, Z_R), "back_on_top": []}},
        RuleViolation,
        "card_not_peeked",
    )
    move = {"temple_bell_choose": {"keep": k(GINKGO, TH), "back_on_top": [k(CHERRY, Z_L)]}}
    refused(s, 0, move, RuleViolation, "temple_bell_return_rest")
    move = {"temple_bell_choose": {"keep": k(GINKGO, TH), "back_on_top": [k(MAPLE, O_N), k(CHERRY, Z_L)]}}
    ev = s.apply(0, move)
    assert s.hands[0] == [k(GINKGO, TH)]
    assert s.deck == [k(OAK, Z_R), k(CHERRY, Z_L), k(MAPLE, O_N)]  # MAPLE 1 is now on top
    assert s.phase == "PHASE_MAIN"
    assert all(e.to == (0,) for e in ev if "cards_drawn" in e.body and e.body["cards_drawn"]["cards"])


def test_power_moss_garden_extra_card():
    st = stacks(2, s0={GINKGO: [k(GINKGO, Z_L)]})
    hand = [k(MAPLE, Z_R), k(GINKGO, O_N), k(OAK, O_N)]
    s = mk(2, landscapes=[["POWER_MOSS_GARDEN"], []], stacks=st, hands=[hand, []], display=[k(OAK, Z_B)])
    s.apply(0, {"collect": {"type": "LEAF_TYPE_OAK"}})  # main action is not a play
    refused(s, 0, {"moss_garden": {"card": k(OAK, O_N)}}, RuleViolation, "first_card_zero")
    ev = s.apply(0, {"moss_garden": {"card": k(GINKGO, O_N)}})
    assert ev[-1].body["card_placed"]["moss_garden"] is True
    assert s.stacks[0][GINKGO] == [k(GINKGO, Z_L), k(GINKGO, O_N)] and s.phase == "PHASE_MAIN"
    # with a play as the main action too
    st = stacks(2, s0={OAK: [k(OAK, Z_B)]})
    s = mk(2, landscapes=[["POWER_MOSS_GARDEN"], []], hands=[hand, []], stacks=st)
    s.apply(0, {"place_card": {"card": k(MAPLE, Z_R)}})
    refused(s, 0, {"moss_garden": {"card": k(OAK, O_N)}}, RuleViolation, "wrong_phase")
    s.apply(0, {"finish_play": {}})
    s.apply(0, {"moss_garden": {"card": k(OAK, O_N)}})
    assert s.stacks[0][OAK][-1] == k(OAK, O_N) and s.acorns[0] == 1


def test_power_pagoda():
    st = stacks(
        2, s0={MAPLE: [k(MAPLE, Z_R), k(MAPLE, O_N)], GINKGO: [k(GINKGO, Z_R), k(GINKGO, O_N), k(GINKGO, TH)]}
    )
    s = mk(2, landscapes=[["POWER_PAGODA"], []], stacks=st)
    refused(s, 0, {"pagoda": {"type": "LEAF_TYPE_GINKGO"}}, RuleViolation, "stack_closed")
    refused(s, 0, {"pagoda": {"type": "LEAF_TYPE_CHERRY"}}, RuleViolation, "stack_empty")
    assert [m for m in s.legal_moves(0) if "pagoda" in m] == [{"pagoda": {"type": "LEAF_TYPE_MAPLE"}}]
    s.apply(0, {"pagoda": {"type": "LEAF_TYPE_MAPLE"}})
    assert s.stacks[0][MAPLE] == [k(MAPLE, Z_R)] and s.discard == [k(MAPLE, O_N)]


def test_power_rain_shower():
    hands = [[k(MAPLE, Z_R)], [k(OAK, O_N), k(OAK, TH)], [], [k(BIRCH, Z_B)]]
    s = mk(4, landscapes=[["POWER_RAIN_SHOWER"], [], [], []], hands=hands)
    s.apply(0, {"use_power": {"power": "POWER_RAIN_SHOWER"}})
    assert s.phase == "PHASE_RAIN_SHOWER" and s.active_seats() == [1, 3]  # seat 2 has no card
    assert s.legal_moves(0) == [] and s.legal_moves(2) == []
    refused(s, 0, {"end_turn": {}}, NotYourTurn)
    refused(s, 1, {"discard_card": {"card": k(BIRCH, Z_B)}}, RuleViolation, "card_not_in_hand")
    ev = s.apply(3, {"discard_card": {"card": k(BIRCH, Z_B)}})
    assert ev[0].body["cards_discarded"]["reason"] == "DISCARD_REASON_RAIN_SHOWER"
    assert s.active_seats() == [1]
    s.apply(1, {"discard_card": {"card": k(OAK, TH)}})
    assert s.phase == "PHASE_MAIN" and s.active_seats() == [0]
    assert s.hands == [[k(MAPLE, Z_R)], [k(OAK, O_N)], [], []]


# --------------------------------------------------------------------------- turn end, hand limit


def test_main_action_required_unless_impossible():
    s = mk(2, display=[k(OAK, Z_R)])
    refused(s, 0, {"end_turn": {}}, RuleViolation, "main_action_required")
    # nothing to collect (empty display and deck), nothing playable, too few acorns for a goal
    s = mk(2, hands=[[k(MAPLE, O_N)], []], goals=["GOAL_MOST_CARDS"], deck=[], acorns=[2, 2])
    s.discard = [c for c in range(56) if c != k(MAPLE, O_N)]
    assert {"end_turn": {}} in s.legal_moves(0)
    s.apply(0, {"end_turn": {}})
    assert s.turn == 1


def test_hand_limit_discard_down_to_eight():
    hand = [k(MAPLE, c) for c in range(10)]
    s = mk(2, hands=[hand, []], main_done=True)
    ev = s.apply(0, {"end_turn": {}})
    assert s.phase == "PHASE_HAND_LIMIT" and s.active_seats() == [0]
    # issue 14: the committed move tells every watcher that the turn seat now discards
    assert [(e.body, e.to) for e in ev] == [
        ({"phase_changed": {"seat": 0, "phase": "PHASE_HAND_LIMIT", "hand_size": 10}}, None)
    ]
    assert s.legal_moves(0) == [{"discard_card": {"card": c}} for c in hand]
    s.apply(0, {"discard_card": {"card": k(MAPLE, 9)}})
    assert s.phase == "PHASE_HAND_LIMIT" and s.turn == 0
    ev = s.apply(0, {"discard_card": {"card": k(MAPLE, 0)}})
    assert len(s.hands[0]) == 8 and s.turn == 1 and s.phase == "PHASE_MAIN"
    assert ev[0].body["cards_discarded"]["reason"] == "DISCARD_REASON_HAND_LIMIT"
    assert "turn_ended" in kinds(ev)


def test_eight_cards_is_within_the_limit():
    s = mk(2, hands=[[k(MAPLE, c) for c in range(8)], []], main_done=True)
    s.apply(0, {"end_turn": {}})
    assert s.turn == 1 and s.phase == "PHASE_MAIN"


def test_turn_flags_reset_and_round_counts():
    s = mk(2, hands=[[k(MAPLE, Z_R), k(MAPLE, O_N)], []], main_done=True, discard_used=True, power_used=True)
    s.apply(0, {"end_turn": {}})
    assert (s.turn, s.main_done, s.discard_used, s.power_used, s.round) == (1, False, False, False, 1)
    s.main_done = True
    s.apply(1, {"end_turn": {}})
    assert (s.turn, s.round) == (0, 2)


# --------------------------------------------------------------------------- end of the game


def test_deck_empty_ends_after_the_round():
    # 3 players; seat 0 collects and the refill empties the deck: seats 1 and 2 still play.
    deck = [k(OAK, Z_R)]
    s = mk(3, display=[k(MAPLE, Z_R)], deck=deck)
    s.discard = [c for c in range(70) if c not in (k(MAPLE, Z_R), k(OAK, Z_R))]
    ev = s.apply(0, {"collect": {"type": "LEAF_TYPE_MAPLE"}})
    assert ev[-1].body == {"game_end_triggered": {"reason": "END_REASON_DECK_EMPTY", "seat": 0}}
    assert s.ending and not s.is_over()
    s.apply(0, {"end_turn": {}})
    s.apply(1, {"collect": {"type": "LEAF_TYPE_OAK"}})  # draws nothing: the deck is empty
    assert s.display == []
    s.apply(1, {"end_turn": {}})
    assert not s.is_over() and s.turn == 2
    ev = s.apply(2, {"end_turn": {}})  # nothing possible: may end without a main action
    assert s.is_over() and s.active_seats() == [] and kinds(ev) == ["turn_ended", "game_finished"]
    assert s.legal_moves(2) == [] and s.view(0)["phase"] == "PHASE_OVER"


def test_last_seat_triggering_ends_at_once():
    s = mk(2, display=[k(MAPLE, Z_R)], deck=[k(OAK, Z_R)], turn=1)
    s.discard = [c for c in range(56) if c not in (k(MAPLE, Z_R), k(OAK, Z_R))]
    s.apply(1, {"collect": {"type": "LEAF_TYPE_MAPLE"}})
    s.apply(1, {"end_turn": {}})
    assert s.is_over()


def test_last_torii_ends_and_blocks_further_closing():
    # 2 players: 4 torii. Three stacks already closed; seat 0 closes the fourth.
    closed = [k(MAPLE, Z_R), k(MAPLE, O_N), k(MAPLE, T_N), k(MAPLE, TH)]
    st = stacks(
        2,
        s0={MAPLE: closed, GINKGO: [k(GINKGO, Z_R), k(GINKGO, O_N), k(GINKGO, T_N)]},
        s1={
            MAPLE: [k(MAPLE, Z_L), k(MAPLE, O_L), k(MAPLE, T_B), k(MAPLE, TH2)],
            OAK: [k(OAK, Z_R), k(OAK, O_N), k(OAK, T_N), k(OAK, TH)],
            CHERRY: [k(CHERRY, Z_R), k(CHERRY, O_N), k(CHERRY, T_N)],
        },
    )
    s = mk(2, stacks=st, hands=[[k(GINKGO, TH)], [k(CHERRY, TH)]], display=[k(OAK, Z_B)])
    assert s.torii_supply() == 1
    ev = s.apply(0, {"place_card": {"card": k(GINKGO, TH)}})
    assert s.torii_supply() == 0
    assert ev[-1].body == {"game_end_triggered": {"reason": "END_REASON_LAST_TORII", "seat": 0}}
    s.apply(0, {"finish_play": {}})
    s.apply(0, {"end_turn": {}})
    refused(s, 1, {"place_card": {"card": k(CHERRY, TH)}}, RuleViolation, "no_torii")
    assert {"place_card": {"card": k(CHERRY, TH)}} not in s.legal_moves(1)
    s.apply(1, {"collect": {"type": "LEAF_TYPE_OAK"}})
    s.apply(1, {"end_turn": {}})
    assert s.is_over()


# --------------------------------------------------------------------------- scoring


def test_stack_scoring_and_acorns():
    st = stacks(
        2,
        s0={MAPLE: [k(MAPLE, Z_R), k(MAPLE, O_N), k(MAPLE, O_L)], GINKGO: [k(GINKGO, Z_R)]},
        s1={OAK: [k(OAK, Z_R), k(OAK, O_N), k(OAK, T_N), k(OAK, TH)]},
    )
    s = mk(2, stacks=st, acorns=[3, 0])
    lines = s.score_lines()
    assert lines[0] == {"seat": 0, "stacks": 3, "acorns": 3, "goals": 0, "total": 6}  # 1 x 3 + 0 x 1
    assert lines[1] == {"seat": 1, "stacks": 12, "acorns": 0, "goals": 0, "total": 12}  # 3 x 4
    assert s.scores() == [6, 12]


def test_goal_holder_ten_others_three_ties_share():
    # GOAL_MOST_CARDS held by seat 1; seats 0 and 1 tie with 2 cards, seat 2 has 1.
    st = stacks(
        3,
        s0={MAPLE: [k(MAPLE, Z_R), k(MAPLE, Z_L)]},
        s1={GINKGO: [k(GINKGO, Z_R)], CHERRY: [k(CHERRY, Z_R)]},
        s2={OAK: [k(OAK, Z_R)]},
    )
    s = mk(3, stacks=st, goals=["GOAL_MOST_CARDS"], holders=[1], acorns=[0, 0, 0])
    assert [line["goals"] for line in s.score_lines()] == [3, 10, 0]


def test_goal_holder_not_best_scores_nothing():
    st = stacks(2, s0={MAPLE: [k(MAPLE, Z_R), k(MAPLE, Z_L)]}, s1={GINKGO: [k(GINKGO, Z_R)]})
    s = mk(2, stacks=st, goals=["GOAL_MOST_CARDS"], holders=[1], acorns=[0, 0])
    assert [line["goals"] for line in s.score_lines()] == [3, 0]


def test_unactivated_goal_scores_nothing():
    st = stacks(2, s0={MAPLE: [k(MAPLE, Z_R), k(MAPLE, Z_L)]})
    s = mk(2, stacks=st, goals=["GOAL_MOST_CARDS"], acorns=[0, 0])
    assert [line["goals"] for line in s.score_lines()] == [0, 0]


# Each goal: a position, and the seats that meet it (holder seat 0).
GOAL_CASES = {
    "GOAL_MOST_ZEROS": (
        {
            "s0": {MAPLE: [k(MAPLE, Z_R), k(MAPLE, Z_L)]},
            "s1": {MAPLE: [k(MAPLE, Z_B), k(MAPLE, O_N), k(MAPLE, O_L)]},
        },
        [0],
    ),
    "GOAL_MOST_CARDS": ({"s0": {MAPLE: [k(MAPLE, Z_R)]}, "s1": {MAPLE: [k(MAPLE, Z_B), k(MAPLE, O_N)]}}, [1]),
    "GOAL_HIGHEST_TOP_SUM": (
        {
            "s0": {MAPLE: [k(MAPLE, Z_R), k(MAPLE, O_N)], GINKGO: [k(GINKGO, Z_R)]},
            "s1": {OAK: [k(OAK, Z_R), k(OAK, O_N)]},
        },
        [0, 1],
    ),
    "GOAL_MOST_CLOSED": (
        {
            "s0": {MAPLE: [k(MAPLE, Z_R), k(MAPLE, O_N), k(MAPLE, T_N), k(MAPLE, TH)]},
            "s1": {OAK: [k(OAK, Z_R)]},
        },
        [0],
    ),
    "GOAL_MOST_TYPES": (
        {"s0": {MAPLE: [k(MAPLE, Z_R)]}, "s1": {OAK: [k(OAK, Z_R)], GINKGO: [k(GINKGO, Z_R)]}},
        [1],
    ),
    "GOAL_LONGEST_STACK": (
        {
            "s0": {MAPLE: [k(MAPLE, Z_R), k(MAPLE, Z_L), k(MAPLE, Z_B)]},
            "s1": {OAK: [k(OAK, Z_R)], GINKGO: [k(GINKGO, Z_R), k(GINKGO, Z_L)]},
        },
        [0],
    ),
    "GOAL_MOST_ACORNS": ({}, [1]),  # acorns [2, 5] below
    "GOAL_FEWEST_HAND": ({}, [0]),  # hands 1 and 2 cards below
    "GOAL_MOST_FIRST_TYPE": (
        {"s0": {MAPLE: [k(MAPLE, Z_R)]}, "s1": {MAPLE: [k(MAPLE, Z_L)], OAK: [k(OAK, Z_R)]}},
        [0, 1],
    ),
    "GOAL_MOST_SECOND_TYPE": ({"s0": {MAPLE: [k(MAPLE, Z_R)]}, "s1": {GINKGO: [k(GINKGO, Z_L)]}}, [1]),
    "GOAL_MOST_THIRD_TYPE": (
        {"s0": {CHERRY: [k(CHERRY, Z_R), k(CHERRY, Z_L)]}, "s1": {CHERRY: [k(CHERRY, Z_B)]}},
        [0],
    ),
    "GOAL_MOST_THREES_ON_TOP": (
        {
            "s0": {MAPLE: [k(MAPLE, Z_R)]},
            "s1": {MAPLE: [k(MAPLE, Z_L), k(MAPLE, O_N), k(MAPLE, T_N), k(MAPLE, TH)]},
        },
        [1],
    ),
}


@pytest.mark.parametrize("goal", GOAL_NAMES)
def test_each_goal(goal):
    spec, best = GOAL_CASES[goal]
    s = mk(
        2,
        stacks=stacks(2, **spec),
        goals=[goal],
        holders=[0],
        acorns=[2, 5],
        hands=[[k(OAK, O_N)], [k(OAK, O_L), k(OAK, T_N)]],
    )
    expected = [(10 if seat == 0 else 3) if seat in best else 0 for seat in range(2)]
    assert [line["goals"] for line in s.score_lines()] == expected


def test_most_goal_needs_a_value_above_zero():
    s = mk(2, goals=["GOAL_MOST_ZEROS"], holders=[0], acorns=[0, 0])
    assert [line["goals"] for line in s.score_lines()] == [0, 0]


def test_shared_victory():
    st = stacks(2, s0={MAPLE: [k(MAPLE, Z_R), k(MAPLE, O_N)]}, s1={OAK: [k(OAK, Z_R), k(OAK, O_N)]})
    s = mk(2, stacks=st, acorns=[1, 1], phase="PHASE_OVER")
    assert s.scores() == [3, 3] and s.winners() == [0, 1]
    s.acorns = [2, 1]
    assert s.winners() == [0]


# --------------------------------------------------------------------------- views, errors


def test_view_shows_own_hand_only():
    hands = [[k(MAPLE, Z_R), k(OAK, TH)], [k(GINKGO, O_N)]]
    st = stacks(2, s1={CHERRY: [k(CHERRY, Z_R)]})
    s = mk(2, hands=hands, stacks=st, display=[k(OAK, Z_B)], goals=["GOAL_MOST_CARDS"], acorns=[2, 4])
    v0, v1, spec = s.view(0), s.view(1), s.view(None)
    assert [c["id"] for c in v0["hand"]] == [k(MAPLE, Z_R), k(OAK, TH)]
    assert [c["id"] for c in v1["hand"]] == [k(GINKGO, O_N)]
    assert spec["hand"] == []
    for v, hidden in ((v0, hands[1]), (v1, hands[0]), (spec, hands[0] + hands[1])):
        text = json.dumps(v)
        ids = _ids(v)
        assert not ids & set(hidden) and not ids & set(s.deck)
        assert "seed" not in text and 'deck"' not in text
        assert [p["hand_size"] for p in v["players"]] == [2, 1]
        assert [p["acorns"] for p in v["players"]] == [2, 4]
        assert v["players"][1]["stacks"][0]["cards"][0]["id"] == k(CHERRY, Z_R)
        assert v["deck_size"] == len(s.deck) and v["display"][0]["id"] == k(OAK, Z_B)
        assert v["goals"] == [{"goal": "GOAL_MOST_CARDS", "activated": False, "holder": 0}]


def _ids(obj) -> set[int]:
    out: set[int] = set()
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("id", "card") and isinstance(value, int):
                out.add(value)
            else:
                out |= _ids(value)
    elif isinstance(obj, list):
        for value in obj:
            out |= _ids(value)
    return out


def test_not_your_turn():
    s = mk(2, display=[k(MAPLE, Z_R)])
    refused(s, 1, {"collect": {"type": "LEAF_TYPE_MAPLE"}}, NotYourTurn, "not_your_turn")
    refused(s, 7, {"collect": {"type": "LEAF_TYPE_MAPLE"}}, NotYourTurn)
    assert s.legal_moves(1) == []


def test_malformed_moves():
    s = mk(2, hands=[[k(MAPLE, Z_R)], []], display=[k(MAPLE, Z_L)])
    assert refused(s, 0, {"fly": {}}, MalformedMove).rule == "move"
    assert refused(s, 0, {}, MalformedMove).rule == "move"
    assert refused(s, 0, {"place_card": {"card": 56}}, MalformedMove).rule == "move.place_card.card"
    assert refused(s, 0, {"place_card": {"card": -1}}, MalformedMove).rule == "move.place_card.card"
    assert refused(s, 0, {"place_card": {"card": "3"}}, MalformedMove).rule == "move.place_card.card"
    assert refused(s, 0, {"place_card": {"card": 0, "x": 1}}, MalformedMove).rule == "move.place_card.x"
    # Birch is not in a 2-player match (4 types)
    assert refused(s, 0, {"collect": {"type": "LEAF_TYPE_BIRCH"}}, MalformedMove).rule == "move.collect.type"
    assert (
        refused(s, 0, {"collect": {"type": "LEAF_TYPE_UNSPECIFIED"}}, MalformedMove).rule
        == "move.collect.type"
    )
    assert refused(s, 0, {"use_power": {"power": "POWER_X"}}, MalformedMove).rule == "move.use_power.power"
    refused(s, 0, {"finish_play": {}}, RuleViolation, "wrong_phase")
    refused(s, 0, {"temple_bell_choose": {"keep": 0, "back_on_top": []}}, RuleViolation, "wrong_phase")
    refused(s, 0, {"discard_card": {"card": 0}}, RuleViolation, "wrong_phase")


def test_legal_moves_list_every_copy_of_identical_cards():
    # issue 9: Maple copies 7 and 8 are both a 1 without acorns: each is its own legal move
    st = stacks(2, s0={MAPLE: [k(MAPLE, Z_R)]})
    twins = [k(MAPLE, O_N), k(MAPLE, O_N2)]
    s = mk(
        2,
        stacks=st,
        hands=[[*twins, k(OAK, O_N)], []],
        display=[k(GINKGO, Z_L), k(GINKGO, Z_L2)],
        landscapes=[["POWER_KOI_POND"], []],
    )
    moves = s.legal_moves(0)
    assert [m for m in moves if "place_card" in m] == [{"place_card": {"card": c}} for c in twins]
    assert [m["discard_for_acorn"]["cards"] for m in moves if "discard_for_acorn" in m] == [
        twins,
        [twins[0], k(OAK, O_N)],
        [twins[1], k(OAK, O_N)],
    ]
    koi = [(m["koi_pond"]["hand_card"], m["koi_pond"]["display_card"]) for m in moves if "koi_pond" in m]
    assert len(koi) == 3 * 2 and len(set(koi)) == 6
    s.apply(0, {"place_card": {"card": k(MAPLE, O_N2)}})
    assert s.stacks[0][MAPLE] == [k(MAPLE, Z_R), k(MAPLE, O_N2)]


# --------------------------------------------------------------------------- platform hooks


def test_timeout_move_ends_the_turn_when_allowed_else_the_cheapest_main_action():
    s = mk(2, display=[k(GINKGO, Z_L)], hands=[[k(MAPLE, Z_R)], []])
    assert s.timeout_move(0) == {"collect": {"type": "LEAF_TYPE_GINKGO"}}
    s.apply(0, s.timeout_move(0))
    assert s.timeout_move(0) == {"end_turn": {}}
    s = mk(2, hands=[[k(MAPLE, Z_R), k(OAK, O_N)], []], acorns=[0, 2])  # empty display, no reveal
    assert s.timeout_move(0) == {"place_card": {"card": k(MAPLE, Z_R)}}
    s.apply(0, s.timeout_move(0))
    assert s.timeout_move(0) == {"finish_play": {}}
    s = mk(2, hands=[[k(MAPLE, c) for c in range(10)], []], main_done=True)
    s.apply(0, {"end_turn": {}})
    assert s.timeout_move(0) == {"discard_card": {"card": k(MAPLE, 0)}}
    with pytest.raises(NotYourTurn):
        s.timeout_move(1)


def test_opening_events_are_the_deal():
    s = State.new(3, 4, {"draft_landscapes": False})
    events = s.opening_events()
    assert [(kinds([e])[0], e.to) for e in events] == [
        ("cards_drawn", None),
        ("cards_drawn", (0,)),
        ("cards_drawn", None),
        ("cards_drawn", (1,)),
        ("cards_drawn", None),
        ("cards_drawn", (2,)),
        ("display_added", None),
    ]
    assert [c["id"] for c in events[3].body["cards_drawn"]["cards"]] == s.hands[1]
    assert [c["id"] for c in events[-1].body["display_added"]["cards"]] == s.display
