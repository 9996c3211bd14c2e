"""Building More positions by hand, and the invariants every position must keep."""

from __future__ import annotations

from typing import Any

from services.more.cards import DECK_SIZE, parse_meld, points
from services.more.rules import State

SUITS = "CDHS"
RANKS = {"A": 1, "J": 11, "Q": 12, "K": 13}


def c(code: str, copy: int = 0) -> int:
    """Card id from a code: "5S", "10H", "AC", "KD", "2S"; "JK" for a joker. ``copy``: 0 or 1."""
    if code == "JK":
        return 104 + copy
    r, s = code[:-1], code[-1]
    rank = RANKS.get(r) or int(r)
    return copy * 52 + SUITS.index(s) * 13 + rank - 1


def cs(codes: str, copy: int = 0) -> list[int]:
    return [c(code, copy) for code in codes.split()]


def meld(side: str, cards: list[int]) -> dict[str, Any]:
    m, rule = parse_meld(cards)
    assert m is not None, rule
    m["side"] = side
    return m


def position(
    hands: list[list[int]],
    *,
    solo: int = 0,
    turn: int = 1,
    phase: str = "play",
    scores: tuple[int, int, int] = (0, 0, 0),
    melds: list[dict[str, Any]] | None = None,
    discard: list[int] | None = None,
    more_state: dict[str, str] | None = None,
    turn_info: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    dealer: int | None = None,
    down: tuple[bool, bool, bool] | None = None,
    exempt: dict[str, bool] | None = None,
) -> State:
    """A position with exactly these hands/melds/discard; every other card goes to the draw
    pile and the More piles (11 each, while waiting), so all 106 cards stay accounted for.

    By default a side with melds on the table went down with 7.5 (``exempt``) and nobody is
    ``down`` himself; pass both to build a 7.5-rule position."""
    state = State.new(3, 7, options or {"bid_for_solo": False, "max_rounds": 0})
    d = state.to_dict()
    melds = melds or []
    discard = discard or []
    more_state = more_state or {"pair": "waiting", "solo": "waiting"}
    used = [x for h in hands for x in h] + [x for m in melds for x in m["cards"]] + discard
    assert len(set(used)) == len(used), "a card used twice"
    rest = [x for x in range(DECK_SIZE) if x not in set(used)]
    more = {}
    for side in ("pair", "solo"):
        more[side] = rest[:11] if more_state[side] == "waiting" else []
        rest = rest[len(more[side]) :]
    d.update(
        hands=[list(h) for h in hands],
        solo=solo,
        turn=turn,
        phase=phase,
        scores=list(scores),
        melds=melds,
        discard=discard,
        more=more,
        more_state=more_state,
        draw=rest,
    )
    if dealer is not None:
        d["dealer"] = dealer
    d["solo_history"] = [solo]
    side = "solo" if turn == solo else "pair"
    d["down"] = list(down or (False, False, False))
    d["exempt"] = exempt or {x: any(m["side"] == x for m in melds) for x in ("pair", "solo")}
    opening = scores[turn] > 1500 and not d["down"][turn] and not d["exempt"][side]
    d["t"] = {
        "top": -1,
        "locked": [],
        "pile_taken": False,
        "halves": 0,
        "opening": opening,
        "melded": False,
        "undo": {"hand": list(hands[turn]), "melds": [dict(m) for m in melds], "discard": None}
        if phase == "play"
        else None,
        "closed": False,
        "no_take": False,
    }
    d["t"].update(turn_info or {})
    return State.from_dict(d)


def all_cards(state: State | dict) -> list[int]:
    """Every card of the round, wherever it is."""
    s = state.to_dict() if isinstance(state, State) else state
    cards = [x for h in s["hands"] for x in h]
    cards += [x for m in s["melds"] for x in m["cards"]]
    cards += s["draw"] + s["discard"] + s["more"]["pair"] + s["more"]["solo"]
    return cards


def check_invariants(state: State | dict) -> None:
    """All 106 cards accounted for (once dealt), piles consistent, melds valid, scores a sum of rounds."""
    s = state.to_dict() if isinstance(state, State) else state
    if s["phase"] == "bidding":
        assert all_cards(s) == []
    else:
        assert sorted(all_cards(s)) == list(range(DECK_SIZE)), "cards lost or duplicated"
        for side in ("pair", "solo"):
            assert (len(s["more"][side]) == 11) == (s["more_state"][side] == "waiting")
            if s["more_state"][side] != "waiting":
                assert s["more"][side] == []
    for m in s["melds"]:
        again, _ = parse_meld(m["cards"])
        assert again is not None, "an invalid meld on the table"
        assert (again["kind"], again["suit"], again["low"]) == (m["kind"], m["suit"], m["low"])
    # cumulative scores: the round totals plus bid payments (which sum to zero)
    assert sum(s["scores"]) == sum(sum(seat["total"] for seat in r["seats"]) for r in s["rounds"])


def hand_points(cards: list[int]) -> int:
    return sum(points(x) for x in cards)
