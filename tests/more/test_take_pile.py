"""More: taking the discard pile and the 7.5 rule (issue 13), on hand-built positions."""

from __future__ import annotations

from services.engine import RuleViolation
from services.more.rules import State
from tests.more.helpers import c, cs, hand_points, meld, position
from tests.more.test_rules import add, discard, lay, refused

TAKE = {"take_pile": {}}


def test_take_when_the_top_card_fits_only_after_an_addition_from_the_hand():
    """Issue 13's example: the Pair's Q-K-A of clubs, 3C JC AS in hand, 10C on the pile: add JC
    below the meld, then 10C."""
    state = position(
        [cs("KH 5H 6H"), cs("3C JC AS"), cs("QH JH 10H")],
        solo=0,
        turn=1,
        phase="draw",
        melds=[meld("pair", cs("QC KC AC"))],
        discard=cs("4D 7C 9C 10C"),
    )
    assert TAKE in state.legal_moves(1)
    state.apply(1, TAKE)
    refused(state, 1, add(0, c("10C"), low_end=True), RuleViolation, "meld_fit")
    state.apply(1, add(0, c("JC"), low_end=True))
    assert add(0, c("10C"), low_end=True) in state.legal_moves(1)
    state.apply(1, add(0, c("10C"), low_end=True))
    state.apply(1, discard(c("3C")))
    assert state.to_dict()["melds"][0]["cards"] == cs("10C JC QC KC AC")
    assert state.active_seats() == [2]


def test_take_when_the_top_card_fits_only_after_two_additions():
    state = position(
        [cs("KH 5H 6H"), cs("3C JC 10C AS"), cs("QH JH 10H")],
        solo=0,
        turn=1,
        phase="draw",
        melds=[meld("pair", cs("QC KC AC"))],
        discard=cs("4D 9C"),
    )
    assert TAKE in state.legal_moves(1)
    state.apply(1, TAKE)
    for card in cs("JC 10C 9C"):
        state.apply(1, add(0, card, low_end=True))
    state.apply(1, discard(c("4D")))  # a locked card of the pile may be discarded
    assert state.to_dict()["melds"][0]["cards"] == cs("9C 10C JC QC KC AC")
    # without the 10C the 9C cannot be reached: no take
    short = position(
        [cs("KH 5H 6H"), cs("3C JC AS 7D"), cs("QH JH 10H")],
        solo=0,
        turn=1,
        phase="draw",
        melds=[meld("pair", cs("QC KC AC"))],
        discard=cs("4D 9C"),
    )
    refused(short, 1, TAKE, RuleViolation, "take_pile_meld_top")


SOLO_6_0 = cs("8D 9D 10D 4C 5C 6C 7C KS 9H 5S 3H")  # with JD: 8D-JD 4.0 + 4C-7C 2.0 = 6.0


def test_no_take_above_1500_when_no_going_down_with_the_top_card_reaches_7_5():
    """Issue 13's example (a): a Solo at 1570, not down, JD alone on the pile, best 6.0."""
    state = position(
        [SOLO_6_0, cs("KH 5H 6H"), cs("QH JH 10H")],
        solo=0,
        turn=0,
        phase="draw",
        scores=(1570, 0, 0),
        discard=cs("JD"),
    )
    assert state.view(1)["minimum_binds"] == [True, False, False]
    refused(state, 0, TAKE, RuleViolation, "take_pile_meld_top")
    # the same hand below 1500 may take: no minimum
    free = position(
        [SOLO_6_0, cs("KH 5H 6H"), cs("QH JH 10H")],
        solo=0,
        turn=0,
        phase="draw",
        scores=(1500, 0, 0),
        discard=cs("JD"),
    )
    assert free.view(1)["minimum_binds"] == [False, False, False]
    assert TAKE in free.legal_moves(0)


def test_a_7_5_opening_that_needs_the_top_card():
    # without AH: 8S-JS 4.0 only; with it QH KH AH adds 3.5: exactly 7.5
    hand = cs("QH KH 8S 9S 10S JS 3D 5D 7C 9C 4H")
    state = position(
        [hand, cs("KC 5C 6C"), cs("QC JC 10C")],
        solo=0,
        turn=0,
        phase="draw",
        scores=(1600, 0, 0),
        discard=cs("AH"),
    )
    assert TAKE in state.legal_moves(0)
    state.apply(0, TAKE)
    state.apply(0, lay(cs("QH KH AH")))
    state.apply(0, lay(cs("8S 9S 10S")))
    refused(state, 0, discard(c("3D")), RuleViolation, "going_down_7_5")
    state.apply(0, add(1, c("JS")))
    assert state.view(0)["opening_half_points"] == 15
    state.apply(0, discard(c("3D")))
    assert state.view(0)["minimum_binds"] == [False, False, False]
    # one point less (7S for 8S: the spades give 9S 10S JS = 3.0): 6.5, no take
    weaker = [c("7S") if x == c("8S") else x for x in hand]
    state = position(
        [weaker, cs("KC 5C 6C"), cs("QC JC 10C")],
        solo=0,
        turn=0,
        phase="draw",
        scores=(1600, 0, 0),
        discard=cs("AH"),
    )
    refused(state, 0, TAKE, RuleViolation, "take_pile_meld_top")


def test_no_take_when_no_card_could_be_discarded_after_melding_the_top():
    """Issue 13's example (b): a Solo holding only 8D; 4H fits his meld; no biriba."""
    melds = [meld("solo", cs("5H 6H 7H"))]
    state = position(
        [cs("8D"), cs("KH 5S 6S"), cs("QH JH 10H")],
        solo=0,
        turn=0,
        phase="draw",
        melds=melds,
        discard=cs("4H"),
    )
    refused(state, 0, TAKE, RuleViolation, "take_pile_meld_top")
    # with a second card of the pile staying in the hand, the discard is possible
    state = position(
        [cs("8D"), cs("KH 5S 6S"), cs("QH JH 10H")],
        solo=0,
        turn=0,
        phase="draw",
        melds=melds,
        discard=cs("9C 4H"),
    )
    assert TAKE in state.legal_moves(0)
    state.apply(0, TAKE)
    state.apply(0, add(0, c("4H"), low_end=True))
    state.apply(0, discard(c("8D")))
    # with a biriba on the table the last card takes the More pile: the take is legal again
    biriba = meld("solo", cs("5H 6H 7H 8H 9H 10H JH"))
    state = position(
        [cs("8D"), cs("KH 5S 6S"), cs("QH QD 10D")],
        solo=0,
        turn=0,
        phase="draw",
        melds=[biriba],
        discard=cs("4H"),
    )
    assert TAKE in state.legal_moves(0)
    state.apply(0, TAKE)
    state.apply(0, add(0, c("4H"), low_end=True))
    state.apply(0, discard(c("8D")))
    assert state.to_dict()["more_state"]["solo"] == "taken"


def test_a_take_that_empties_the_hand_into_the_more_pile():
    # 9C..AC on the table (6 cards): the 8C of the pile makes it a biriba, then the 7C empties the
    # hand and takes the More pile at once; the turn ends with a discard from the new hand
    melds = [meld("pair", cs("9C 10C JC QC KC AC"))]
    state = position(
        [cs("KH 5H 6H"), cs("7C"), cs("QH JH 10H")],
        solo=0,
        turn=1,
        phase="draw",
        melds=melds,
        discard=cs("8C"),
    )
    assert TAKE in state.legal_moves(1)
    state.apply(1, TAKE)
    state.apply(1, add(0, c("8C"), low_end=True))
    state.apply(1, add(0, c("7C"), low_end=True))
    assert state.to_dict()["more_state"]["pair"] == "taken" and len(state.to_dict()["hands"][1]) == 11
    state.apply(1, discard(state.to_dict()["hands"][1][0]))


def test_a_two_taken_as_the_pankal_of_a_later_meld_of_another_suit():
    """The top 2C fits the Pair's 3C-5C as its natural card, but only as the pankal of the 6-card
    hearts run after it does it make the biriba that lets the last card (9S) be discarded into
    the More pile. (The take search once skipped, for a 2, every meld after one of its own suit
    where it last fitted as a natural card: this take was refused.)"""
    melds = [meld("pair", cs("3C 4C 5C")), meld("pair", cs("6H 7H 8H 9H 10H JH"))]
    state = position(
        [cs("KD 5D 6D"), cs("9S"), cs("QD JD 10D")],
        solo=0,
        turn=1,
        phase="draw",
        melds=melds,
        discard=cs("2C"),
    )
    assert TAKE in state.legal_moves(1)
    state.apply(1, TAKE)
    refused(state, 1, add(0, c("2C"), low_end=True), RuleViolation, "empty_hand")
    state.apply(1, add(1, c("2C"), low_end=False))
    state.apply(1, discard(c("9S")))
    assert state.to_dict()["more_state"]["pair"] == "taken"
    assert state.to_dict()["melds"][1]["cards"] == cs("6H 7H 8H 9H 10H JH 2C")


def test_no_take_when_the_hand_would_empty_before_the_biriba_exists():
    # 10C..AC (5 cards), 8C in hand, 9C on the pile: 9C first leaves the 8C alone with no biriba
    # on the table (refused), and 8C cannot go before 9C
    melds = [meld("pair", cs("10C JC QC KC AC"))]
    state = position(
        [cs("KH 5H 6H"), cs("8C"), cs("QH JH 10H")],
        solo=0,
        turn=1,
        phase="draw",
        melds=melds,
        discard=cs("9C"),
    )
    refused(state, 1, TAKE, RuleViolation, "take_pile_meld_top")
    forced = State.from_dict(state.to_dict())
    forced._do_take_pile(1, {})
    refused(forced, 1, add(0, c("9C"), low_end=True), RuleViolation, "empty_hand")


def test_partner_at_or_below_1500_down_with_3_points_exempts_nobody():
    # seat 1 (1000) goes down with 8H 9H 10H: 3.0; seat 2 (1600) must still reach 7.5 himself,
    # and the cards he adds to seat 1's meld count
    hands = [cs("KC 5C 6C"), cs("8H 9H 10H 4D 9D"), cs("JH QS KS AS 9C 10C JC 3D 7S")]
    state = position(hands, solo=0, turn=1, phase="play", scores=(0, 1000, 1600))
    assert state.view(0)["minimum_binds"] == [False, False, True]
    state.apply(1, lay(cs("8H 9H 10H")))
    state.apply(1, discard(c("4D")))
    assert state.view(0)["minimum_binds"] == [False, False, True]
    state.apply(2, {"draw": {}})
    drawn = state.to_dict()["hands"][2][-1]
    assert state.view(2)["opening"]
    state.apply(2, add(0, c("JH")))  # 1.0 onto the partner's meld
    state.apply(2, lay(cs("QS KS AS")))  # 3.5
    refused(state, 2, discard(drawn), RuleViolation, "going_down_7_5")  # 4.5
    state.apply(2, lay(cs("9C 10C JC")))  # 3.0: 7.5
    state.apply(2, discard(drawn))
    assert state.view(0)["minimum_binds"] == [False, False, False]


def test_partner_at_or_below_1500_down_with_7_5_exempts_the_other():
    hands = [cs("KC 6D 7D"), cs("8H 9H 10H QS KS AS 9D 4D"), cs("3C 4C 5C 9S")]
    state = position(hands, solo=0, turn=1, phase="play", scores=(0, 1000, 1600))
    state.apply(1, lay(cs("8H 9H 10H")))
    state.apply(1, lay(cs("QS KS AS")))  # 6.5
    state.apply(1, discard(c("9D")))
    assert state.view(2)["minimum_binds"] == [False, False, True]  # 6.5 is not 7.5
    hands = [cs("KC 6D 7D"), cs("8H 9H 10H JH QS KS AS 9D 4D"), cs("3C 4C 5C 9S")]
    state = position(hands, solo=0, turn=1, phase="play", scores=(0, 1000, 1600))
    for move in (lay(cs("8H 9H 10H")), add(0, c("JH")), lay(cs("QS KS AS")), discard(c("9D"))):
        state.apply(1, move)
    assert state.view(2)["minimum_binds"] == [False, False, False]


def test_both_partners_above_1500_the_first_down_with_7_5_exempts_the_other():
    hands = [cs("KC 6D 7D"), cs("8H 9H 10H JH QS KS AS 9D 4D"), cs("3C 4C 5C 9S")]
    state = position(hands, solo=0, turn=1, phase="play", scores=(0, 1600, 1700))
    assert state.view(None)["minimum_binds"] == [False, True, True]
    state.apply(1, lay(cs("8H 9H 10H")))
    state.apply(1, lay(cs("QS KS AS")))
    refused(state, 1, discard(c("9D")), RuleViolation, "going_down_7_5")  # 6.5
    state.apply(1, add(0, c("JH")))
    state.apply(1, discard(c("9D")))
    assert state.view(None)["minimum_binds"] == [False, False, False]
    state.apply(2, {"draw": {}})
    assert not state.view(2)["opening"]
    state.apply(2, lay(cs("3C 4C 5C")))  # 1.5 is enough now
    state.apply(2, discard(c("9S")))


def test_a_going_down_taken_back_is_no_going_down():
    hands = [cs("KC 6D 7D"), cs("8H 9H 10H JH QS KS AS 9D 4D"), cs("3C 4C 5C 9S")]
    state = position(hands, solo=0, turn=1, phase="play", scores=(0, 1600, 1700))
    state.apply(1, lay(cs("8H 9H 10H")))
    state.apply(1, {"take_back": {}})
    state.apply(1, discard(c("9D")))
    assert state.view(None)["minimum_binds"] == [False, True, True]


def _last_card(more_state: dict[str, str]) -> State:
    state = position(
        [cs("KC 5C 6C"), cs("3S 4S 9D"), cs("QC JC 10C")], solo=0, turn=1, phase="draw", more_state=more_state
    )
    d = state.to_dict()
    d["draw"], d["discard"] = d["draw"][-1:], d["discard"] + d["draw"][:-1]
    return State.from_dict(d)


def test_the_player_who_draws_the_last_card_finishes_the_turn_then_the_piles_refill():
    state = _last_card({"pair": "waiting", "solo": "waiting"})
    last = state.to_dict()["draw"][0]
    state.apply(1, {"draw": {}})
    assert state.to_dict()["draw"] == [] and state.active_seats() == [1]
    hand = state.to_dict()["hands"][1]
    assert last in hand
    spare = next(x for x in hand if x not in cs("3S 4S"))
    events = state.apply(1, discard(spare))
    kinds = [next(iter(e.body)) for e in events]
    assert kinds == ["discarded", "draw_pile_refilled"]
    assert len(state.to_dict()["draw"]) == 22 and state.active_seats() == [2]


def test_the_player_who_draws_the_last_card_finishes_the_turn_then_the_round_ends():
    state = _last_card({"pair": "taken", "solo": "drawn"})
    state.apply(1, {"draw": {}})
    assert state.to_dict()["round"] == 1 and state.active_seats() == [1]
    hand = state.to_dict()["hands"][1]
    spare = next(x for x in hand if x != c("9D"))
    events = state.apply(1, discard(spare))
    ended = next(e.body["round_ended"]["result"] for e in events if "round_ended" in e.body)
    assert ended["end"] == "ROUND_END_EXHAUSTED" and ended["round"] == 1
    assert ended["seats"][1]["hand_points"] == hand_points([x for x in hand if x != spare])
