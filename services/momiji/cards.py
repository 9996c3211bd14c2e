"""Momiji data tables: leaf cards and their acorn corners, powers, goals, and the card/goal helpers.

Every number of ``docs/rules/momiji.md`` Part 2 lives here, so a different edition is a data
change. A card is an integer id ``type_index * 14 + copy``; ``type_index`` 0-5 follows
``LEAF_NAMES``.
"""

from __future__ import annotations

from typing import Any

LEAF_NAMES = (
    "LEAF_TYPE_MAPLE",
    "LEAF_TYPE_GINKGO",
    "LEAF_TYPE_CHERRY",
    "LEAF_TYPE_OAK",
    "LEAF_TYPE_BIRCH",
    "LEAF_TYPE_BEECH",
)
LEAF_WORDS = ("Maple", "Ginkgo", "Cherry", "Oak", "Birch", "Beech")

CARDS_PER_TYPE = 14
# Per copy 0-13 of a type: value, acorn in the lower-left corner, acorn in the lower-right corner.
COPY_VALUE = (0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 3, 3)
COPY_LEFT = (False, False, True, True, True, False, True, False, False, True, False, False, False, False)
COPY_RIGHT = (True, True, False, False, True, True, False, False, False, True, False, False, False, False)

HAND_SIZE = 6
START_ACORNS = 2
DISPLAY_SIZE = 4
REVEAL_COUNT = 4
HAND_LIMIT = 8
LANDSCAPE_SIZE = 3
GOAL_COST = 3
REVEAL_COST = 1
POWER_COST = 1
DISCARD_GAIN = 1
PAIR_GAIN = 2
TEA_HOUSE_GAIN = 2
MOUNTAIN_PATH_DRAW = 2
TEMPLE_BELL_PEEK = 3
HOLDER_POINTS = 10
OTHER_POINTS = 3

MOUNTAIN_PATH = "POWER_MOUNTAIN_PATH"
STONE_LANTERN = "POWER_STONE_LANTERN"
KOI_POND = "POWER_KOI_POND"
BAMBOO_BRIDGE = "POWER_BAMBOO_BRIDGE"
TEA_HOUSE = "POWER_TEA_HOUSE"
TEMPLE_BELL = "POWER_TEMPLE_BELL"
MOSS_GARDEN = "POWER_MOSS_GARDEN"
PAGODA = "POWER_PAGODA"
RAIN_SHOWER = "POWER_RAIN_SHOWER"
POWERS = (
    MOUNTAIN_PATH,
    STONE_LANTERN,
    KOI_POND,
    BAMBOO_BRIDGE,
    TEA_HOUSE,
    TEMPLE_BELL,
    MOSS_GARDEN,
    PAGODA,
    RAIN_SHOWER,
)
# Powers used with their own move kind (they need a choice); the others use ``use_power``.
POWER_MOVES = {
    STONE_LANTERN: "stone_lantern",
    KOI_POND: "koi_pond",
    MOSS_GARDEN: "moss_garden",
    PAGODA: "pagoda",
}
POWER_WORDS = {p: p.removeprefix("POWER_").replace("_", " ").title() for p in POWERS}

# Goal pool: name -> (metric, "most" or "fewest").
GOALS: dict[str, tuple[str, str]] = {
    "GOAL_MOST_ZEROS": ("zeros", "most"),
    "GOAL_MOST_CARDS": ("cards", "most"),
    "GOAL_HIGHEST_TOP_SUM": ("top_sum", "most"),
    "GOAL_MOST_CLOSED": ("closed", "most"),
    "GOAL_MOST_TYPES": ("types", "most"),
    "GOAL_LONGEST_STACK": ("longest", "most"),
    "GOAL_MOST_ACORNS": ("acorns", "most"),
    "GOAL_FEWEST_HAND": ("hand", "fewest"),
    "GOAL_MOST_FIRST_TYPE": ("type0", "most"),
    "GOAL_MOST_SECOND_TYPE": ("type1", "most"),
    "GOAL_MOST_THIRD_TYPE": ("type2", "most"),
    "GOAL_MOST_THREES_ON_TOP": ("threes_on_top", "most"),
}
GOAL_NAMES = tuple(GOALS)


def ctype(card: int) -> int:
    return card // CARDS_PER_TYPE


def cvalue(card: int) -> int:
    return COPY_VALUE[card % CARDS_PER_TYPE]


def left(card: int) -> bool:
    return COPY_LEFT[card % CARDS_PER_TYPE]


def right(card: int) -> bool:
    return COPY_RIGHT[card % CARDS_PER_TYPE]


_FACES = [
    (
        card // CARDS_PER_TYPE,
        COPY_VALUE[card % CARDS_PER_TYPE],
        COPY_LEFT[card % CARDS_PER_TYPE],
        COPY_RIGHT[card % CARDS_PER_TYPE],
    )
    for card in range(len(LEAF_NAMES) * CARDS_PER_TYPE)
]


def face(card: int) -> tuple[int, int, bool, bool]:
    """Everything the rules can tell about a card: cards of equal face are interchangeable."""
    return _FACES[card]


def sort_key(card: int) -> tuple[int, int, int]:
    return (ctype(card), cvalue(card), card)


_CARD_DICTS = [
    {
        "id": card,
        "type": LEAF_NAMES[card // CARDS_PER_TYPE],
        "value": COPY_VALUE[card % CARDS_PER_TYPE],
        "acorn_left": COPY_LEFT[card % CARDS_PER_TYPE],
        "acorn_right": COPY_RIGHT[card % CARDS_PER_TYPE],
    }
    for card in range(len(LEAF_NAMES) * CARDS_PER_TYPE)
]


def card_dict(card: int) -> dict[str, Any]:
    """The Card message of a card id (a fresh dict)."""
    return dict(_CARD_DICTS[card])


def card_words(card: int) -> str:
    return f"{LEAF_WORDS[ctype(card)]} {cvalue(card)} (card {card})"


def goal_metric(metric: str, stacks: list[list[int]], acorns: int, hand: int) -> int:
    """The value a player has for one goal metric (stacks in type order, bottom first)."""
    tops = [cvalue(s[-1]) for s in stacks if s]
    if metric == "zeros":
        return sum(1 for s in stacks for c in s if cvalue(c) == 0)
    if metric == "cards":
        return sum(len(s) for s in stacks)
    if metric == "top_sum":
        return sum(tops)
    if metric in ("closed", "threes_on_top"):
        return sum(1 for t in tops if t == 3)
    if metric == "types":
        return len(tops)
    if metric == "longest":
        return max((len(s) for s in stacks), default=0)
    if metric == "acorns":
        return acorns
    if metric == "hand":
        return hand
    if metric.startswith("type"):
        index = int(metric[4:])
        return len(stacks[index]) if index < len(stacks) else 0
    raise ValueError(metric)


def goal_best(goal: str, values: list[int]) -> list[int]:
    """Seats that meet a goal: the best value, and above zero for a "most" goal."""
    _, kind = GOALS[goal]
    if kind == "fewest":
        best = min(values)
        return [s for s, v in enumerate(values) if v == best]
    best = max(values)
    if best <= 0:
        return []
    return [s for s, v in enumerate(values) if v == best]
