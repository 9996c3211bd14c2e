"""The players' committed stick networks, indexed for the move generator and the house count.

Built once from a state's sticks and then kept up to date route by route, so that listing
sticks, checking a route and counting houses never rescan every stick on the board.
"""

from __future__ import annotations

from collections.abc import Iterable

Pair = tuple[int, int]


class Network:
    """Who owns each tile pair, each seat's tiles and stick count, and each seat's components
    (a union-find over tiles, with the number of cities in each component)."""

    def __init__(self, players: int, is_city: list[bool], sticks: Iterable[list[int]]) -> None:
        self.is_city = is_city
        self.owners: dict[Pair, list[int]] = {}
        self.tiles: list[set[int]] = [set() for _ in range(players)]
        self.laid = [0] * players
        self.parent: list[dict[int, int]] = [{} for _ in range(players)]
        self.cities_in: list[dict[int, int]] = [{} for _ in range(players)]
        for seat, a, b, *_ in sticks:
            self.add(seat, a, b)

    def add(self, seat: int, a: int, b: int) -> None:
        """Record a committed stick of ``seat`` between tiles ``a < b``."""
        self.owners.setdefault((a, b), []).append(seat)
        self.tiles[seat].update((a, b))
        self.laid[seat] += 1
        parent, count = self.parent[seat], self.cities_in[seat]
        for x in (a, b):
            if x not in parent:
                parent[x] = x
                count[x] = int(self.is_city[x])
        ra, rb = self.find(seat, a), self.find(seat, b)
        if ra != rb:
            parent[ra] = rb
            count[rb] += count.pop(ra)

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

        def top(x: int) -> int:
            r = self.find(seat, x)
            while r in up:
                r = up[r]
            return r

        for a, b in extra:
            ra, rb = top(a), top(b)
            if ra == rb:
                continue
            ca = count.pop(ra) if ra in count else self._cities(seat, ra)
            cb = count[rb] if rb in count else self._cities(seat, rb)
            joined_cities = joined_cities or (ca > 0 and cb > 0)
            up[ra] = rb
            count[rb] = ca + cb
        return up, count, joined_cities

    def adds_house(self, seat: int, extra: Iterable[Pair]) -> bool:
        """Whether ``extra`` sticks change some city's house-points: exactly when they join two
        components that both hold a city (every city of both then counts more cities)."""
        return self._merge(seat, extra)[2]

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
