"""Mori: seeded random playouts through the engine with invariants checked after every move.

Everything the engine is checked against here is recomputed independently from the state
dict and the rules text (card table, deck per player count, legality, X majority).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest

from services.engine import MalformedMove, MoveError, NotYourTurn, RuleViolation
from services.mori.rules import State

SEEDS = range(200)
PLAYER_COUNTS = (3, 4, 5)
X_FACE = 4

# docs/rules/mori.md, typed again here
TABLE_VP = [2, 0, 1, 0, 1, 2, 1, 2, 1, 2, 3]
TABLE_NP = [0, 0, 0, 1, 0, 0, 1, 0, 2, 1, 2]
RANKS = {3: range(1, 8), 4: range(1, 10), 5: range(0, 11)}


def expected_cards(players: int) -> set[int]:
    """Cards in play: the deck for the player count plus 2 X cards each (+1 X in the 5p deck)."""
    season = {suit * 11 + rank for suit in range(4) for rank in RANKS[players]}
    x_cards = 2 * players + (1 if players == 5 else 0)
    return season | set(range(44, 44 + x_cards))


def first_suit(d: dict) -> int | None:
    for _seat, kind, item in d["trick_plays"]:
        suit = (4 if item >= 44 else item // 11) if kind == "card" else d["faces"][item]
        if suit != 4:
            return suit
    return None


def oracle_trick_winner(leader: int, plays: list, faces: list[int]) -> int:
    """The winner of a complete trick, from the rules text: highest trump card, first trump die,
    highest lead card, first lead die, else (all X) the leader."""
    suits = [((4 if i >= 44 else i // 11) if k == "card" else faces[i]) for _s, k, i in plays]
    lead = next((suit for suit in suits if suit != 4), None)
    if lead is None:
        return leader
    for suit in ((lead + 1) % 4, lead):
        cards = [(i % 11, s) for (s, k, i), x in zip(plays, suits, strict=True) if k == "card" and x == suit]
        if cards:
            return max(cards)[1]
        dice = [s for (s, k, _i), x in zip(plays, suits, strict=True) if k == "die" and x == suit]
        if dice:
            return dice[0]
    raise AssertionError("a suited play sets the lead suit")


def oracle_legal(d: dict, seat: int, move: dict) -> bool:
    """Legality of a well-formed move, read from the state dict and the rules text."""
    ((kind, body),) = move.items()
    if d["phase"] == "over" or seat != d["turn"]:
        return False
    if kind == "claim_die":
        return d["phase"] == "claim" and body["die"] in d["mat"]
    if d["phase"] != "play":
        return False
    if kind == "play_die":
        return body["die"] in d["aids"][seat]
    card, hand = body["card"], d["hands"][seat]
    if card not in hand:
        return False
    lead = first_suit(d)
    if card >= 44 or lead is None or card // 11 == lead:
        return True
    return not any(x < 44 and x // 11 == lead for x in hand)


def all_candidate_moves() -> list[dict]:
    return (
        [{"play_card": {"card": i}} for i in range(55)]
        + [{"play_die": {"die": i}} for i in range(10)]
        + [{"claim_die": {"die": i}} for i in range(10)]
    )


CANDIDATES = all_candidate_moves()


def x_bonus_recount(xs: list[int]) -> list[int]:
    positive = [x for x in xs if x > 0]
    if not positive:
        return [0] * len(xs)
    top = max(positive)
    below = [x for x in positive if x < top]
    second = max(below) if below else -1
    return [-x if x == top else (x if x == second else 0) for x in xs]


def recount_round(d: dict, claimer: int, claimed: int) -> list[int]:
    """Round scores when ``claimer`` takes the last die ``claimed`` (from the pre-move dict)."""
    n = d["players"]
    piles = [d["piles"][s] + d["hands"][s] for s in range(n)]
    dice = [d["pile_dice"][s] + d["aids"][s] + ([claimed] if s == claimer else []) for s in range(n)]
    base = [sum(TABLE_VP[x % 11] - TABLE_NP[x % 11] for x in pile if x < 44) for pile in piles]
    xs = [
        sum(1 for x in piles[s] if x >= 44) + sum(1 for die in dice[s] if d["faces"][die] == X_FACE)
        for s in range(n)
    ]
    return [b + x for b, x in zip(base, x_bonus_recount(xs), strict=True)]


def check_invariants(d: dict) -> None:
    n = d["players"]
    # every card accounted for: in play exactly once, the rest of the 44 + 11 in the box
    trick_cards = [item for _s, kind, item in d["trick_plays"] if kind == "card"]
    trick_dice = [item for _s, kind, item in d["trick_plays"] if kind == "die"]
    cards = (
        [x for h in d["hands"] for x in h] + [x for p in d["piles"] for x in p] + d["unused"] + trick_cards
    )
    assert len(cards) == len(set(cards))
    assert set(cards) == expected_cards(n)
    box = set(range(55)) - set(cards)
    assert len(cards) + len(box) == 44 + 11
    assert len(d["unused"]) == (1 if n == 3 else 0)
    # every die accounted for: mat, aids, score piles, the trick
    dice = d["mat"] + [x for a in d["aids"] for x in a] + [x for p in d["pile_dice"] for x in p] + trick_dice
    assert sorted(dice) == list(range(10))
    assert all(f in (0, 1, 2, 3, 4) for f in d["faces"])
    # points: totals are the sum of the round scores
    assert d["totals"] == [sum(r) for r in d["round_scores"]]
    assert all(len(r) == len(d["round_scores"][0]) for r in d["round_scores"])
    if d["phase"] == "over":
        assert len(d["round_scores"][0]) == n and d["mat"] == [] and not any(d["hands"])
        return
    assert len(d["round_scores"][0]) == d["round"] - 1
    # one die leaves the mat per finished trick; every seat plays once per trick
    claimed = d["tricks_done"] - (1 if d["phase"] == "claim" else 0)
    assert len(d["mat"]) == 10 - claimed
    played = [sum(1 for s, _k, _i in d["trick_plays"] if s == seat) for seat in range(n)]
    for seat in range(n):
        assert len(d["hands"][seat]) + len(d["aids"][seat]) >= 1 or d["phase"] == "claim"
        assert played[seat] <= 1
    if d["phase"] == "play":
        assert d["turn"] == (d["trick_leader"] + len(d["trick_plays"])) % n
    else:
        assert d["trick_plays"] == [] and d["turn"] == d["trick_leader"]
    assert d["start_player"] == (d["first_player"] + d["round"] - 1) % n


def card_ids(obj) -> Iterator[int]:
    """Every Card id in a view or event dict (a Card is the dict with id/suit/rank)."""
    if isinstance(obj, dict):
        if {"id", "suit", "rank"} <= set(obj):
            yield obj["id"]
        for value in obj.values():
            yield from card_ids(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from card_ids(value)


def check_views(state: State) -> None:
    d = state.to_dict()
    n = d["players"]
    visible_trick = {item for _s, kind, item in d["trick_plays"] if kind == "card"}
    if d["phase"] == "claim" and d["last_trick"]:
        visible_trick |= {item for _s, kind, item in d["last_trick"]["plays"] if kind == "card"}
    for seat in [None, *range(n)]:
        view = state.view(seat)
        text = json.dumps(view)
        assert "seed" not in text and "unused" not in text
        ids = set(card_ids(view))
        own = set(d["hands"][seat]) | set(d["piles"][seat]) if seat is not None else set()
        assert ids <= own | visible_trick
        assert not ids & set(d["unused"])
        for other in range(n):
            if other != seat:
                assert not ids & set(d["hands"][other])
                assert not ids & (set(d["piles"][other]) - visible_trick)
        assert [p["hand_size"] for p in view["players"]] == [len(h) for h in d["hands"]]
        if seat is not None:
            assert sorted(x["id"] for x in view["hand"]) == sorted(d["hands"][seat])
        else:
            assert view["hand"] == []


def check_events(before: dict, events, seat: int, move: dict) -> None:
    played = {item for _s, kind, item in before["trick_plays"] if kind == "card"}
    if "play_card" in move:
        played.add(move["play_card"]["card"])
    for event in events:
        ((kind, body),) = event.body.items()
        if kind == "hand_dealt":
            assert event.to == (body["seat"],)
        else:
            assert event.to is None
            assert set(card_ids(body)) <= played
        assert "seed" not in json.dumps(event.body)


def check_trick(before: dict, after: dict, seat: int, move: dict, events) -> None:
    """A completed trick goes to the rules' winner, who alone claims next; the leader of a new
    trick is the winner who just claimed (or the new round's start player)."""
    won = [e.body["trick_won"] for e in events if "trick_won" in e.body]
    if "claim_die" in move:
        assert not won and before["phase"] == "claim" and seat == before["turn"]
        if after["phase"] == "play" and after["round"] == before["round"]:
            assert after["trick_leader"] == after["turn"] == seat
        elif after["phase"] == "play":
            assert after["trick_leader"] == after["turn"] == after["start_player"]
        return
    ((kind, body),) = move.items()
    plays = [
        *before["trick_plays"],
        [seat, "card" if kind == "play_card" else "die", next(iter(body.values()))],
    ]
    if len(plays) < before["players"]:
        assert not won
        return
    (trick,) = won
    winner = oracle_trick_winner(before["trick_leader"], plays, before["faces"])
    assert trick["winner"] == winner
    assert after["phase"] == "claim" and after["turn"] == winner
    assert [p["seat"] for p in trick["plays"]] == [
        (before["trick_leader"] + i) % before["players"] for i in range(before["players"])
    ]


def check_refusals(state: State, rnd: random.Random, sample: int | None) -> None:
    """Candidate moves from every seat: the oracle's illegal ones are refused and change nothing."""
    d = state.to_dict()
    n = d["players"]
    pairs = [(seat, move) for seat in range(n) for move in CANDIDATES]
    if sample is not None:
        pairs = rnd.sample(pairs, sample)
    for seat, move in pairs:
        if oracle_legal(d, seat, move):
            trial = State.from_dict(d)
            trial.apply(seat, move)
        else:
            with pytest.raises(RuleViolation) as info:
                state.apply(seat, move)
            if seat != d["turn"] or d["phase"] == "over":
                assert isinstance(info.value, NotYourTurn)
            assert state.to_dict() == d


def check_legal_moves(state: State, full: bool) -> None:
    d = state.to_dict()
    n = d["players"]
    for seat in range(n):
        moves = state.legal_moves(seat)
        if seat not in state.active_seats():
            assert moves == []
            continue
        assert moves
        assert all(oracle_legal(d, seat, m) for m in moves)
        # every legal move is listed once, twins included (each X card, each die of a face)
        wanted = [m for m in CANDIDATES if oracle_legal(d, seat, m)]
        assert sorted(map(json.dumps, moves)) == sorted(map(json.dumps, wanted))
        if full:
            for move in moves:
                trial = State.from_dict(d)
                trial.apply(seat, json.loads(json.dumps(move)))


def playout(players: int, seed: int, *, deep: bool) -> tuple[State, list[tuple[int, dict]], list]:
    rnd = random.Random(f"mori-{players}-{seed}")
    options = {"first_player": seed % players}
    state = State.new(players, seed, options)
    history: list[tuple[int, dict]] = []
    all_events: list = []
    check_invariants(state.to_dict())
    while not state.is_over():
        (seat,) = state.active_seats()
        before = state.to_dict()
        move = rnd.choice(state.legal_moves(seat))
        if deep:
            check_legal_moves(state, full=True)
            check_refusals(state, rnd, sample=None if seed < 3 else 40)
            check_views(state)
        ending = "claim_die" in move and len(before["mat"]) == 1
        events = state.apply(seat, move)
        check_trick(before, state.to_dict(), seat, move, events)
        history.append((seat, move))
        all_events.append([(e.body, e.to) for e in events])
        after = state.to_dict()
        check_invariants(after)
        check_events(before, events, seat, move)
        restored = State.from_dict(json.loads(json.dumps(after)))
        assert restored == state and restored.to_dict() == after
        if ending:
            expected = recount_round(before, seat, move["claim_die"]["die"])
            (ended,) = [e.body["round_ended"] for e in events if "round_ended" in e.body]
            assert [r["score"] for r in ended["results"]] == expected
            assert [r["total"] for r in ended["results"]] == [
                t + x for t, x in zip(before["totals"], expected, strict=True)
            ]
            assert [s[-1] for s in state.round_scores] == expected
    # the game ran rounds = players, 10 tricks each, players + 1 moves per trick
    assert len(history) == players * 10 * (players + 1)
    totals = [sum(s) for s in state.round_scores]
    assert state.scores() == totals
    assert state.winners() == [s for s, t in enumerate(totals) if t == max(totals)]
    assert state.active_seats() == [] and all(state.legal_moves(s) == [] for s in range(players))
    return state, history, all_events


@pytest.mark.parametrize("players", PLAYER_COUNTS)
def test_random_playouts_keep_every_invariant(players):
    for seed in SEEDS:
        if seed % len(PLAYER_COUNTS) == PLAYER_COUNTS.index(players):
            playout(players, seed, deep=seed < 9)


@pytest.mark.parametrize("players", PLAYER_COUNTS)
def test_same_seed_and_moves_give_the_same_match(players):
    for seed in range(5):
        state, history, events = playout(players, seed, deep=False)
        again = State.new(players, seed, {"first_player": seed % players})
        replay_events = []
        for seat, move in history:
            replay_events.append([(e.body, e.to) for e in again.apply(seat, move)])
        assert again.to_dict() == state.to_dict()
        assert replay_events == events


def test_different_seeds_give_different_deals():
    deals = {json.dumps(State.new(4, seed, {}).hands) for seed in range(20)}
    assert len(deals) == 20


def test_malformed_moves_change_nothing_mid_game():
    state = State.new(4, 3, {})
    rnd = random.Random(1)
    for _ in range(37):
        (seat,) = state.active_seats()
        state.apply(seat, rnd.choice(state.legal_moves(seat)))
    before = state.to_dict()
    (seat,) = state.active_seats()
    for bad in ({"play_card": {"card": 99}}, {"claim_die": {"die": -2}}, {"nope": {}}, {"play_die": []}):
        with pytest.raises(MalformedMove):
            state.apply(seat, bad)
        assert state.to_dict() == before
    with pytest.raises(MoveError):
        state.apply((seat + 1) % 4, state.legal_moves(seat)[0])
    assert state.to_dict() == before
