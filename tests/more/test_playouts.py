"""More: seeded playouts to the end, checking every invariant after every move."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest

from services.engine import Event, MalformedMove, MoveError, NotYourTurn, RuleViolation
from services.more.rules import State
from tests.more.helpers import check_invariants

SEEDS = range(150)
PRIVATE = {"hand_dealt", "drew_card", "more_pile_cards"}


def options(seed: int) -> dict[str, Any]:
    # every fifteenth match is played to 3100 as the rulebook says, the others for one round
    return {"bid_for_solo": seed % 2 == 1, "max_rounds": 0 if seed % 15 == 0 else 1}


def choose(r: random.Random, moves: list[dict]) -> dict:
    """A playing policy that melds eagerly, so biribas, More piles and going out all happen."""
    kinds: dict[str, list[dict]] = {}
    for move in moves:
        kinds.setdefault(next(iter(move)), []).append(move)
    if "take_pile" in kinds and r.random() < 0.6:
        return kinds["take_pile"][0]
    melds = kinds.get("add_to_meld", []) + kinds.get("lay_meld", [])
    if melds and r.random() < 0.9:
        return r.choice(melds)
    if "take_back" in kinds and (r.random() < 0.05 or len(kinds) == 1):
        return kinds["take_back"][0]
    others = [m for m in moves if "take_back" not in m]
    return r.choice(others or moves)


# ---- independent recount of a round ----

CARD_POINTS = {0: 20, 1: 15, 2: 10}


def card_points(card: int) -> int:
    if card >= 104:
        return 20
    rank = card % 13 + 1
    return CARD_POINTS.get(rank, 10 if rank >= 8 else 5)


def dirty(meld: dict) -> bool:
    for i, card in enumerate(meld["cards"]):
        if card >= 104:
            return True
        rank, suit = card % 13 + 1, (card % 52) // 13
        if meld["kind"] == "ace_set":
            if rank != 1:
                return True
            continue
        pos = meld["low"] + i
        natural = suit == meld["suit"] and (rank == pos or (rank == 1 and pos == 14))
        if not natural:
            assert rank == 2
            return True
    return False


def recount(table: dict, went_out: int) -> list[int]:
    totals = []
    for seat in range(3):
        side = "solo" if seat == table["solo"] else "pair"
        melds = [m for m in table["melds"] if m["side"] == side]
        net = sum(card_points(x) for m in melds for x in m["cards"])
        net += sum((100 if dirty(m) else 200) for m in melds if len(m["cards"]) >= 7)
        net += 100 if went_out == seat else 0
        net -= sum(card_points(x) for x in table["hands"][seat])
        net -= 100 if table["more_state"][side] != "taken" else 0
        if side == "solo":
            if net > 0:
                net = int(net * 1.5)  # exact for integers below 2**52: rounds .5 down
            net += 150 if went_out == seat else 0
        totals.append(net)
    return totals


def end_table(before: dict, seat: int, move: dict, events: list[Event]) -> dict:
    """The table as the round ended: ``before`` with the last discard (and a pickup) applied."""
    table = json.loads(json.dumps(before))
    table["hands"][seat].remove(move["discard"]["card"])
    for e in events:
        if "more_pile_taken" in e.body:
            side = "solo" if seat == table["solo"] else "pair"
            table["hands"][seat] = table["more"][side]
            table["more_state"][side] = "taken"
    return table


# ---- leak checks ----


def card_ids(obj: Any) -> set[int]:
    """Every card id in Card messages anywhere in ``obj``."""
    out: set[int] = set()
    if isinstance(obj, dict):
        if set(obj) == {"id", "rank", "suit", "joker"}:
            out.add(obj["id"])
        for value in obj.values():
            out |= card_ids(value)
    elif isinstance(obj, list):
        for value in obj:
            out |= card_ids(value)
    return out


def public_cards(s: dict) -> set[int]:
    return {x for m in s["melds"] for x in m["cards"]} | set(s["discard"])


def check_views(state: State) -> None:
    s = state.to_dict()
    for seat in (0, 1, 2, None):
        view = state.view(seat)
        own = set(s["hands"][seat]) if seat is not None else set()
        assert {x["id"] for x in view["hand"]} == own
        assert card_ids(view) <= own | public_cards(s), "a view shows a hidden card"
        assert "seed" not in json.dumps(view)
        assert view["hand_sizes"] == [len(h) for h in s["hands"]]
        if seat is not None and s["phase"] == "bidding":
            assert view["bids"] == [] and view["my_bid"] == s["bids"][seat]


def check_events(before: dict, after: dict, seat: int, move: dict, events: list[Event]) -> None:
    public = public_cards(before) | public_cards(after)
    if "discard" in move:  # a discard is shown face up even when it ends the round
        public.add(move["discard"]["card"])
    for e in events:
        kind = next(iter(e.body))
        if kind in PRIVATE:
            assert e.to == (seat,) or (kind == "hand_dealt" and e.to is not None and len(e.to) == 1)
        else:
            assert e.to is None
            assert card_ids(e.body) <= public, f"public {kind} shows a hidden card"


# ---- refused moves ----


def check_refusals(state: State, r: random.Random, legal: dict[int, list[dict]]) -> None:
    s = state.to_dict()
    probes: list[tuple[int, dict, type]] = []
    for seat in range(3):
        if not legal[seat]:
            probes.append((seat, {"draw": {}}, NotYourTurn))
    active = state.active_seats()
    if active:
        seat = active[0]
        elsewhere = [x for x in range(106) if x not in s["hands"][seat]]
        probes.append((seat, {"discard": {"card": r.choice(elsewhere)}}, RuleViolation))
        probes.append((seat, {"discard": {"card": 106 + r.randrange(5)}}, MalformedMove))
        probes.append((seat, {"lay_meld": {"cards": [r.choice(elsewhere)] * 3}}, MalformedMove))
        probes.append(
            (seat, {"add_to_meld": {"meld": len(s["melds"]), "card": 0, "low_end": False}}, MoveError)
        )
        if s["phase"] == "play":
            probes.append((seat, {"draw": {}}, RuleViolation))
        if s["phase"] == "draw":
            probes.append((seat, {"discard": {"card": s["hands"][seat][0]}}, RuleViolation))
        hand = s["hands"][seat]
        if len(hand) >= 3:  # random melds: refused ones must change nothing
            probes.append((seat, {"lay_meld": {"cards": r.sample(hand, 3)}}, None))
    for seat, move, exc in probes:
        copy = State.from_dict(s)
        try:
            copy.apply(seat, move)
        except MoveError as err:
            assert exc is None or isinstance(err, exc), (move, err)
            assert copy.to_dict() == s, "a refused move changed the state"
        else:
            assert exc is None, f"{move} was accepted"
            check_invariants(copy)


# ---- the playouts ----


def play(seed: int, stats: Counter, thorough: bool) -> tuple[State, list[tuple[int, dict]]]:
    """Play one match to the end; ``thorough``: try every legal move and probe refusals at every step."""
    r = random.Random(seed)
    state = State.new(3, seed, options(seed))
    after = state.to_dict()
    check_invariants(after)
    payments = [0, 0, 0]
    history: list[tuple[int, dict]] = []
    steps = 0
    while not state.is_over():
        steps += 1
        assert steps < 20000, "the match does not end"
        before = after
        legal = {seat: state.legal_moves(seat) for seat in range(3)}
        active = state.active_seats()
        assert active and all(bool(legal[seat]) == (seat in active) for seat in range(3))
        if thorough:
            for move in legal[active[0]]:  # every legal move is accepted
                trial = State.from_dict(before)
                trial.apply(active[0], move)
                check_invariants(trial)
        if thorough or steps % 25 == 0:
            check_refusals(state, r, legal)
        seat = r.choice(active)
        move = choose(r, legal[seat])
        events = state.apply(seat, move)
        assert any(e.to is None for e in events), f"{move} made no public event"
        history.append((seat, move))
        after = state.to_dict()
        stats.update(next(iter(e.body)) for e in events)
        check_invariants(after)
        check_events(before, after, seat, move, events)
        if thorough or steps % 20 == 0:
            check_views(state)
        if thorough or steps % 4 == 0 or state.is_over():
            assert State.from_dict(json.loads(json.dumps(after))) == state
        for e in events:
            if "bids_revealed" in e.body:
                body = e.body["bids_revealed"]
                for p in range(3):
                    payments[p] += -2 * body["payment"] if p == body["solo"] else body["payment"]
            if "round_ended" in e.body:
                result = e.body["round_ended"]["result"]
                stats[result["end"]] += 1
                table = end_table(before, seat, move, events)
                expected = recount(table, result["went_out"])
                assert [x["total"] for x in result["seats"]] == expected
    rounds = after["rounds"]
    assert state.scores() == [sum(r_["seats"][p]["total"] for r_ in rounds) + payments[p] for p in range(3)]
    assert state.winners() and state.legal_moves(0) == state.legal_moves(1) == state.legal_moves(2) == []
    best = max(state.scores())
    assert all(state.scores()[w] == best for w in state.winners())
    limit = options(seed)["max_rounds"]
    assert best >= 3100 or len(rounds) == limit
    if limit == 0:
        assert best >= 3100
    return state, history


def test_playouts_to_the_end():
    stats: Counter = Counter()
    for seed in SEEDS:
        state, history = play(seed, stats, thorough=False)
        if seed % 10 == 0:  # determinism: the same seed and moves give the same match
            again = State.new(3, seed, options(seed))
            for seat, move in history:
                again.apply(seat, move)
            assert again == state
    # the policy reaches every part of the rules
    for what in (
        "more_pile_taken",
        "took_back",
        "pile_taken",
        "draw_pile_refilled",
        "bids_revealed",
        "ROUND_END_WENT_OUT",
        "ROUND_END_EXHAUSTED",
    ):
        assert stats[what] > 0, what


@pytest.mark.parametrize("seed", [1001, 1002, 1003, 1004])
def test_thorough_matches(seed):
    """Every legal move tried and refusals probed at every step."""
    stats: Counter = Counter()
    state, history = play(seed, stats, thorough=True)
    assert history and state.is_over() and stats["round_ended"] == len(state.to_dict()["rounds"])
