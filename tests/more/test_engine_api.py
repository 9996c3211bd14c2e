"""More: the engine API's opening events, timeout policy and complete legal-move lists."""

from __future__ import annotations

import itertools
import json
import random

from services.engine import RuleViolation
from services.more.cards import points
from services.more.rules import TARGET, State
from tests.more.helpers import c, check_invariants, cs, meld, position
from tests.more.test_playouts import choose
from tests.more.test_rules import add, discard, lay

OPTS = {"bid_for_solo": False, "max_rounds": 1}


def kinds(events) -> list[str]:
    return [next(iter(e.body)) for e in events]


def test_opening_events_are_round_1s_set_up_as_new_made_it():
    for seed in range(5):
        state = State.new(3, seed, OPTS)
        s = state.to_dict()
        events = state.opening_events()
        assert kinds(events) == [
            "round_started",
            "roles_assigned",
            "dealt",
            "hand_dealt",
            "hand_dealt",
            "hand_dealt",
        ]
        assert events[0].body["round_started"] == {"round": 1, "dealer": s["dealer"], "bidding": False}
        assert events[1].body["roles_assigned"]["solo"] == s["solo"]
        assert events[2].body["dealt"]["discard"]["id"] == s["discard"][-1]
        for seat in range(3):
            (dealt,) = [e for e in events if e.to == (seat,)]
            assert [x["id"] for x in dealt.body["hand_dealt"]["cards"]] == s["hands"][seat]
        assert all(e.to is None for e in events[:3])
        # asked again, after moves: the same events
        seat = state.active_seats()[0]
        state.apply(seat, {"draw": {}})
        assert [(e.body, e.to) for e in state.opening_events()] == [(e.body, e.to) for e in events]
    bidding = State.new(3, 1, {"bid_for_solo": True, "max_rounds": 1})
    assert [e.body for e in bidding.opening_events()] == [
        {"round_started": {"round": 1, "dealer": bidding.to_dict()["dealer"], "bidding": True}}
    ]


def test_opening_events_are_those_a_later_round_starts_with():
    state = State.new(3, 3, {"bid_for_solo": False, "max_rounds": 2})
    r = random.Random(3)
    while True:
        seat = state.active_seats()[0]
        events = state.apply(seat, r.choice(state.legal_moves(seat)))
        names = kinds(events)
        if "round_ended" in names:
            later = events[names.index("round_ended") + 1 :]
            assert kinds(later) == kinds(State.new(3, 3, OPTS).opening_events())
            assert [e.to for e in later] == [None, None, None, (0,), (1,), (2,)]
            return


def test_timeout_move_is_legal_deterministic_and_ends_a_match():
    for seed in range(6):
        options = {"bid_for_solo": seed % 2 == 1, "max_rounds": 1}
        state = State.new(3, seed, options)
        steps = 0
        while not state.is_over():
            steps += 1
            assert steps < 5000
            seat = state.active_seats()[0]
            move = state.timeout_move(seat)
            assert move in state.legal_moves(seat)
            assert State.from_dict(state.to_dict()).timeout_move(seat) == move
            state.apply(seat, move)


def test_a_match_of_timeouts_with_default_options_reaches_the_target():
    """The server plays timeout_move for a seat whose time ran out: a match in which every
    decision times out ends like any other, at 3100, cards accounted for at every step."""
    for seed, options in ((1, {}), (2, {"bid_for_solo": True})):
        state = State.new(3, seed, options)
        steps = 0
        while not state.is_over():
            steps += 1
            assert steps <= 20_000, f"seed {seed}: no end after 20,000 timeout moves"
            for seat in state.active_seats():
                state.apply(seat, state.timeout_move(seat))
                if steps % 50 == 0:
                    check_invariants(state)
        check_invariants(state)
        assert max(state.scores()) >= TARGET and state.winners()


def test_timeout_policy_draws_bids_zero_and_discards_the_least_valuable_card():
    bidding = State.new(3, 1, {"bid_for_solo": True, "max_rounds": 1})
    assert bidding.timeout_move(0) == {"bid": {"amount": 0}}
    state = position(
        [cs("KC 5C 6C"), cs("JK AS 4D 9H"), cs("QC JC 10C")], turn=1, phase="draw", discard=cs("4H")
    )
    assert state.timeout_move(1) == {"draw": {}}
    state = position([cs("KC 5C 6C"), [c("JK"), *cs("AS 9H 4D 2H")], cs("QC JC 10C")], turn=1)
    assert state.timeout_move(1) == discard(c("4D"))  # nothing to meld
    assert points(c("4D")) == 5


def test_timeout_policy_melds_what_the_hand_allows_then_discards():
    table = [meld("pair", cs("5D 6D 7D"))]
    state = position([cs("KC 5C 6C"), cs("8D 3S 4S 5S 9H KH"), cs("QC JC 10C")], turn=1, melds=table)
    assert state.timeout_move(1) == add(0, c("8D"), low_end=False)  # additions first
    state.apply(1, state.timeout_move(1))
    assert state.timeout_move(1) == lay(cs("3S 4S 5S"))
    state.apply(1, state.timeout_move(1))
    assert state.timeout_move(1) == discard(c("9H"))
    # a taken pile's top card is melded too
    state = position(
        [cs("KC 5C 6C"), cs("3S 4S 9H"), cs("QC JC 10C")], turn=1, phase="draw", discard=cs("9D 5S")
    )
    state.apply(1, {"take_pile": {}})
    assert state.timeout_move(1) == lay(cs("3S 4S 5S"))


def test_timeout_policy_under_the_7_5_minimum_melds_only_a_melding_that_reaches_it():
    short = position([cs("KC 5C 6C"), cs("3S 4S 5S 9H 9D"), cs("QC JC 10C")], turn=1, scores=(0, 1600, 0))
    assert short.timeout_move(1) == discard(c("3S"))  # 1.5 points: no going down, no take back
    enough = position(
        [cs("KC 5C 6C"), cs("JS QS KS AS 9H JH QH KH 4D"), cs("QC JC 10C")], turn=1, scores=(0, 1600, 0)
    )
    steps = []
    while "discard" not in (move := enough.timeout_move(1)):
        steps.append(move)
        enough.apply(1, move)
    assert steps and enough.to_dict()["t"]["halves"] >= 15
    enough.apply(1, move)
    assert enough.to_dict()["down"][1] and len(enough.to_dict()["melds"]) == 2


def test_timeout_policy_takes_back_when_no_discard_is_allowed():
    # the taken pile's top card not melded yet, and melding closed
    state = position(
        [cs("KC 5C 6C"), cs("3S 4S 9H"), cs("QC JC 10C")], turn=1, phase="draw", discard=cs("9D 5S")
    )
    state.apply(1, {"take_pile": {}})
    state.apply(1, {"take_back": {}})
    assert state.timeout_move(1) == {"draw": {}}
    # a going-down short of 7.5
    state = position([cs("KC 5C 6C"), cs("3S 4S 5S 9H 9D"), cs("QC JC 10C")], turn=1, scores=(0, 1600, 0))
    state.apply(1, lay(cs("3S 4S 5S")))
    assert state.timeout_move(1) == {"take_back": {}}


def test_every_copy_of_an_identical_card_is_listed():
    twins = [c("5S"), c("5S", 1), c("9H"), c("9H", 1), *cs("3S 4S 6S")]
    state = position(
        [cs("KC 5C 6C"), twins, cs("QC JC 10C")], turn=1, melds=[meld("pair", [c("6H"), c("7H"), c("8H")])]
    )
    legal = state.legal_moves(1)
    for card in twins:
        assert discard(card) in legal
    assert add(0, c("9H")) in legal and add(0, c("9H", 1)) in legal
    for five in (c("5S"), c("5S", 1)):
        assert lay([c("3S"), c("4S"), five]) in legal
        assert lay([c("4S"), five, c("6S")]) in legal
    assert len(legal) == len({str(m) for m in legal})  # each move once
    for move in legal:  # every listed move is accepted as it is
        State.from_dict(state.to_dict()).apply(1, move)


def accepted(state: State, seat: int, kind: str, body: dict) -> bool:
    try:
        state._validate(seat, kind, body)
    except RuleViolation:
        return False
    return True


def check_listing(state: State, seat: int) -> None:
    """The list is exactly what the rules accept, in the listed shapes: every addition and discard
    of every card, take_back, draw and take_pile; a 3-card meld once per set of card ids (runs in
    run order, the one order they are accepted in; ace-sets in one order)."""
    s = state.to_dict()
    legal = state.legal_moves(seat)
    listed = [json.dumps(m, sort_keys=True) for m in legal]
    assert len(listed) == len(set(listed)), "a move listed twice"
    hand = s["hands"][seat]
    expected = [{k: {}} for k in ("draw", "take_pile", "take_back") if accepted(state, seat, k, {})]
    expected += [{"discard": {"card": x}} for x in hand if accepted(state, seat, "discard", {"card": x})]
    for index in range(len(s["melds"])):
        for x in hand:
            for low_end in (True, False):
                body = {"meld": index, "card": x, "low_end": low_end}
                if accepted(state, seat, "add_to_meld", body):
                    expected.append({"add_to_meld": body})
    others = [m for m in legal if "lay_meld" not in m]
    assert sorted(json.dumps(m, sort_keys=True) for m in others) == sorted(
        json.dumps(m, sort_keys=True) for m in expected
    )
    lays = {frozenset(m["lay_meld"]["cards"]) for m in legal if "lay_meld" in m}
    for m in legal:
        if "lay_meld" in m:
            assert accepted(state, seat, "lay_meld", m["lay_meld"])
    meldable = {
        frozenset(trio)
        for trio in itertools.combinations(hand, 3)
        if any(accepted(state, seat, "lay_meld", {"cards": list(p)}) for p in itertools.permutations(trio))
    }
    assert lays == meldable


def test_the_listed_moves_are_exactly_the_accepted_ones():
    checked = 0
    for seed in (21, 22):
        r = random.Random(seed)
        state = State.new(3, seed, OPTS)
        while not state.is_over():
            seat = state.active_seats()[0]
            if state.to_dict()["phase"] != "bidding" and r.random() < 0.25:
                check_listing(state, seat)
                checked += 1
            state.apply(seat, choose(r, state.legal_moves(seat)))
    assert checked > 40
