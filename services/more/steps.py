"""More: the listed melding steps of a hand, every copy of identical cards included.

Pure helpers of ``services.more.rules``, built for speed (the legal-move list is computed on
every request and on every step of a simulation): cards are sorted once into a table of the
ids natural at each run position, and the steps are read off the table. Every step listed here
is a valid meld or a fitting addition; the rules check what depends on the rest of the turn.
"""

from __future__ import annotations

from services.more.cards import DECK_SIZE, Meld

# per card id: the run position it is natural at (1..13, aces 1), its suit, whether a pankal
_POS = tuple(0 if c >= 104 else c % 13 + 1 for c in range(DECK_SIZE))
_SUIT = tuple(-1 if c >= 104 else (c % 52) // 13 for c in range(DECK_SIZE))
_PANKAL = tuple(c >= 104 or c % 13 == 1 for c in range(DECK_SIZE))
_TWO = tuple(bin(m).count("1") >= 2 for m in range(8))
_THREE = tuple(m == 7 for m in range(8))


_NONE: tuple[int, ...] = ()


class Table:
    """The cards of a hand by the run position they are natural at: ``at[suit * 16 + pos]``."""

    __slots__ = ("aces", "at", "masks", "wilds")

    def __init__(self, cards: list[int]) -> None:
        at: dict[int, list[int]] = {}
        masks = [0, 0, 0, 0]  # bit p: the suit has a card natural at position p
        aces: list[int] = []
        wilds: list[int] = []
        for card in sorted(cards):
            if _PANKAL[card]:
                wilds.append(card)
            suit = _SUIT[card]
            if suit < 0:
                continue
            pos = _POS[card]
            at.setdefault(suit * 16 + pos, []).append(card)
            masks[suit] |= 1 << pos
            if pos == 1:
                at.setdefault(suit * 16 + 14, []).append(card)
                masks[suit] |= 1 << 14
                aces.append(card)
        self.at, self.masks, self.aces, self.wilds = at, masks, aces, wilds

    def natural(self, suit: int, pos: int) -> list[int] | tuple[int, ...]:
        return self.at.get(suit * 16 + pos, _NONE)


def three_card_steps(table: Table, ace_sets: bool) -> list[list[int]]:
    """Every valid 3-card meld of the hand, in run order, once per choice of card ids."""
    out: list[list[int]] = []
    wilds = table.wilds
    enough = _TWO if wilds else _THREE  # windows of three positions with enough cards
    for suit in range(4):
        mask = table.masks[suit]
        if not mask:
            continue
        at = table.at
        base = suit * 16
        for low in range(1, 13):
            if not enough[mask >> low & 7]:
                continue
            a, b, c = at.get(base + low, _NONE), at.get(base + low + 1, _NONE), at.get(base + low + 2, _NONE)
            if a and b and c:
                out += [[x, y, z] for x in a for y in b for z in c]
            for w in wilds:  # the pankal at one of the three positions
                if b and c and w not in a:
                    out += [[w, y, z] for y in b for z in c if w not in (y, z)]
                if a and c and w not in b:
                    out += [[x, w, z] for x in a for z in c if w not in (x, z)]
                if a and b and w not in c:
                    out += [[x, y, w] for x in a for y in b if w not in (x, y)]
    if ace_sets:
        aces = table.aces
        n = len(aces)
        for i in range(n):
            for j in range(i + 1, n):
                out += [[aces[i], aces[j], aces[k]] for k in range(j + 1, n)]
                out += [[aces[i], aces[j], w] for w in wilds]
    return out


def additions(meld: Meld, table: Table, wild_free: bool) -> list[tuple[int, bool]]:
    """(card, low_end) for every card of the hand that fits an end of ``meld``."""
    wilds = table.wilds if wild_free else []
    if meld["kind"] == "ace_set":
        return [(card, False) for card in table.aces] + [(card, False) for card in wilds]
    out: list[tuple[int, bool]] = []
    suit = meld["suit"]
    low, high = meld["low"] - 1, meld["low"] + len(meld["cards"])
    if not wilds and not table.masks[suit] >> low & 1 and not table.masks[suit] >> high & 1:
        return out  # nothing of the hand at either end (bit 0 and bit 15 are never set)
    for low_end, pos in ((True, low), (False, high)):
        if 1 <= pos <= 14:
            natural = table.natural(suit, pos)
            out += [(card, low_end) for card in natural]
            out += [(card, low_end) for card in wilds if card not in natural]
    return out
