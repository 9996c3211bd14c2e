"""The More bot adapter: its samples agree with what the seat knows and hold every card once;
a discard pile another seat took stays in its hand; this turn's melding can be taken back as it
would be at the table; the candidates are legal; when a Pair partner takes a pile."""

from __future__ import annotations

import math
import random

import pytest

from services.bots.search import playout
from services.more import bot
from services.more.bot import (
    ENDGAME,
    ENDGAME_DISCARDS,
    EVALUATE_SCALE,
    LATE,
    LATE_PILE,
    LEAD_BOUND,
    PILE_MARGIN,
    PLAYOUT_STEPS,
    SMALL_PILE,
    candidate_moves,
    determinize,
    playout_move,
    playout_steps,
)
from services.more.cards import DECK_SIZE, identity, meld_points, points
from services.more.rules import State
from tests.bots.positions import positions


def every_card(state: State) -> list[int]:
    cards = [c for h in state.hands for c in h] + state.draw + state.discard
    cards += [c for pile in state.more.values() for c in pile] + [c for m in state.melds for c in m["cards"]]
    return sorted(cards)


def test_a_sample_shows_the_seat_its_view_and_holds_every_card_once():
    checked = 0
    for seed in range(4):
        for position in positions("more", 3, seed, every=3, limit=300):
            view, history = position.information()
            true = position.state
            for past in (history, None):
                state = determinize(view, position.seat, random.Random(seed), past)
                assert state.view(position.seat) == view
                assert state.legal_moves(position.seat) == true.legal_moves(position.seat)
                if state.phase != "bidding":
                    assert every_card(state) == list(range(DECK_SIZE))
                checked += 1
    assert checked > 100


def test_with_the_events_take_back_restores_the_turns_start_exactly():
    restored = 0
    for seed in range(8):
        for position in positions("more", 3, seed, every=2, limit=300):
            view, history = position.information()
            true = position.state
            if {"take_back": {}} not in true.legal_moves(position.seat):
                continue
            state = determinize(view, position.seat, random.Random(1), history)
            true.apply(position.seat, {"take_back": {}})
            state.apply(position.seat, {"take_back": {}})
            assert state.view(position.seat) == true.view(position.seat)
            restored += 1
    assert restored > 5


def test_a_taken_discard_pile_stays_in_the_hand_that_took_it():
    told = 0
    for seed in range(8):
        for position in positions("more", 3, seed, every=3, limit=300):
            view, history = position.information()
            true = position.state
            starts = [i for i, e in enumerate(history) if "round_started" in e]
            this_round = history[starts[-1] :] if starts else history
            taken = [e["pile_taken"] for e in this_round if "pile_taken" in e]
            if not taken or taken[-1]["seat"] == position.seat:
                continue
            who = taken[-1]["seat"]
            still = [c["id"] for c in taken[-1]["cards"] if c["id"] in true.hands[who]]
            state = determinize(view, position.seat, random.Random(2), history)
            assert all(card in state.hands[who] for card in still)
            told += len(still)
    assert told > 10


@pytest.mark.parametrize("options", [{"max_rounds": 1}, {"bid_for_solo": True, "max_rounds": 2}])
def test_candidates_are_legal_and_playouts_end(options):
    for seed in range(3):
        state = State.new(3, seed, options)
        rng = random.Random(seed)
        for _ in range(3000):
            if state.is_over():
                break
            seat = state.active_seats()[0]
            legal = state.legal_moves(seat)
            assert all(move in legal for move in candidate_moves(state, seat, rng))
            move = playout_move(state, seat, rng)
            assert move in legal
            state.apply(seat, move)
        assert state.is_over()


def test_the_candidates_depend_only_on_what_the_seat_knows():
    compared = 0
    for seed in range(3):
        for position in positions("more", 3, seed, every=2, limit=300):
            view, history = position.information()
            first, second = (determinize(view, position.seat, random.Random(s), history) for s in (1, 2))
            assert candidate_moves(first, position.seat, random.Random(3)) == candidate_moves(
                second, position.seat, random.Random(4)
            )
            compared += 1
    assert compared > 100


def _playout_positions(seeds: range):
    """Every position of seeded all-playout-policy matches (one round), before its move."""
    for seed in seeds:
        state = State.new(3, seed, {"max_rounds": 1})
        rng = random.Random(seed)
        while not state.is_over():
            seat = state.active_seats()[0]
            yield state, seat
            state.apply(seat, playout_move(state, seat, rng))


def test_a_pair_partner_does_not_meld_down_to_his_last_card_while_his_more_pile_waits():
    held = 0
    for state, seat in _playout_positions(range(40)):
        if state.phase != "play" or seat == state.solo or state.more_state["pair"] != "waiting":
            continue
        moves = state.legal_moves(seat)
        if not any("discard" in m for m in moves):
            continue  # a taken pile's top card must be melded first
        left = len(state.hands[seat])
        melded = {"lay_meld": 3, "add_to_meld": 1}  # cards a step takes out of the hand
        emptying = [m for m in moves if next(iter(m)) in melded and left - melded[next(iter(m))] < 2]
        if not emptying:
            continue
        for move in (
            playout_move(state, seat, random.Random(0)),
            *candidate_moves(state, seat, random.Random(0)),
        ):
            assert move not in emptying
        held += 1
    assert held > 20


def test_late_in_the_round_a_pair_partner_with_two_cards_keeps_the_cheaper():
    kept = 0
    for state, seat in _playout_positions(range(40)):
        hand = state.hands[seat]
        if state.phase != "play" or seat == state.solo or len(hand) != 2 or _to_draw(state) >= LATE:
            continue
        move = playout_move(state, seat, random.Random(0))
        if "discard" not in move or points(hand[0]) == points(hand[1]):
            continue
        assert points(move["discard"]["card"]) == max(points(c) for c in hand)
        kept += 1
    assert kept > 10


def _to_draw(state: State) -> int:
    waiting = [pile for side, pile in state.more.items() if state.more_state[side] == "waiting"]
    return len(state.draw) + sum(map(len, waiting))


def test_the_search_weighs_the_pile_for_the_solo_for_a_partner_once_the_solo_takes_piles_and_late():
    weighed = {"solo": 0, "partner": 0, "partner late": 0}
    for state, seat in _playout_positions(range(10)):
        moves = state.legal_moves(seat)
        late = _to_draw(state) <= ENDGAME
        for solo_took in (False, True):
            state.solo_takes_piles = solo_took  # type: ignore[attr-defined]
            candidates = candidate_moves(state, seat, random.Random(1))
            policy = playout_move(state, seat, None)
            if (
                state.phase == "draw"
                and {"take_pile": {}} in moves
                and (seat == state.solo or solo_took or late)
            ):
                assert candidates[0] == policy
                assert sorted(map(str, candidates)) == sorted(map(str, [{"draw": {}}, {"take_pile": {}}]))
                weighed["solo" if seat == state.solo else "partner late" if late else "partner"] += 1
            elif state.phase == "draw" or (
                state.phase == "play"
                and not state.t.opening
                and any("discard" in m for m in moves)
                and not late
            ):
                assert candidates == [policy]
    assert all(count > 5 for count in weighed.values()), weighed


def test_in_the_endgame_the_search_weighs_the_policys_first_few_discards_one_of_each_card():
    weighed = many = 0
    for state, seat in _playout_positions(range(10)):
        moves = state.legal_moves(seat)
        if state.phase != "play" or state.t.opening or not any("discard" in m for m in moves):
            continue
        candidates = candidate_moves(state, seat, random.Random(1))
        policy = playout_move(state, seat, None)
        if _to_draw(state) > ENDGAME:
            assert candidates == [policy]
            continue
        assert candidates[0] == policy
        discarded = [identity(m["discard"]["card"]) for m in candidates if "discard" in m]
        held = {identity(m["discard"]["card"]) for m in moves if "discard" in m}
        assert len(discarded) == len(set(discarded)) == min(len(held), ENDGAME_DISCARDS)
        assert all(m in moves for m in candidates)
        weighed += len(held) > 1
        many += len(held) > ENDGAME_DISCARDS
    assert weighed > 20 and many > 3, (weighed, many)


def test_a_shallow_search_leaves_the_endgames_discards_and_a_partners_draws_to_the_policy():
    """``medium`` (``deep`` false): in the endgame a discard is the policy's alone, and a Pair
    partner weighs the pile only once the Solo takes piles, as earlier in the round."""
    seen = {"discard": 0, "partner draw": 0}
    for state, seat in _playout_positions(range(10)):
        moves = state.legal_moves(seat)
        if _to_draw(state) > ENDGAME or state.phase == "bidding":
            continue
        policy = playout_move(state, seat, None)
        shallow = candidate_moves(state, seat, random.Random(1), deep=False)
        if state.phase == "play" and not state.t.opening and any("discard" in m for m in moves):
            assert shallow == [policy]
            seen["discard"] += len(candidate_moves(state, seat, random.Random(1))) > 1
        elif state.phase == "draw" and seat != state.solo and {"take_pile": {}} in moves:
            state.solo_takes_piles = False  # type: ignore[attr-defined]
            assert candidate_moves(state, seat, random.Random(1), deep=False) == [policy]
            assert len(candidate_moves(state, seat, random.Random(1))) == 2
            seen["partner draw"] += 1
    assert all(count > 5 for count in seen.values()), seen


def test_a_playout_in_the_endgame_runs_to_the_rounds_end_and_scores_the_totals_there():
    """Many rounds: the playout stops where its round ends, the next one just dealt, and scores
    the match's totals then (not what the new hands hold); earlier, after PLAYOUT_STEPS moves."""
    ended = 0
    for seed in range(6):
        state = State.new(3, seed, {"max_rounds": 0})
        rng = random.Random(seed)
        while _to_draw(state) > ENDGAME or state.phase == "bidding":
            seat = state.active_seats()[0]
            state.apply(seat, playout_move(state, seat, rng))
        start, seat = state.round, state.active_seats()[0]
        assert playout_steps(state) is None
        reward = playout(bot, state, seat, random.Random(seed))
        if state.is_over():
            continue
        assert state.round == start + 1 and not state.melds and len(state.discard) == 1
        lead = state.totals[seat] - max(t for p, t in enumerate(state.totals) if p != seat)
        lead = max(-LEAD_BOUND, min(LEAD_BOUND, lead))
        assert reward == pytest.approx(1 / (1 + math.exp(-lead / EVALUATE_SCALE)))
        ended += 1
    assert ended >= 3
    early = State.new(3, 1, {"max_rounds": 0})
    assert playout_steps(early) == PLAYOUT_STEPS


def _melded(state: State, side: str) -> int:
    return sum(meld_points(meld) for meld in state.melds if meld["side"] == side)


def test_a_pair_partner_takes_a_large_pile_only_against_a_solo_who_takes_piles_and_is_not_far_behind():
    seen = {"small": 0, "solo took none": 0, "solo close": 0, "pair far ahead": 0, "late": 0}
    for state, seat in _playout_positions(range(30)):
        if state.phase != "draw" or seat == state.solo or {"take_pile": {}} not in state.legal_moves(seat):
            continue
        late = _to_draw(state) < LATE_PILE
        small = len(state.discard) <= SMALL_PILE
        for solo_took in (False, True):
            state.solo_takes_piles = solo_took  # type: ignore[attr-defined]
            move = next(iter(playout_move(state, seat, random.Random(0))))
            if late:
                assert move == ("take_pile" if len(state.discard) == 1 else "draw")
                seen["late"] += len(state.discard) > 1
            elif small:
                assert move == "take_pile"
                seen["small"] += 1
            elif not solo_took:
                assert move == "draw"
                seen["solo took none"] += 1
            elif 1.5 * _melded(state, "solo") + PILE_MARGIN >= _melded(state, "pair"):
                assert move == "take_pile"
                seen["solo close"] += 1
            else:
                assert move == "draw"
                seen["pair far ahead"] += 1
    assert all(count > 3 for count in seen.values()), seen


def test_a_sample_knows_whether_the_solo_has_taken_a_pile_in_the_round():
    told = {True: 0, False: 0}
    for seed in range(8):
        for position in positions("more", 3, seed, every=3, limit=400):
            view, history = position.information()
            starts = [i for i, e in enumerate(history) if "round_started" in e]
            this_round = history[starts[-1] :] if starts else history
            solo = position.state.solo
            took = any(e.get("pile_taken", {}).get("seat", -1) == solo for e in this_round)
            sample = determinize(view, position.seat, random.Random(seed), history)
            assert sample.solo_takes_piles is took  # type: ignore[attr-defined]
            assert determinize(view, position.seat, random.Random(seed)).solo_takes_piles is False  # type: ignore[attr-defined]
            told[took] += 1
    assert told[True] > 10 and told[False] > 10
