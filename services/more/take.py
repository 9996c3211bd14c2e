"""More: may the turn player take the discard pile? An exact, bounded search.

The take is legal exactly when some legal continuation of the turn melds the pile's top card
and can end with a discard (docs/rules/more.md, "Taking the discard pile"). A continuation is
judged by its end: which cards of the hand were melded, into which melds. Any set of valid
final melds is reachable by the listed primitive steps, and the rules only look at the last
step (the one that leaves 0 or 1 cards) and at the discard, so the search enumerates *final
configurations*, not step orders.

Cards are handled by identity (the two copies of a card are the same card for the rules):
``ident = card % 52`` (suit * 13 + rank - 1), 52 for a joker. The usable cards are the hand
before the take plus the top card; the rest of the pile is locked (it stays in the hand).

The search: the top card's identity is placed first (in every new meld or meld extension
that can hold it), then every other usable identity in a fixed order is either kept or put
in a piece (a new run, a new ace-set, or the whole extension of one existing meld of the
side) together with later cards. Dead ends are memoised on (cards left, melds extended,
kept cards capped at 2, going-down value capped at 7.5, biriba flags), and a branch stops as
soon as it can no longer reach 7.5 or as soon as stopping there is a legal end.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache, partial
from itertools import compress
from operator import mul
from typing import NamedTuple

from services.more.cards import Meld, half_points, wild_index

JOKER = 52
IDENTS = 53
PANKALS = (JOKER, 1, 14, 27, 40)  # the joker and the four 2s
HALF = (*(half_points(i) for i in range(52)), half_points(104))
BIRIBA = 7


_IS_PANKAL = tuple(x in PANKALS for x in range(IDENTS))


def ident(card: int) -> int:
    return JOKER if card >= 104 else card % 52


IDENT = tuple(ident(card) for card in range(106))


def _natural(suit: int, pos: int) -> int:
    """The identity that is the natural card at run position ``pos`` (1..14) of ``suit``."""
    return suit * 13 + (0 if pos == 14 else pos - 1)


def _positions(x: int) -> list[tuple[int, int]]:
    """(suit, position) where identity ``x`` is a natural card."""
    if x == JOKER:
        return []
    suit, rank = divmod(x, 13)
    return [(suit, 1), (suit, 14)] if rank == 0 else [(suit, rank + 1)]


class Piece(NamedTuple):
    """One final meld of the turn: the identities it takes from the hand, its final size and
    dirtiness, and the existing meld it extends (-1: a new meld)."""

    used: tuple[int, ...]  # sorted
    size: int
    dirty: bool
    extends: int = -1


# A Piece made by tuple.__new__ itself: a NamedTuple's own __new__ is a Python function, a call
# dearer than the tuple (a search makes dozens of pieces)
_piece = partial(tuple.__new__, Piece)


class Problem:
    """A take to decide: the usable cards by identity and what the turn must achieve."""

    __slots__ = (
        "ace_ok",
        "clean",
        "counts",
        "left",
        "locked",
        "melds",
        "memo",
        "need",
        "nodes",
        "pieces",
        "pile_waiting",
        "present",
        "size",
        "start",
        "start_have",
        "top",
        "value",
    )

    def __init__(
        self,
        counts: list[int],  # usable identities (hand before the take + the top card)
        top: int,  # the top card's identity
        melds: list[Meld],  # the side's melds on the table
        ace_ok: bool,
        need: int,  # going-down half points this turn needs (15 under the 7.5 rule, else 0)
        locked: int,  # cards of the pile that stay in the hand
        pile_waiting: bool,  # the side's More pile is still waiting
        clean: list[bool] | None = None,  # per meld: no pankal in it (worked out if not given)
        present: list[int] | None = None,  # per suit, _have(counts, suit) (worked out if not given)
        size: int | None = None,  # sum(counts) (worked out if not given)
    ) -> None:
        self.counts, self.top, self.melds, self.ace_ok = counts, top, melds, ace_ok
        # of the counts given (the search's first steps read them; the search then changes counts)
        self.size = sum(counts) if size is None else size
        self.present = [_have(counts, suit) for suit in range(4)] if present is None else present
        self.clean = [wild_index(m) < 0 for m in melds] if clean is None else clean
        self.need, self.locked, self.pile_waiting = need, locked, pile_waiting
        self.nodes = 0
        self.memo: dict[tuple, list[tuple]] = {}
        self.start: list[int] = []  # the counts the search began with
        self.start_have: list[int] = []  # per suit, _have(start, suit)
        # during the search, the cards of counts and their going-down value (kept up to date
        # rather than summed over every identity at each node)
        self.left = 0
        self.value = 0
        self.pieces: dict[int, list[tuple[Piece, tuple[tuple[int, int], ...]]]] = {}


class Made(NamedTuple):
    """What the pieces laid so far amount to (every field: more is never worse)."""

    closed: int = 0  # bit i: the side's meld i has had its extension
    pure: bool = False  # a pure biriba among the pieces
    dirty: bool = False  # a dirty biriba among the pieces
    biribas: int = 0  # biribas among the pieces (capped at 2)
    pieces: int = 0  # pieces laid (capped at 2)
    loose: bool = True  # not (a single piece that is a biriba of exactly 7 cards)

    def add(self, piece: Piece) -> Made:
        biriba = piece.size >= BIRIBA
        return _made(
            (
                self.closed | (1 << piece.extends if piece.extends >= 0 else 0),
                self.pure or (biriba and not piece.dirty),
                self.dirty or (biriba and piece.dirty),
                min(self.biribas + biriba, 2),
                min(self.pieces + 1, 2),
                self.pieces > 0 or piece.size != BIRIBA,
            )
        )


_made = partial(tuple.__new__, Made)  # as _piece


def can_take(problem: Problem) -> bool:
    """True when some legal continuation melds the top card and ends with a legal discard."""
    p = problem
    if p.counts[p.top] == 0:
        return False
    quick = _quick(p)
    if quick is not None:
        return quick
    if not p.need:  # no minimum: the first piece holding the top card that leaves two cards will do
        firsts = _pieces(p, p.top, p.counts, p.present, 0)
        if not firsts:
            return False
        cards = p.size + p.locked
        if any(cards - len(piece.used) >= 2 for piece in firsts):
            return True
    reachable, idle = _reachable(p)
    if reachable < p.need or p.top in idle:
        return False
    # a card no piece can hold now never will (cards only leave): it simply stays in the hand
    for x in idle:
        p.locked += p.counts[x]
        p.counts[x] = 0
    p.start = list(p.counts)
    # _have of the start: present less the idle naturals (no two identities share a position)
    p.start_have = start_have = list(p.present)
    for x in idle:
        if x != JOKER:
            start_have[x // 13] &= ~_BITS[x]
    p.left, p.value = sum(p.counts), sum(map(mul, HALF, p.counts))
    return any(_take_piece(p, piece, Made(), 0, 0) for piece in _ordered(p, p.top, 0))


def _quick(p: Problem) -> bool | None:
    """The common cases, decided without the search (None: search). Without a pankal among the
    usable cards, a natural top card is held only by three naturals in a row or by naturals
    reaching a meld end: if neither exists (nor an ace-set), no take. With no minimum and cards to
    spare, a top card that joins a meld end as it stands, or makes three in a row, is a take."""
    counts, top = p.counts, p.top
    cards = p.size + p.locked
    accept = True if not p.need else None
    wild = counts[52] or counts[1] or counts[14] or counts[27] or counts[40]  # PANKALS
    if top in PANKALS:
        if accept and cards >= 3:
            for m, clean in zip(p.melds, p.clean, strict=True):
                if clean and m["kind"] == "run" and len(m["cards"]) < 14:
                    return True  # a pankal joins a run without one, at one of its ends
        if accept and cards >= 5:
            # two other naturals of a suit within three positions: the top card takes the third
            # (as the pankal, or as the natural card if that place is its own)
            for s in range(4):
                have = p.present[s]
                if top != JOKER and top // 13 == s and counts[top] == 1:
                    have &= ~_BITS[top]  # the top card itself is no other natural
                if (have & have >> 1 | have & have >> 2 | have >> 1 & have >> 2) & _WINDOWS:
                    return True
        return None
    suit, rank = divmod(top, 13)
    if rank == 0 and p.ace_ok:
        if any(m["kind"] == "ace_set" for m in p.melds):
            return accept if cards >= 3 else None
        aces = counts[0] + counts[13] + counts[26] + counts[39]
        if aces >= 3 or (aces == 2 and wild):
            return None
    # with a pankal, a new run holding the top card needs a natural card two places from it at
    # most, and reaching a meld needs a meld of its suit
    present = p.present[suit]  # bit q: a natural card at run position q (aces at 1 and 14)
    reach = held = False
    for pos in (1, 14) if rank == 0 else (rank + 1,):
        for meld in p.melds:
            if meld["kind"] == "ace_set" or meld["suit"] != suit:
                continue
            reach = True
            low, high = meld["low"], meld["low"] + len(meld["cards"]) - 1
            if pos == low - 1 or pos == high + 1:
                return accept if cards >= 3 else None
            if pos < low:  # every position between the top card and the meld is held
                between = ((1 << low) - 1) ^ ((2 << pos) - 1)
                held = held or present & between == between
            elif pos > high:
                between = ((1 << pos) - 1) ^ ((2 << high) - 1)
                held = held or present & between == between
        reach = reach or present & _NEAR[pos] != 0
        for a in (pos - 2, pos - 1, pos):
            if a < 1 or a + 2 > 14:
                continue
            others = (7 << a) & ~(1 << pos)
            if present & others == others:
                if cards >= 5:
                    return accept
                held = True
            elif wild and cards >= 5 and accept and present & others:
                naturals = [_natural(suit, q) for q in (a, a + 1, a + 2) if q != pos and present >> q & 1]
                if any(counts[w] > naturals.count(w) for w in PANKALS):
                    return True  # a pankal in the missing place
    return None if held or (wild and reach) else False


# per run position: the positions two places from it at most, itself left out
_NEAR = tuple(sum(1 << q for q in range(pos - 2, pos + 3) if 0 <= q <= 15 and q != pos) for pos in range(16))


# per natural identity: its run positions as bits (an ace: 1 and 14)
_BITS = tuple((1 << 1 | 1 << 14) if x % 13 == 0 else 1 << (x % 13 + 1) for x in range(52))
_WINDOWS = 0x1FFE  # bit a: the window of positions a, a+1, a+2 (a = 1..12)
_POSITIONS = 0x7FFE  # bits 1..14: the run positions


def _reachable(p: Problem) -> tuple[int, list[int]]:
    """(an upper bound of the going-down value any final configuration melds, the identities
    no piece can hold). A natural card is *sure* when a piece without a pankal may hold it
    (three naturals in a row, or a row of naturals reaching a meld end) and *maybe* when only a
    piece with a pankal may (a row with one gap); each pankal holds at most one gap, so the
    maybe-cards melded are at most those of the best ``pankals`` groups of naturals (a group:
    naturals and melds of a suit with no two-position hole, or the aces for a new ace-set)."""
    counts = p.counts
    held = list(compress(_IDENTITIES, counts))
    wilds = counts[52] + counts[1] + counts[14] + counts[27] + counts[40]
    present = p.present
    sure = [0, 0, 0, 0]
    maybe = [0, 0, 0, 0]
    table = [0, 0, 0, 0]  # positions held by the side's runs
    wild_fits = False  # some piece may hold a pankal
    for s in range(4):
        m = present[s]
        if not m:
            continue
        w3 = m & m >> 1 & m >> 2 & _WINDOWS
        sure[s] = w3 | w3 << 1 | w3 << 2
        if wilds:
            w2 = (m & m >> 1 | m & m >> 2 | m >> 1 & m >> 2) & _WINDOWS
            if w2:
                wild_fits = True
                maybe[s] = (w2 | w2 << 1 | w2 << 2) & m
    ace_set_meld = False
    for meld, clean in zip(p.melds, p.clean, strict=True):
        if meld["kind"] == "ace_set":
            if p.ace_ok:
                ace_set_meld = True
                wild_fits = wild_fits or (clean and wilds > 0)
            continue
        s, low = meld["suit"], meld["low"]
        high = low + len(meld["cards"]) - 1
        gaps_ok = 1 if clean and wilds else 0
        wild_fits = wild_fits or (gaps_ok > 0 and high - low < 13)
        table[s] |= ((2 << high) - 1) ^ ((1 << low) - 1)
        m = present[s]
        for step, q in ((-1, low - 1), (1, high + 1)):
            gaps = 0
            while 1 <= q <= 14:
                if m >> q & 1:
                    if gaps:
                        maybe[s] |= 1 << q
                    else:
                        sure[s] |= 1 << q
                else:
                    gaps += 1
                    if gaps > gaps_ok:
                        break
                q += step
    aces = counts[0] + counts[13] + counts[26] + counts[39]
    ace_sure = p.ace_ok and (aces >= 3 or ace_set_meld)
    ace_maybe = p.ace_ok and not ace_sure and aces == 2 and wilds > 0
    wild_fits = wild_fits or (p.ace_ok and aces >= 2 and wilds > 0)
    sure_value = 0
    values: list[int] = []
    idle: list[int] = []
    unsure: list[int] = []
    for x in held:
        if _IS_PANKAL[x]:
            if wild_fits or (x != JOKER and sure[x // 13] & 4):
                sure_value += HALF[x] * counts[x]
                values += [HALF[x]] * counts[x]
            else:
                idle.append(x)
        elif sure[x // 13] & _BITS[x] or (ace_sure and x % 13 == 0):
            sure_value += HALF[x] * counts[x]
            values += [HALF[x]] * counts[x]
        elif maybe[x // 13] & _BITS[x] or (ace_maybe and x % 13 == 0):
            values += [HALF[x]] * counts[x]
            unsure.append(x)
        else:
            idle.append(x)
    if not p.need:
        return 0, idle
    best_groups = 0
    if unsure:
        spans: list[list[tuple[int, int]]] = [[], [], [], []]  # per suit, (group, positions)
        group = 0
        for s in range(4):
            mask = present[s] | table[s]
            mask |= mask << 1 & mask >> 1  # a hole of one position does not split a group
            while mask:
                run = mask & ~(mask + (mask & -mask))
                spans[s].append((group, run))
                group += 1
                mask ^= run
        groups = [0] * (group + 1)  # per group: the value of its maybe-cards (the last: aces)
        for x in unsure:
            s = x // 13
            hit = maybe[s] & _BITS[x]
            for i, run in spans[s]:
                if run & hit:
                    groups[i] += HALF[x] * counts[x]
            if ace_maybe and x % 13 == 0:
                groups[-1] += HALF[x] * counts[x]
        best_groups = sum(sorted(groups, reverse=True)[:wilds])
    keep = 2 - p.locked - sum(counts[x] for x in idle)
    if keep > 0 and not _biriba_possible(p, 0):
        values.sort()
        return min(sure_value + best_groups, sum(values[keep:])), idle
    return min(sure_value + best_groups, sum(values)), idle


def _ordered(p: Problem, x: int, closed: int) -> list[Piece]:
    """The pieces holding ``x`` that the cards left allow, most going-down value first (a 7.5
    opening is found early). Cards only leave during the search, and a piece possible later
    was possible at the start (a pankal standing in for a natural card is one of the options
    then), so each identity's pieces are made once, from the search's first cards, and then
    only checked against the cards left."""
    every = p.pieces.get(x)
    if every is None:
        pieces = _pieces(p, x, p.start, p.start_have, 0)
        made = {_piece((_sorted_used(q.used), q.size, q.dirty, q.extends)) for q in pieces}
        every = p.pieces[x] = [(piece, _needs(piece.used)) for piece in sorted(made, key=_rank)]
    counts = p.counts
    out = []
    for piece, needs in every:
        if piece.extends >= 0 and closed >> piece.extends & 1:
            continue
        for i, n in needs:
            if counts[i] < n:
                break
        else:
            out.append(piece)
    return out


def _rank(piece: Piece) -> tuple[int, tuple[int, ...], int]:
    return (-_value(piece.used), piece.used, piece.extends)


# The pieces' few card combinations come up again and again, search after search: their sorted
# form, value and needs are pure functions of the combination, each worked out once

_COMBINATIONS = 1 << 13


@lru_cache(maxsize=_COMBINATIONS)
def _sorted_used(used: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(used))


@lru_cache(maxsize=_COMBINATIONS)
def _value(used: tuple[int, ...]) -> int:
    """The going-down value of ``used``, in half points."""
    return sum(map(HALF.__getitem__, used))


@lru_cache(maxsize=_COMBINATIONS)
def _needs(used: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """(identity, copies) of a sorted ``used``."""
    out: list[tuple[int, int]] = []
    for i in used:
        if out and out[-1][0] == i:
            out[-1] = (i, out[-1][1] + 1)
        else:
            out.append((i, 1))
    return tuple(out)


def _take_piece(p: Problem, piece: Piece, made: Made, kept: int, halves: int) -> bool:
    counts = p.counts
    used = piece.used
    for x in used:
        counts[x] -= 1
    value = _value(used)
    p.left -= len(used)
    p.value -= value
    found = _search(p, made.add(piece), kept, halves + value)
    p.left += len(used)
    p.value += value
    for x in used:
        counts[x] += 1
    return found


_IDENTITIES = range(IDENTS)

# the order the search decides identities in: most going-down value first
_ORDER = sorted(range(IDENTS), key=lambda i: (-HALF[i], -i))


def _search(p: Problem, made: Made, kept: int, halves: int) -> bool:
    """Can the turn end well from here (the top card already melded)?"""
    p.nodes += 1
    counts = p.counts
    left = p.left
    if halves >= p.need and _may_stop(p, made, kept + left + p.locked):
        return True
    if left == 0:
        return False
    if halves < p.need and halves + _upper_bound(p, made, kept) < p.need:
        return False
    # success only grows with kept cards, going-down value and what the pieces amount to: a
    # dead end also condemns every later arrival at the same cards left and melds extended
    # that has no more of any of them
    floor = min(kept + p.locked, 2)
    here = (floor, min(halves, p.need), *(made[1:] if floor < 2 else (True,) * 5))
    key = (tuple(counts), made.closed)
    dead = p.memo.get(key)
    if dead and any(all(a <= b for a, b in zip(here, old, strict=True)) for old in dead):
        return False
    x = next(filter(counts.__getitem__, _ORDER))  # the first identity left (left > 0)
    found = False
    for piece in _ordered(p, x, made.closed):
        if _take_piece(p, piece, made, kept, halves):
            found = True
            break
    if not found:  # x stays in the hand
        counts[x] -= 1
        p.left -= 1
        p.value -= HALF[x]
        found = _search(p, made, kept + 1, halves)
        counts[x] += 1
        p.left += 1
        p.value += HALF[x]
    if not found:
        p.memo.setdefault(key, []).append(here)
    return found


def _upper_bound(p: Problem, made: Made, kept: int) -> int:
    """An upper bound of the going-down value still meldable: every card left, less the
    cheapest cards that must stay in the hand (2 in all) when no biriba can ever allow fewer."""
    counts = p.counts
    total = p.value
    keep = 2 - kept - p.locked
    if keep > 0 and not (made.biribas or _biriba_possible(p, made.closed)):
        for value, group in _BY_VALUE:
            n = sum(map(counts.__getitem__, group))
            if n:
                n = min(n, keep)
                total -= value * n
                keep -= n
                if not keep:
                    break
    return total


# (value, its identities) per going-down value, least first: the cheapest cards by value
_BY_VALUE = tuple((v, tuple(i for i in range(IDENTS) if HALF[i] == v)) for v in sorted(set(HALF)))


def _biriba_possible(p: Problem, closed: int) -> bool:
    """A necessary condition for a meld of 7 cards or more at the end: some suit (or the aces)
    has enough cards left, with one pankal and the side's longest meld there."""
    counts = p.counts
    wild = any(counts[w] for w in PANKALS)
    longest = [0] * 5  # per suit, 4: ace-sets
    for i, meld in enumerate(p.melds):
        size = len(meld["cards"])
        if size >= BIRIBA and not closed >> i & 1:
            return True
        where = 4 if meld["kind"] == "ace_set" else meld["suit"]
        longest[where] = max(longest[where], 0 if closed >> i & 1 else size)
    for suit in range(4):
        naturals = sum(counts[suit * 13 : suit * 13 + 13])
        if longest[suit] + naturals + wild >= BIRIBA:
            return True
    aces = sum(counts[suit * 13] for suit in range(4))
    return p.ace_ok and longest[4] + aces + wild >= BIRIBA


def _may_stop(p: Problem, made: Made, cards_left: int) -> bool:
    """Stopping the melding here with ``cards_left`` in hand ends the turn legally (by the discard)."""
    if cards_left >= 2:
        return True
    pure, dirty, biribas = made.pure, made.dirty, made.biribas
    for i, meld in enumerate(p.melds):
        if not made.closed >> i & 1 and len(meld["cards"]) >= BIRIBA:
            clean = p.clean[i]
            pure, dirty, biribas = pure or clean, dirty or not clean, biribas + 1
    if cards_left == 1:  # the last card is discarded: it takes the More pile or goes out
        return (biribas > 0 and p.pile_waiting) or (not p.pile_waiting and pure and dirty)
    # the hand emptied by melding takes the More pile; the step before, leaving one card, needed
    # a biriba on the table already: some card can be melded last without undoing the only one
    # (a last 3-card meld goes from three cards to none)
    if not p.pile_waiting or biribas == 0:
        return False
    return biribas > 1 or made.biribas == 0 or made.pieces > 1 or made.loose


# ---- the pieces that can hold identity x ----


def _pieces(p: Problem, x: int, counts: list[int], have: list[int], closed: int) -> list[Piece]:
    """Every piece holding identity ``x`` with cards of ``counts`` (x included; ``have``: per
    suit, ``_have(counts, suit)``)."""
    out: list[Piece] = []
    wild = x in PANKALS
    wilds = [w for w in PANKALS if counts[w]]
    for suit in range(4):
        if wild or x // 13 == suit:
            _runs(out, counts, x, suit, have[suit], wilds)
    if p.ace_ok:
        out += _ace_sets(counts, x, 0, 0, True)
    for i, meld in enumerate(p.melds):
        if closed >> i & 1:
            continue
        clean = p.clean[i]
        if meld["kind"] == "ace_set":
            if p.ace_ok:
                size = len(meld["cards"])
                for piece in _ace_sets(counts, x, size, 1, clean):
                    out.append(_piece((piece.used, piece.size, piece.dirty or not clean, i)))
            continue
        if not wild and x // 13 != meld["suit"]:
            continue
        low, high = meld["low"], meld["low"] + len(meld["cards"]) - 1
        _spans(out, counts, x, meld["suit"], have[meld["suit"]], wilds, low, high, clean, i)
    return out


# per suit and run position 0..15: the natural identity there (-1 off the run)
_NAT = tuple(tuple(_natural(s, q) if 1 <= q <= 14 else -1 for q in range(16)) for s in range(4))


def _have(counts: list[int], suit: int) -> int:
    """Bit q: the natural card of position q of ``suit`` is among ``counts``."""
    base, mask = suit * 13, 0
    for x in range(base, base + 13):
        if counts[x]:
            mask |= _BITS[x]
    return mask


def _runs(out: list[Piece], counts: list[int], x: int, suit: int, have: int, wilds: list[int]) -> None:
    """New runs of ``suit`` (3 cards or more) holding ``x``."""
    nat = _NAT[suit]
    if x < 52 and x // 13 == suit:  # x as a natural card at p
        for p in (1, 14) if x % 13 == 0 else (x % 13 + 1,):
            for a, b in _reach(have, p - 1, p + 1, 1):
                if b - a >= 2:
                    _fill(out, counts, x, nat, have, list(range(a, b + 1)), wilds, True, 0, 0, -1, False)
    if _IS_PANKAL[x]:  # x as the pankal at q, every other position natural
        beside = (have << 1 | have >> 1) & _POSITIONS  # a natural card next to position q
        while beside:
            bit = beside & -beside
            beside ^= bit
            q = bit.bit_length() - 1
            if x != nat[q]:
                for a, b in _reach(have, q - 1, q + 1, 0):
                    if b - a >= 2:
                        _fill(out, counts, x, nat, have, list(range(a, b + 1)), wilds, True, q, 0, -1, False)


def _spans(
    out: list[Piece],
    counts: list[int],
    x: int,
    suit: int,
    have: int,
    wilds: list[int],
    low: int,
    high: int,
    wild_ok: bool,
    extends: int,
) -> None:
    """Cards added below ``low`` and above ``high`` of run meld ``extends`` of ``suit``, holding
    ``x``, with at most one pankal if ``wild_ok``."""
    nat = _NAT[suit]
    size = high - low + 1
    natural = {q for s, q in _positions(x) if s == suit}
    for a, b in _reach(have, low - 1, high + 1, 1 if wild_ok else 0):
        slots = [*range(a, low), *range(high + 1, b + 1)]
        if natural.intersection(slots):
            _fill(out, counts, x, nat, have, slots, wilds, wild_ok, 0, size, extends, not wild_ok)
        elif wild_ok and x in PANKALS:
            for q in slots:
                if x != nat[q]:
                    _fill(out, counts, x, nat, have, slots, wilds, True, q, size, extends, False)


@lru_cache(maxsize=1 << 14)  # a pure function of four small ints, asked again and again
def _reach(have: int, below: int, above: int, gaps: int) -> tuple[tuple[int, int], ...]:
    """Spans [a, below] + [above, b] (each possibly empty, not both) with at most ``gaps``
    positions whose natural card is missing (``have``: the positions present): (a, b)."""
    downs = [(below + 1, 0)]
    missing = 0
    for q in range(below, 0, -1):
        if not have >> q & 1:
            missing += 1
            if missing > gaps:
                break
        downs.append((q, missing))
    ups = [(above - 1, 0)]
    missing = 0
    for q in range(above, 15):
        if not have >> q & 1:
            missing += 1
            if missing > gaps:
                break
        ups.append((q, missing))
    return tuple((a, b) for a, m1 in downs for b, m2 in ups if m1 + m2 <= gaps and (a <= below or b >= above))


def _fill(
    out: list[Piece],
    counts: list[int],
    x: int,
    nat: tuple[int, ...],
    have: int,
    slots: list[int],
    wilds: list[int],
    wild_ok: bool,
    wild_at: int,
    size: int,
    extends: int,
    dirty: bool,
) -> None:
    """Fillings of ``slots`` holding ``x``: naturals, and at most one pankal if ``wild_ok``
    (``wild_at`` > 0: x itself is the pankal there), as pieces of ``size`` more cards."""
    size += len(slots)
    if wild_at:
        used = [nat[q] for q in slots if q != wild_at]
        used.append(x)
        for i in used:
            if used.count(i) > counts[i]:
                return
        out.append(_piece((tuple(used), size, True, extends)))
        return
    # the short positions: no natural card, or the second of the low and high ace with one ace
    short = [q for q in slots if not have >> q & 1]
    if slots[0] == 1 and slots[-1] == 14 and counts[nat[1]] == 1:
        short.append(14)
    if len(short) > 1 or (short and not wild_ok):
        return
    if short:  # the pankal takes the one short position
        slot = short[0]
        base = [nat[q] for q in slots if q != slot]
        for w in wilds:
            if w == nat[slot]:
                continue  # a 2 in its own natural place is no pankal
            if (x == w or x in base) and base.count(w) < counts[w]:
                out.append(_piece(((*base, w), size, True, extends)))
        return
    # none short: no pankal, or (if wild_ok) a pankal in any position, in place of a natural card
    # kept for elsewhere. The naturals less the one at position i still hold w as often as all
    # of them do (w is no natural there), and x unless it is that natural and its only copy.
    full = [nat[q] for q in slots]
    held = full.count(x)
    if held:
        out.append(_piece((tuple(full), size, dirty, extends)))
    if not wild_ok:
        return
    spare = [w for w in wilds if full.count(w) < counts[w]]
    if not spare:
        return
    for i, natural in enumerate(full):
        x_in = held > (natural == x)
        for w in spare:
            if w != natural and (x_in or x == w):
                out.append(_piece(((*full[:i], *full[i + 1 :], w), size, True, extends)))


def _ace_sets(counts: list[int], x: int, size: int, least: int, wild_ok: bool) -> Iterator[Piece]:
    """Aces (and at most one pankal if ``wild_ok``) holding ``x``: a new ace-set (``size`` 0,
    3 cards or more) or ``least`` or more cards added to an ace-set of ``size`` cards."""
    if x % 13 != 0 and x not in PANKALS:
        return
    aces = [counts[suit * 13] for suit in range(4)]
    wilds = [None, *(w for w in PANKALS if counts[w])] if wild_ok else [None]
    for c0 in range(aces[0] + 1):
        for c1 in range(aces[1] + 1):
            for c2 in range(aces[2] + 1):
                for c3 in range(aces[3] + 1):
                    base = (0,) * c0 + (13,) * c1 + (26,) * c2 + (39,) * c3
                    for w in wilds:
                        used = base if w is None else (*base, w)
                        total = size + len(used)
                        if len(used) >= least and total >= 3 and x in used:
                            yield _piece((used, total, w is not None, -1))
