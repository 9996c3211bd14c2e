"""More: cards and melds (pure helpers of ``services.more.rules``).

A card is an int id 0..105: ids 0..103 are two 52-card packs (``id % 52``: suit
``// 13`` in CLUBS, DIAMONDS, HEARTS, SPADES order, rank ``% 13 + 1``, 1 = ace),
104 and 105 the jokers. A run position is 1..14: 1 the low ace, 2..13 the ranks,
14 the high ace.

A meld is a dict ``{"side", "kind", "suit", "low", "cards"}``: ``kind`` "run" or
"ace_set"; for a run ``suit`` is 0..3 and ``cards[i]`` sits at position ``low + i``;
for an ace-set ``suit`` is -1 and ``low`` 0.
"""

from __future__ import annotations

from typing import Any

DECK_SIZE = 106
JOKERS = (104, 105)
SUIT_NAMES = ("SUIT_CLUBS", "SUIT_DIAMONDS", "SUIT_HEARTS", "SUIT_SPADES")
RANK_NAMES = {1: "A", 11: "J", 12: "Q", 13: "K"}
SUIT_SYMBOLS = "♣♦♥♠"
BIRIBA_SIZE = 7
PURE_BONUS = 200
DIRTY_BONUS = 100

Meld = dict[str, Any]


_RANK = tuple(0 if c >= 104 else c % 13 + 1 for c in range(DECK_SIZE))
_SUIT = tuple(-1 if c >= 104 else (c % 52) // 13 for c in range(DECK_SIZE))


def is_joker(card: int) -> bool:
    return card >= 104


def rank(card: int) -> int:
    """1 (ace) .. 13 (king); 0 for a joker."""
    return _RANK[card]


def suit(card: int) -> int:
    """0..3; -1 for a joker."""
    return _SUIT[card]


def identity(card: int) -> tuple[int, int]:
    """(rank, suit): the two copies of a card (and the two jokers) share it."""
    return (rank(card), suit(card))


def is_pankal(card: int) -> bool:
    """The wild cards: the eight 2s and both jokers."""
    return _RANK[card] in (0, 2)


def _points(card: int) -> int:
    r = rank(card)
    if r == 0:
        return 20
    if r == 1:
        return 15
    if r == 2 or r >= 8:
        return 10
    return 5


_POINTS = tuple(_points(card) for card in range(DECK_SIZE))


def points(card: int) -> int:
    """Scoring value: Joker 20, Ace 15, 2 10, 8-K 10, 3-7 5."""
    return _POINTS[card]


def half_points(card: int) -> int:
    """Going-down value (7.5 rule) in halves: Joker 2.0, Ace 1.5, 2 and 8-K 1.0, 3-7 0.5."""
    return points(card) // 5


HALF_POINTS = tuple(half_points(card) for card in range(DECK_SIZE))  # per card id


def name(card: int) -> str:
    if is_joker(card):
        return "Joker"
    r = rank(card)
    return f"{RANK_NAMES.get(r, str(r))}{SUIT_SYMBOLS[suit(card)]}"


def _card_dict(card: int) -> dict[str, Any]:
    return {
        "id": card,
        "rank": rank(card),
        "suit": "SUIT_UNSPECIFIED" if is_joker(card) else SUIT_NAMES[suit(card)],
        "joker": is_joker(card),
    }


# per card id, its Card message: copied before it is handed out (as card_dict does)
CARD_DICTS = tuple(_card_dict(card) for card in range(DECK_SIZE))


def card_dict(card: int) -> dict[str, Any]:
    """The proto Card message (a new dict each time: callers may change it)."""
    return CARD_DICTS[card].copy()


def natural_at(card: int, run_suit: int, pos: int) -> bool:
    """True if ``card`` is the natural card of position ``pos`` of a run in ``run_suit``.

    A 2 is natural only at position 2 of its own suit's run (the natural-2 rule).
    """
    if _SUIT[card] != run_suit:
        return False
    r = _RANK[card]
    return r == pos or (r == 1 and pos == 14)


def wild_index(meld: Meld) -> int:
    """Index of the pankal standing in for another card, -1 if none."""
    cards = meld["cards"]
    if meld["kind"] == "ace_set":
        for i, card in enumerate(cards):
            if _RANK[card] != 1:
                return i
        return -1
    run_suit, pos = meld["suit"], meld["low"]
    for i, card in enumerate(cards, pos):
        r = _RANK[card]
        if _SUIT[card] != run_suit or (r != i and not (r == 1 and i == 14)):
            return i - pos
    return -1


def is_dirty(meld: Meld) -> bool:
    return wild_index(meld) >= 0


def is_biriba(meld: Meld) -> bool:
    return len(meld["cards"]) >= BIRIBA_SIZE


def meld_points(meld: Meld) -> int:
    return sum(map(_POINTS.__getitem__, meld["cards"]))


def biriba_bonus(meld: Meld) -> int:
    if not is_biriba(meld):
        return 0
    return DIRTY_BONUS if is_dirty(meld) else PURE_BONUS


def _run_fits(cards: list[int], run_suit: int, low: int) -> int | None:
    """Number of pankals if ``cards`` laid from position ``low`` form a run in ``run_suit``, else None."""
    if low < 1 or low + len(cards) - 1 > 14:
        return None
    wild = 0
    pos = low
    for card in cards:  # natural_at and is_pankal, inlined: every meld laid passes here
        r = _RANK[card]
        if not (_SUIT[card] == run_suit and (r == pos or (r == 1 and pos == 14))):
            if r != 0 and r != 2:
                return None
            wild += 1
        pos += 1
    return wild


def _run_layouts(cards: list[int]) -> list[tuple[int, int]]:
    """The (suit, low) a run of ``cards`` could have: fixed by its first card that is no pankal."""
    top = 15 - len(cards)  # the highest low a run of this many cards can have
    for i, card in enumerate(cards):
        r = _RANK[card]
        if r != 0 and r != 2:
            s = _SUIT[card]
            if r == 1:
                return [(s, low) for low in (1 - i, 14 - i) if 1 <= low <= top]
            return [(s, r - i)] if 1 <= r - i <= top else []
    return [(s, low) for s in range(4) for low in range(1, top + 1)]


def parse_meld(cards: list[int]) -> tuple[Meld | None, str]:
    """Read ``cards`` (in run order) as a new meld.

    Returns ``(meld, "")`` or ``(None, rule)`` with rule ``meld_too_short``,
    ``one_pankal`` (a run or ace-set but for its pankals) or ``runs_only``.
    A run is preferred over an ace-set; the caller checks the ace-set permission.
    """
    if len(cards) < 3:
        return None, "meld_too_short"
    too_wild = False
    for run_suit, low in _run_layouts(cards):
        wild = _run_fits(cards, run_suit, low)
        if wild is None:
            continue
        if wild <= 1:
            return {"side": "", "kind": "run", "suit": run_suit, "low": low, "cards": list(cards)}, ""
        too_wild = True
    if all(rank(c) == 1 or is_pankal(c) for c in cards):
        if sum(1 for c in cards if rank(c) != 1) <= 1:
            return {"side": "", "kind": "ace_set", "suit": -1, "low": 0, "cards": list(cards)}, ""
        too_wild = True
    return None, "one_pankal" if too_wild else "runs_only"


def extend(meld: Meld, card: int, low_end: bool) -> Meld | None:
    """The meld with ``card`` added at one end, or None if it would not stay valid."""
    if meld["kind"] == "ace_set":
        if rank(card) == 1 or (is_pankal(card) and wild_index(meld) < 0):
            return {**meld, "cards": [*meld["cards"], card]}
        return None
    pos = meld["low"] - 1 if low_end else meld["low"] + len(meld["cards"])
    if not 1 <= pos <= 14:
        return None
    if not natural_at(card, meld["suit"], pos) and (not is_pankal(card) or wild_index(meld) >= 0):
        return None
    if low_end:
        return {**meld, "low": pos, "cards": [card, *meld["cards"]]}
    return {**meld, "cards": [*meld["cards"], card]}


def three_card_melds(
    cards: list[int], ace_sets: bool, must_include: int | None = None, prefer: int | None = None
) -> list[list[int]]:
    """Every distinct valid 3-card meld (run order) from ``cards``.

    Copies of the same card count once per copy available; each result lists
    concrete ids. With ``must_include``, only melds using that very card (which
    is preferred over an identical copy); ``prefer`` is preferred over its copy too.
    """
    prefer = must_include if must_include is not None else prefer
    ordered = sorted(cards, key=lambda c: (c != prefer, c))
    nat: list[list[list[int]]] = [[[] for _ in range(15)] for _ in range(4)]
    wilds: dict[tuple[int, int], list[int]] = {}
    aces: dict[tuple[int, int], list[int]] = {}
    for card in ordered:
        if is_pankal(card):
            wilds.setdefault(identity(card), []).append(card)
        if is_joker(card):
            continue
        r, s = rank(card), suit(card)
        nat[s][r].append(card)
        if r == 1:
            nat[s][14].append(card)
            aces.setdefault((r, s), []).append(card)
    out: list[list[int]] = []
    seen: set[tuple[tuple[int, int], ...]] = set()
    for s in range(4):
        column = nat[s]
        for low in range(1, 13):
            cols = (column[low], column[low + 1], column[low + 2])
            missing = [i for i in range(3) if not cols[i]]
            if len(missing) > 1:
                continue
            if not missing:
                _keep(out, seen, [cols[0][0], cols[1][0], cols[2][0]], must_include)
            for slot in missing or range(3):
                base = [cols[i][0] if i != slot else -1 for i in range(3)]
                for copies in wilds.values():
                    wild = next((c for c in copies if c not in base), None)
                    if wild is None or natural_at(wild, s, low + slot):
                        continue  # a 2 in its own natural place is no pankal
                    base[slot] = wild
                    _keep(out, seen, list(base), must_include)
                    base[slot] = -1
    if ace_sets:
        pool = [card for copies in aces.values() for card in copies]
        for a in range(len(pool)):
            for b in range(a + 1, len(pool)):
                for c in range(b + 1, len(pool)):
                    _keep(out, seen, [pool[a], pool[b], pool[c]], must_include)
                for copies in wilds.values():
                    _keep(out, seen, [pool[a], pool[b], copies[0]], must_include)
    return out


def _keep(out: list[list[int]], seen: set, meld: list[int], must_include: int | None) -> None:
    if must_include is not None and must_include not in meld:
        return
    key = tuple(identity(c) for c in meld)
    if key not in seen:
        seen.add(key)
        out.append(meld)


def meld_view(meld: Meld, index: int, wild: int) -> dict[str, Any]:
    """The proto Meld message of table meld number ``index`` (``wild``: its wild_index)."""
    cards = meld["cards"]
    return {
        "index": index,
        "side": f"ROLE_{meld['side'].upper()}",
        "kind": "MELD_KIND_RUN" if meld["kind"] == "run" else "MELD_KIND_ACE_SET",
        "suit": SUIT_NAMES[meld["suit"]] if meld["suit"] >= 0 else "SUIT_UNSPECIFIED",
        "low": meld["low"],
        "cards": [CARD_DICTS[c].copy() for c in cards],
        "wild_index": wild,
        "dirty": wild >= 0,
        "biriba": len(cards) >= BIRIBA_SIZE,
        "points": sum(map(_POINTS.__getitem__, cards)),
    }
