"""More: the take-pile search agrees with playing the turn out step by step.

Ground truth: force the take, then try every listed melding step (depth first, positions
memoised) until a listed discard appears. Random small positions cover chains of additions,
pankals, ace-sets, biribas, the last-card rules and the 7.5 minimum.
"""

from __future__ import annotations

import json
import random

from services.more.rules import State
from tests.more.helpers import meld, position


def continuation(state: State, seat: int, seen: set[str] | None = None) -> list[dict] | None:
    """Listed melding steps that end with a listed discard (without take_back), or None."""
    seen = set() if seen is None else seen
    s = state.to_dict()
    key = json.dumps([sorted(s["hands"][seat]), s["melds"], s["more_state"]])
    if key in seen:
        return None
    seen.add(key)
    moves = [m for m in state.legal_moves(seat) if "take_back" not in m]
    discards = [m for m in moves if "discard" in m]
    if discards:
        return discards[:1]
    for move in moves:
        trial = State.from_dict(s)
        trial.apply(seat, move)
        rest = continuation(trial, seat, seen)
        if rest is not None:
            return [move, *rest]
    return None


def truth(state: State, seat: int) -> bool:
    if not state.to_dict()["discard"]:
        return False
    trial = State.from_dict(state.to_dict())
    trial._do_take_pile(seat, {})
    return continuation(trial, seat) is not None


def random_position(r: random.Random) -> tuple[State, int]:
    suits = r.sample(range(4), 2)
    pool = [copy * 52 + s * 13 + rank for copy in (0, 1) for s in suits for rank in range(13)]
    pool += [1, 14, 27, 40, 104, 105] * 1  # some pankals of other suits, the jokers
    pool += [0, 13, 26, 39]  # aces for ace-sets
    r.shuffle(pool)
    pool = list(dict.fromkeys(pool))
    melds = []
    for _ in range(r.randrange(3)):
        s = r.choice(suits)
        low = r.randrange(1, 12)
        size = r.choice((3, 3, 4, 5, 6, 6, 7))
        if low + size - 1 > 14:
            continue
        cards = [
            copy * 52 + s * 13 + (0 if p == 14 else p - 1) for p in range(low, low + size) for copy in (0,)
        ]
        if any(x not in pool for x in cards):
            cards = [52 + x for x in cards]
        if any(x not in pool for x in cards):
            continue
        for x in cards:
            pool.remove(x)
        melds.append(meld(r.choice(("solo", "pair")), cards))
    hand = [pool.pop() for _ in range(r.randrange(1, 8))]
    pile = [pool.pop() for _ in range(r.choice((1, 1, 1, 2, 3)))]
    others = [pool.pop() for _ in range(2)], [pool.pop() for _ in range(2)]
    seat = 1
    more = {"pair": r.choice(("waiting", "waiting", "taken", "drawn")), "solo": "waiting"}
    bound = r.random() < 0.3
    state = position(
        [others[0], hand, others[1]],
        solo=0,
        turn=seat,
        phase="draw",
        scores=(0, 1600 if bound or r.random() < 0.5 else 0, 0),
        melds=melds,
        discard=pile,
        more_state=more,
        exempt={"pair": not bound, "solo": True},
    )
    return state, seat


def test_search_matches_step_by_step_play_on_random_positions():
    r = random.Random(13)
    counts = {True: 0, False: 0}
    for _ in range(600):
        state, seat = random_position(r)
        expected = truth(state, seat)
        offered = {"take_pile": {}} in state.legal_moves(seat)
        assert offered == expected, state.to_dict()
        counts[expected] += 1
    assert counts[True] > 50 and counts[False] > 50, counts


def test_search_matches_step_by_step_play_on_7_5_openings():
    """Players the 7.5 minimum binds: 11-card hands of high and low cards, some after a partner
    went down with less than 7.5 (his melds are on the table)."""
    r = random.Random(5)
    counts = {True: 0, False: 0}
    for _ in range(100):
        suits = r.sample(range(4), 2)
        pool = [cp * 52 + s * 13 + k for cp in (0, 1) for s in suits for k in range(4, 13)] + [
            0,
            13,
            26,
            39,
            1,
            104,
        ]
        pool = list(dict.fromkeys(pool))
        r.shuffle(pool)
        melds = []
        if r.random() < 0.4:
            s = suits[0]
            cards = [s * 13 + k for k in (1, 2, 3)]  # the partner's 2-3-4: 1.0 + 0.5 + 0.5
            if all(x in pool for x in cards):
                for x in cards:
                    pool.remove(x)
                melds.append(meld("pair", cards))
        hand = [pool.pop() for _ in range(11)]
        pile = [pool.pop() for _ in range(r.choice((1, 1, 2)))]
        others = [pool.pop() for _ in range(2)], [pool.pop() for _ in range(2)]
        state = position(
            [others[0], hand, others[1]],
            solo=0,
            turn=1,
            phase="draw",
            scores=(0, 1600, 1000),
            melds=melds,
            discard=pile,
            down=(False, False, bool(melds)),
            exempt={"pair": False, "solo": False},
        )
        assert state.to_dict()["t"]["opening"]
        expected = truth(state, 1)
        assert ({"take_pile": {}} in state.legal_moves(1)) == expected, state.to_dict()
        counts[expected] += 1
    assert counts[True] > 10 and counts[False] > 10, counts
