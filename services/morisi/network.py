"""The players' committed stick networks, and the turn's pending route, indexed for the move
generator and the house count.

A ``Network`` is built once from a state's sticks and then kept up to date route by route; a
``PendingRoute`` follows the sticks laid this turn one by one. So listing sticks, checking a
route and counting houses never rescan every stick on the board.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Iterable, Sequence
from typing import Any

# What a PendingRoute's index is made of: saved before each pushed stick, restored on an undo.
_INDEX_FIELDS = ("pairs", "degree", "dead_ends", "adds_house", "_up", "_count", "_options", "_hand")
_index_of = operator.attrgetter(*_INDEX_FIELDS)

Pair = tuple[int, int]
# A stick a seat could lay: (anchor, paid tile, ordered pair, paid colour, cost in blocks)
LayOption = tuple[int, int, Pair, int, int]
# Per tile, the sticks it could anchor that pay for a land tile: (paid tile, ordered pair, colour)
LandLinks = Sequence[Sequence[tuple[int, Pair, int]]]


class Network:
    """Who owns each tile pair, each seat's tiles and stick count, and each seat's components
    (a union-find over tiles, with the number of cities in each component)."""

    def __init__(
        self, players: int, is_city: list[bool], land_links: LandLinks, sticks: Iterable[list[int]]
    ) -> None:
        self.is_city = is_city
        self.cities = [t for t, city in enumerate(is_city) if city]
        self.land_links = land_links
        self.owners: dict[Pair, list[int]] = {}
        self.tiles: list[set[int]] = [set() for _ in range(players)]
        self.laid = [0] * players
        self.parent: list[dict[int, int]] = [{} for _ in range(players)]
        self.cities_in: list[dict[int, int]] = [{} for _ in range(players)]
        # bumped by every stick added: what was derived from an older version is stale
        self.version = 0
        self._options: list[dict[int, list[LayOption]]] = [{} for _ in range(players)]
        self._anchors: list[tuple[list[int], set[int]] | None] = [None] * players
        self._base_options: list[list[LayOption] | None] = [None] * players
        for seat, a, b, *_ in sticks:
            self.add(seat, a, b)

    def add(self, seat: int, a: int, b: int) -> None:
        """Record a committed stick of ``seat`` between tiles ``a < b``."""
        self.owners.setdefault((a, b), []).append(seat)
        self.tiles[seat].update((a, b))
        self.laid[seat] += 1
        self.version += 1
        for options in self._options:  # a new owner of (a, b) changes every seat's price of it
            options.clear()
        self._base_options = [None] * len(self._base_options)
        self._anchors[seat] = None
        parent, count = self.parent[seat], self.cities_in[seat]
        for x in (a, b):
            if x not in parent:
                parent[x] = x
                count[x] = int(self.is_city[x])
        ra, rb = self.find(seat, a), self.find(seat, b)
        if ra != rb:
            parent[ra] = rb
            count[rb] += count.pop(ra)

    def anchors(self, seat: int) -> tuple[list[int], set[int]]:
        """The tiles a stick of ``seat`` may start from without this turn's sticks (its tiles and
        every city), sorted and as a set."""
        known = self._anchors[seat]
        if known is None:
            found = self.tiles[seat].union(self.cities)
            known = self._anchors[seat] = (sorted(found), found)
        return known

    def stick_options(self, seat: int, anchor: int, two_players: bool) -> list[LayOption]:
        """The sticks ``seat`` could lay from ``anchor`` to a land tile as far as the committed
        sticks decide (not its own stick there, none at all with 2 players), each with its cost:
        one more block per parallel stick. Hand, supply and this turn's sticks are the caller's."""
        options = self._options[seat]
        found = options.get(anchor)
        if found is None:
            found = []
            for paid, pair, color in self.land_links[anchor]:
                owners = self.owners.get(pair)
                if owners and (two_players or seat in owners):
                    continue
                found.append((anchor, paid, pair, color, len(owners) + 1 if owners else 1))
            options[anchor] = found
        return found

    def base_options(self, seat: int, two_players: bool) -> list[LayOption]:
        """``stick_options`` of every anchor of ``anchors(seat)``, in tile order."""
        found = self._base_options[seat]
        if found is None:
            found = self._base_options[seat] = [
                option
                for anchor in self.anchors(seat)[0]
                for option in self.stick_options(seat, anchor, two_players)
            ]
        return found

    def find(self, seat: int, x: int) -> int:
        """The component root of tile ``x`` (``x`` itself when the seat has no stick there)."""
        parent = self.parent[seat]
        if x not in parent:
            return x
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def _cities(self, seat: int, root: int) -> int:
        return self.cities_in[seat].get(root, int(self.is_city[root]))

    def _merge(self, seat: int, extra: Iterable[Pair]) -> tuple[dict[int, int], dict[int, int], bool]:
        """The components once ``extra`` sticks join the network: (root -> merged root, merged
        root -> cities, whether two components that each hold a city were joined)."""
        up: dict[int, int] = {}
        count: dict[int, int] = {}
        joined_cities = False
        for a, b in extra:
            joined_cities = self.join(seat, up, count, a, b) or joined_cities
        return up, count, joined_cities

    def join(self, seat: int, up: dict[int, int], count: dict[int, int], a: int, b: int) -> bool:
        """One extra stick ``a``-``b`` merged into ``up``/``count`` (see ``_merge``): whether it
        joined two components that each hold a city (so every city of both counts more cities:
        a house is added)."""
        ra = self.find(seat, a)
        while ra in up:
            ra = up[ra]
        rb = self.find(seat, b)
        while rb in up:
            rb = up[rb]
        if ra == rb:
            return False
        ca = count.pop(ra) if ra in count else self._cities(seat, ra)
        cb = count[rb] if rb in count else self._cities(seat, rb)
        up[ra] = rb
        count[rb] = ca + cb
        return ca > 0 and cb > 0

    def points(self, seat: int, cities: Iterable[int], extra: Iterable[Pair] = ()) -> dict[int, int]:
        """City -> k - 1 for each city in a component of k >= 2 cities (``extra`` sticks added)."""
        extra = list(extra)
        if not extra:
            parent, cities_in = self.parent[seat], self.cities_in[seat]
            found = {}
            for city in cities:
                if city in parent:
                    k = cities_in[self.find(seat, city)]
                    if k > 1:
                        found[city] = k - 1
            return found
        up, count, _ = self._merge(seat, extra)
        out = {}
        for city in cities:
            r = self.find(seat, city)
            while r in up:
                r = up[r]
            k = count[r] if r in count else self._cities(seat, r)
            if k > 1:
                out[city] = k - 1
        return out


class PendingRoute:
    """The sticks ``seat`` laid this turn on top of ``network`` (at its ``version``), indexed stick
    by stick as they are laid: their tile pairs, how many of them end at each tile, how many of
    their ends are dead ends (a tile one of them ends at, neither a city nor on the seat's network)
    and whether they add a house; and the sticks the seat may lay next, as far as its hand and
    these sticks decide. Each stick keeps what it replaced, so that taking sticks back restores
    the index as it was."""

    def __init__(self, network: Network, seat: int, two_players: bool) -> None:
        self.network = network
        self.version = network.version
        self.seat = seat
        self.two_players = two_players
        self.sticks: list[list[int]] = []  # a copy of the state's pending sticks as indexed
        self.pairs: set[Pair] = set()
        self.degree: dict[int, int] = {}
        self.dead_ends = 0
        self.adds_house = False
        self._up: dict[int, int] = {}  # the network's components as these sticks merge them
        self._count: dict[int, int] = {}
        self._options: list[LayOption] = []  # valid for the hand ``_hand``
        self._hand: list[int] | None = None
        # at least the cost of every option: one more block per parallel stick (none with 2 players)
        self._dearest = 1 if two_players else 1 + max(map(len, network.owners.values()), default=0)
        self._before: list[tuple[Any, ...]] = []  # per stick, the index as it was without it

    def sync(self, network: Network, seat: int, pending: list[list[int]]) -> bool:
        """Whether this indexes ``pending`` (taking back sticks no longer in it); False: build a
        new one."""
        if self.network is not network or self.version != network.version or self.seat != seat:
            return False
        sticks = self.sticks
        if sticks == pending:
            return True
        n = len(pending)
        if n < len(sticks) and sticks[:n] == pending:
            for name, value in zip(_INDEX_FIELDS, self._before[n], strict=True):
                setattr(self, name, value)
            del self._before[n:]
            del sticks[n:]
            return True
        return False

    def push(self, anchor: int, paid: int, cost: int, paid_with: tuple[int, list[int]] | None = None) -> None:
        """Index one more pending stick; ``paid_with``: its colour and the seat's blocks after
        paying for it, for the sticks it may lay next to follow (else they are listed again)."""
        self._before.append(_index_of(self))
        network = self.network
        pair = (anchor, paid) if anchor < paid else (paid, anchor)
        self.sticks.append([anchor, paid, cost])
        self.pairs = self.pairs | {pair}
        degree = self.degree = dict(self.degree)
        own = network.tiles[self.seat]
        for x in (anchor, paid):
            d = degree[x] = degree.get(x, 0) + 1
            if d < 3 and not network.is_city[x] and x not in own:  # an open end opens or closes
                self.dead_ends += 1 if d == 1 else -1
        if not self.adds_house:  # once a house is added, more sticks keep it added
            up, count = self._up, self._count = dict(self._up), dict(self._count)
            self.adds_house = network.join(self.seat, up, count, anchor, paid)
        if paid_with is not None and self._hand is not None:
            self._follow_hand(anchor, paid, pair, *paid_with)
        else:
            self._hand = None

    def _follow_hand(self, anchor: int, paid: int, pair: Pair, color: int, hand: list[int]) -> None:
        """The lay options after the stick ``anchor``-``paid`` (just pushed) left ``hand``: the
        stick's pair is taken, its colour may no longer pay for some, and a tile it reached first
        (not a city, not on the network) anchors new ones."""
        seen = list(hand)
        seen[color] += self.sticks[-1][2]
        if seen != self._hand:
            self._hand = None
            return
        have = seen[color] = hand[color]
        # (x, beyond) sorts after every option anchored at x: tile numbers are below len(is_city)
        beyond = len(self.network.is_city)
        if have < self._dearest:  # the colour may no longer pay for some
            options = [o for o in self._options if o[2] != pair and (o[3] != color or o[4] <= have)]
        else:  # only the options of the stick's pair go, found among those of its two tiles
            options = self._options[:]
            for end in pair:
                at = bisect.bisect_left(options, (end,))
                for i in range(at, bisect.bisect_right(options, (end, beyond), at)):
                    if options[i][2] == pair:
                        del options[i]
                        break
        known = self.network.anchors(self.seat)[1]
        for x in (anchor, paid):
            if self.degree[x] == 1 and x not in known:
                at = bisect.bisect_right(options, (x, beyond))
                options[at:at] = self._options_from(x, hand)
        self._options = options
        self._hand = seen

    def lay_options(self, hand: list[int]) -> list[LayOption]:
        """Every stick the seat may lay next with ``hand``, anchors in tile order (the stick
        supply is the caller's to check)."""
        if self._hand != hand:
            network, pending = self.network, self.pairs
            options = [
                o
                for o in network.base_options(self.seat, self.two_players)
                if hand[o[3]] >= o[4] and o[2] not in pending
            ]
            known = network.anchors(self.seat)[1]
            new = [t for t in self.degree if t not in known]
            if new:  # tiles only this turn's sticks reached anchor more, in tile order too
                for t in new:
                    options += self._options_from(t, hand)
                options.sort(key=_anchor_of)  # stable: each anchor's options stay in their order
            self._options = options
            self._hand = list(hand)
        return self._options

    def _options_from(self, anchor: int, hand: list[int]) -> list[LayOption]:
        pending = self.pairs
        return [
            o
            for o in self.network.stick_options(self.seat, anchor, self.two_players)
            if hand[o[3]] >= o[4] and o[2] not in pending
        ]

    def pieces(self) -> int:
        """How many connected pieces these sticks form."""
        parent: dict[int, int] = {}
        pieces = 0
        for anchor, paid, _ in self.sticks:
            for x in (anchor, paid):
                if x not in parent:
                    parent[x] = x
                    pieces += 1
            ra, rb = _root(parent, anchor), _root(parent, paid)
            if ra != rb:
                parent[ra] = rb
                pieces -= 1
        return pieces

    def first_dead_end(self) -> int | None:
        network = self.network
        own = network.tiles[self.seat]
        ends = [t for t, d in self.degree.items() if d == 1 and not network.is_city[t] and t not in own]
        return min(ends) if ends else None


def _root(parent: dict[int, int], x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _anchor_of(option: LayOption) -> int:
    return option[0]
