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


def is_joker(card: int) -> bool:
    return card >= 104


def rank(card: int) -> int:
    """1 (ace) .. 13 (king); 0 for a joker."""
    return 0 if is_joker(card) else card % 13 + 1


def suit(card: int) -> int:
    """0..3; -1 for a joker."""
    return -1 if is_joker(card) else (card % 52) // 13


def identity(card: int) -> tuple[int, int]:
    """(rank, suit): the two copies of a card (and the two jokers) share it."""
    return (rank(card), suit(card))


def is_pankal(card: int) -> bool:
    """The wild cards: the eight 2s and both jokers."""
    return is_joker(card) or rank(card) == 2


def points(card: int) -> int:
    """Scoring value: Joker 20, Ace 15, 2 10, 8-K 10, 3-7 5."""
    r = rank(card)
    if r == 0:
        return 20
    if r == 1:
        return 15
    if r == 2 or r >= 8:
        return 10
    return 5


def half_points(card: int) -> int:
    """Going-down value (7.5 rule) in halves: Joker 2.0, Ace 1.5, 2 and 8-K 1.0, 3-7 0.5."""
    return points(card) // 5


def name(card: int) -> str:
    if is_joker(card):
        return "Joker"
    r = rank(card)
    return f"{RANK_NAMES.get(r, str(r))}{SUIT_SYMBOLS[suit(card)]}"


def card_dict(card: int) -> dict[str, Any]:
    """The proto Card message."""
    return {
        "id": card,
        "rank": rank(card),
        "suit": "SUIT_UNSPECIFIED" if is_joker(card) else SUIT_NAMES[suit(card)],
        "joker": is_joker(card),
    }


def natural_at(card: int, run_suit: int, pos: int) -> bool:
    """True if ``card`` is the natural card of position ``pos`` of a run in ``run_suit``.

    A 2 is natural only at position 2 of its own suit's run (the natural-2 rule).
    """
    if is_joker(card) or suit(card) != run_suit:
        return False
    r = rank(card)
    return r == pos or (r == 1 and pos == 14)


def wild_index(meld: Meld) -> int:
    """Index of the pankal standing in for another card, -1 if none."""
    for i, card in enumerate(meld["cards"]):
        if meld["kind"] == "ace_set":
            if rank(card) != 1:
                return i
        elif not natural_at(card, meld["suit"], meld["low"] + i):
            return i
    return -1


def is_dirty(meld: Meld) -> bool:
    return wild_index(meld) >= 0


def is_biriba(meld: Meld) -> bool:
    return len(meld["cards"]) >= BIRIBA_SIZE


def meld_points(meld: Meld) -> int:
    return sum(points(c) for c in meld["cards"])


def biriba_bonus(meld: Meld) -> int:
    if not is_biriba(meld):
        return 0
    return DIRTY_BONUS if is_dirty(meld) else PURE_BONUS


def _run_fits(cards: list[int], run_suit: int, low: int) -> int | None:
    """Number of pankals if ``cards`` laid from position ``low`` form a run in ``run_suit``, else None."""
    if low < 1 or low + len(cards) - 1 > 14:
        return None
    wild = 0
    for i, card in enumerate(cards):
        if natural_at(card, run_suit, low + i):
            continue
        if not is_pankal(card):
            return None
        wild += 1
    return wild


def parse_meld(cards: list[int]) -> tuple[Meld | None, str]:
    """Read ``cards`` (in run order) as a new meld.

    Returns ``(meld, "")`` or ``(None, rule)`` with rule ``meld_too_short``,
    ``one_pankal`` (a run or ace-set but for its pankals) or ``runs_only``.
    A run is preferred over an ace-set; the caller checks the ace-set permission.
    """
    if len(cards) < 3:
        return None, "meld_too_short"
    too_wild = False
    for run_suit in range(4):
        for low in range(1, 16 - len(cards)):
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
    wild_now = wild_index(meld) >= 0
    if meld["kind"] == "ace_set":
        if rank(card) == 1:
            return {**meld, "cards": [*meld["cards"], card]}
        if is_pankal(card) and not wild_now:
            return {**meld, "cards": [*meld["cards"], card]}
        return None
    pos = meld["low"] - 1 if low_end else meld["low"] + len(meld["cards"])
    if not 1 <= pos <= 14:
        return None
    if not natural_at(card, meld["suit"], pos) and (wild_now or not is_pankal(card)):
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
    by_ident: dict[tuple[int, int], list[int]] = {}
    ordered = sorted(cards, key=lambda c: (c != prefer, c))
    for card in ordered:
        by_ident.setdefault(identity(card), []).append(card)
    wild_idents = [i for i in by_ident if i[0] in (0, 2)]
    out: list[list[int]] = []
    seen: set[tuple[tuple[int, int], ...]] = set()

    def take(ident: tuple[int, int], used: list[int]) -> int | None:
        for card in by_ident.get(ident, ()):
            if card not in used:
                return card
        return None

    for run_suit in range(4):
        for low in range(1, 13):
            naturals = []
            for pos in range(low, low + 3):
                r = 1 if pos == 14 else pos
                naturals.append((r, run_suit))
            for wild_slot in (-1, 0, 1, 2):
                used: list[int] = []
                ok = True
                for slot in range(3):
                    if slot == wild_slot:
                        used.append(-1)
                        continue
                    card = take(naturals[slot], used)
                    if card is None:
                        ok = False
                        break
                    used.append(card)
                if not ok:
                    continue
                if wild_slot < 0:
                    _keep(out, seen, used, must_include)
                    continue
                for ident in wild_idents:
                    if ident == naturals[wild_slot]:
                        continue  # a 2 in its own natural place is no pankal
                    card = take(ident, used)
                    if card is None:
                        continue
                    meld = [*used]
                    meld[wild_slot] = card
                    _keep(out, seen, meld, must_include)
    if ace_sets:
        aces = [i for i in by_ident if i[0] == 1]
        pool = [(i, n) for i in aces for n in range(len(by_ident[i]))]
        for a in range(len(pool)):
            for b in range(a + 1, len(pool)):
                for c in range(b + 1, len(pool)):
                    meld = [by_ident[pool[k][0]][pool[k][1]] for k in (a, b, c)]
                    _keep(out, seen, meld, must_include)
                for ident in wild_idents:
                    meld = [by_ident[pool[a][0]][pool[a][1]], by_ident[pool[b][0]][pool[b][1]]]
                    card = take(ident, meld)
                    if card is not None:
                        _keep(out, seen, [*meld, card], must_include)
    return out


def _keep(out: list[list[int]], seen: set, meld: list[int], must_include: int | None) -> None:
    if must_include is not None and must_include not in meld:
        return
    key = tuple(identity(c) for c in meld)
    if key not in seen:
        seen.add(key)
        out.append(meld)
