"""More: the listed melding steps of a hand, every copy of identical cards included.

Pure helpers of ``services.more.rules``, built for speed (the legal-move list is computed on
every request and on every step of a simulation): cards are sorted once into a table of the
ids natural at each run position, and the steps are read off the table. Every step listed here
is a valid meld or a fitting addition; the rules check what depends on the rest of the turn.
"""

from __future__ import annotations

from bisect import insort
from typing import NamedTuple

from services.engine import JsonDict
from services.more.cards import DECK_SIZE, Meld, wild_index

# per card id: ``suit * 16 + run position`` it is natural at (aces: 1), -1 for a joker; a pankal?
_KEY = tuple(-1 if c >= 104 else (c % 52) // 13 * 16 + c % 13 + 1 for c in range(DECK_SIZE))
_PANKAL = tuple(c >= 104 or c % 13 == 1 for c in range(DECK_SIZE))
# per card id: its bits in a Table's mask (an ace: the low and the high one)
_BIT = tuple(
    0 if c >= 104 else ((1 << 1 | 1 << 14) if c % 13 == 0 else 1 << (c % 13 + 1)) << ((c % 52) // 13 * 16)
    for c in range(DECK_SIZE)
)
# bit a of each suit's 16: the three positions a, a + 1, a + 2 (a = 1..12)
_WINDOWS = 0x1FFE * (1 | 1 << 16 | 1 << 32 | 1 << 48)


def _near(card: int) -> int:
    """The Table bits of the positions of ``card``'s suit two places from it at most, its own left out."""
    if card >= 104:
        return 0
    suit, rank = (card % 52) // 13, card % 13 + 1
    own = (1, 14) if rank == 1 else (rank,)
    near = {q for pos in own for q in range(pos - 2, pos + 3) if 1 <= q <= 14} - set(own)
    return sum(1 << (suit * 16 + q) for q in near)


_NEAR = tuple(_near(c) for c in range(DECK_SIZE))

_NONE: tuple[int, ...] = ()
_IDENT = tuple(52 if c >= 104 else c % 52 for c in range(DECK_SIZE))  # take.py's identity of a card


class Table:
    """The cards of a hand by the run position they are natural at: ``at[suit * 16 + pos]``
    (None or empty if there is none; each list in id order), with bit ``suit * 16 + pos`` of
    ``mask`` set for each non-empty one; ``aces`` and ``wilds`` (the pankals) in id order.

    ``counts`` holds the cards per identity (``card % 52``, 52 for a joker: take.py's).

    A table follows its hand from step to step: ``add`` and ``remove`` work in the card or
    three a step moves (a hand of 40 cards costs as much to sort again as 20 single changes)."""

    __slots__ = ("aces", "at", "counts", "mask", "size", "wilds")

    def __init__(self, cards: list[int]) -> None:
        at: list[list[int] | None] = [None] * 64
        mask = 0
        aces: list[int] = []
        wilds: list[int] = []
        for card in sorted(cards):
            key = _KEY[card]
            if key < 0:
                wilds.append(card)
                continue
            if _PANKAL[card]:
                wilds.append(card)
            cell = at[key]
            if cell is None:
                at[key] = [card]
            else:
                cell.append(card)
            if key & 15 == 1:  # an ace: also the high one
                cell = at[key + 13]
                if cell is None:
                    at[key + 13] = [card]
                else:
                    cell.append(card)
                aces.append(card)
            mask |= _BIT[card]
        self.at, self.mask, self.aces, self.wilds = at, mask, aces, wilds
        self.size = len(cards)
        counts = self.counts = [0] * 53
        for ident in map(_IDENT.__getitem__, cards):
            counts[ident] += 1

    def add(self, card: int) -> None:
        key = _KEY[card]
        self.size += 1
        self.counts[_IDENT[card]] += 1
        if _PANKAL[card]:
            insort(self.wilds, card)
            if key < 0:  # a joker
                return
        at = self.at
        cell = at[key]
        if cell is None:
            at[key] = [card]
        else:
            insort(cell, card)
        if key & 15 == 1:  # an ace: also the high one
            cell = at[key + 13]
            if cell is None:
                at[key + 13] = [card]
            else:
                insort(cell, card)
            insort(self.aces, card)
        self.mask |= _BIT[card]

    def remove(self, card: int) -> None:
        key = _KEY[card]
        self.size -= 1
        self.counts[_IDENT[card]] -= 1
        if _PANKAL[card]:
            self.wilds.remove(card)
            if key < 0:  # a joker
                return
        at = self.at
        cell = at[key]
        cell.remove(card)  # type: ignore[union-attr]
        if key & 15 == 1:
            at[key + 13].remove(card)  # type: ignore[union-attr]
            self.aces.remove(card)
        if not cell:
            self.mask &= ~_BIT[card]

    def present(self, card: int) -> list[int]:
        """Per suit, bit q: a natural card at run position q (aces at 1 and 14) among the
        table's cards and ``card``."""
        mask = self.mask | _BIT[card]
        return [mask & 0xFFFF, mask >> 16 & 0xFFFF, mask >> 32 & 0xFFFF, mask >> 48 & 0xFFFF]

    def natural(self, suit: int, pos: int) -> list[int] | tuple[int, ...]:
        return self.at[suit * 16 + pos] or _NONE


def lone_card(card: int, table: Table, melds: SideMelds, ace_ok: bool) -> bool:
    """No meld of the turn could hold natural ``card`` with the cards of ``table`` (the hand): no
    natural of its suit two places from it at most (a run of three holds two naturals, with a
    pankal at most), no meld of its suit among ``melds`` (the side's), and for an ace (with
    ace-sets allowed) no ace-set among them and too few other aces (two, or one and a pankal)."""
    if _PANKAL[card] or table.mask & _NEAR[card]:
        return False
    ace = _KEY[card] & 15 == 1
    if ace and ace_ok:
        aces = len(table.aces)
        if aces >= 2 or (aces == 1 and table.wilds):
            return False
    if melds.suits >> (_KEY[card] >> 4) & 1:
        return False
    return not (ace and ace_ok and melds.ace_sets)


def three_card_steps(table: Table, ace_sets: bool) -> list[JsonDict]:
    """Every valid 3-card meld of the hand, in run order, once per choice of card ids, as
    ``lay_meld`` moves."""
    out: list[JsonDict] = []
    wilds = table.wilds
    at = table.at
    mask = table.mask
    # the windows of three positions holding three naturals (two, with a pankal in hand), of
    # every suit at once: a suit's 16 bits start and end with an empty position, so nothing
    # shifts from one suit into another's windows
    if wilds:
        windows = (mask & mask >> 1 | mask & mask >> 2 | mask >> 1 & mask >> 2) & _WINDOWS
    else:
        windows = mask & mask >> 1 & mask >> 2 & _WINDOWS
    while windows:
        bit = windows & -windows
        windows ^= bit
        low = bit.bit_length() - 1
        a, b, c = at[low] or _NONE, at[low + 1] or _NONE, at[low + 2] or _NONE
        # plain loops: most of these lists are empty or short, and a comprehension costs a call
        if a and b and c:
            for x in a:
                for y in b:
                    for z in c:
                        out.append({"lay_meld": {"cards": [x, y, z]}})
        for w in wilds:  # the pankal at one of the three positions
            if b and c and w not in a:
                for y in b:
                    if y != w:
                        for z in c:
                            if z != w:
                                out.append({"lay_meld": {"cards": [w, y, z]}})
            if a and c and w not in b:
                for x in a:
                    if x != w:
                        for z in c:
                            if z != w:
                                out.append({"lay_meld": {"cards": [x, w, z]}})
            if a and b and w not in c:
                for x in a:
                    if x != w:
                        for y in b:
                            if y != w:
                                out.append({"lay_meld": {"cards": [x, y, w]}})
    if ace_sets:
        aces = table.aces
        n = len(aces)
        for i in range(n):
            for j in range(i + 1, n):
                for k in range(j + 1, n):
                    out.append({"lay_meld": {"cards": [aces[i], aces[j], aces[k]]}})
                for w in wilds:
                    out.append({"lay_meld": {"cards": [aces[i], aces[j], w]}})
    return out


class MeldFacts(NamedTuple):
    """What the additions need of a meld, worked out once per meld (melds never change)."""

    side: str
    ace_set: bool
    wild: int  # wild_index
    low: int  # the Table key of the position below it (-1: none), for a run
    high: int  # the Table key of the position above it (-1: none), for a run
    ends: int  # the Table bits of both
    suit: int  # -1 for an ace-set
    sides: tuple[tuple[int, bool], ...]  # (Table key, low_end) of each end there is, low first


def meld_facts(meld: Meld) -> MeldFacts:
    if meld["kind"] == "ace_set":
        return MeldFacts(meld["side"], True, wild_index(meld), -1, -1, 0, -1, ())
    suit = meld["suit"]
    base = suit * 16
    low, high = meld["low"] - 1, meld["low"] + len(meld["cards"])
    low_key = base + low if low >= 1 else -1
    high_key = base + high if high <= 14 else -1
    ends = (1 << low_key if low_key >= 0 else 0) | (1 << high_key if high_key >= 0 else 0)
    sides: tuple[tuple[int, bool], ...]
    if low_key >= 0:
        sides = ((low_key, True), (high_key, False)) if high_key >= 0 else ((low_key, True),)
    else:
        sides = ((high_key, False),) if high_key >= 0 else ()
    return MeldFacts(meld["side"], False, wild_index(meld), low_key, high_key, ends, suit, sides)


# a meld of the table as the additions see it: (its index, the meld, its facts)
SideMeld = tuple[int, Meld, MeldFacts]


class SideMelds:
    """One side's melds on the table, in table order, as the steps see them: ``entries`` and the
    Table bits of every end of its runs, ``ends`` (with no pankal in the hand and no card of the
    hand at any of them, only an ace-set can take an addition); ``suits``, bit s: a run of suit s
    among them."""

    __slots__ = ("_clean", "_melds", "ace_sets", "ends", "entries", "suits")

    def __init__(self, entries: list[SideMeld]) -> None:
        self.entries = entries
        self.ends = 0
        self.suits = 0
        self.ace_sets = False
        for _, _, facts in entries:
            self._take_in(facts)
        self._melds: list[Meld] | None = None
        self._clean: list[bool] | None = None

    def _take_in(self, facts: MeldFacts) -> None:
        self.ends |= facts.ends
        if facts.ace_set:
            self.ace_sets = True
        else:
            self.suits |= 1 << facts.suit

    def place(self, entry: SideMeld) -> None:
        """Take in a new meld (its index past the others') or a grown one in place of its own."""
        entries = self.entries
        index, _, facts = entry
        self._melds = self._clean = None
        if not entries or entries[-1][0] < index:
            entries.append(entry)
            self._take_in(facts)
            return
        entries[next(i for i, (at, _, _) in enumerate(entries) if at == index)] = entry
        self.ends = 0
        for _, _, other in entries:  # a grown run's ends moved (its kind and suit stay)
            self.ends |= other.ends

    def melds(self) -> list[Meld]:
        """The melds, in table order (one list until they change: callers only read it)."""
        if self._melds is None:
            self._melds = [meld for _, meld, _ in self.entries]
        return self._melds

    def clean(self) -> list[bool]:
        """Per meld of ``melds()``: no pankal in it (one list until they change: read only)."""
        if self._clean is None:
            self._clean = [facts.wild < 0 for _, _, facts in self.entries]
        return self._clean


def addition_steps(melds: SideMelds, table: Table, ace_ok: bool) -> list[JsonDict]:
    """An ``add_to_meld`` move for every card of the hand that fits an end of one of ``melds``
    (one side's; ace-sets only if ``ace_ok``)."""
    out: list[JsonDict] = []
    wilds, mask, at = table.wilds, table.mask, table.at
    if not wilds and not mask & melds.ends and not (ace_ok and melds.ace_sets and table.aces):
        return out  # the common case: nothing of the hand fits anywhere
    for index, _, facts in melds.entries:
        free = wilds if facts.wild < 0 else _NONE  # pankals fit only a meld without one
        if facts.ace_set:
            if ace_ok:
                for card in table.aces:
                    out.append({"add_to_meld": {"meld": index, "card": card, "low_end": False}})
                for card in free:
                    out.append({"add_to_meld": {"meld": index, "card": card, "low_end": False}})
            continue
        if not free and not mask & facts.ends:
            continue  # nothing of the hand at either end
        for key, low_end in facts.sides:
            natural = at[key]
            if natural:
                for card in natural:
                    out.append({"add_to_meld": {"meld": index, "card": card, "low_end": low_end}})
                for card in free:
                    if card not in natural:
                        out.append({"add_to_meld": {"meld": index, "card": card, "low_end": low_end}})
            else:
                for card in free:
                    out.append({"add_to_meld": {"meld": index, "card": card, "low_end": low_end}})
    return out
