"""Happy Mochi cards and the Duo rule (value and colour restrictions, Happy Mochi doubles)."""

from __future__ import annotations

from services.engine import JsonDict

COLORS = (
    "COLOR_RED",
    "COLOR_ORANGE",
    "COLOR_YELLOW",
    "COLOR_GREEN",
    "COLOR_BLUE",
    "COLOR_PURPLE",
    "COLOR_PINK",
)
VALUES = 10
DECK_SIZE = len(COLORS) * VALUES  # 70

# The effect table (happy-mochi.md): every 9 draws, every 5 flips the Value card.
EFFECT_BY_VALUE = {9: "EFFECT_DRAW", 5: "EFFECT_VALUE_FLIP"}
NO_EFFECT = "EFFECT_NONE"

PLUS = "VALUE_SIDE_PLUS"
MINUS = "VALUE_SIDE_MINUS"


def card_value(card: int) -> int:
    return card % VALUES


def card_color(card: int) -> str:
    return COLORS[card // VALUES]


def card_effect(card: int) -> str:
    return EFFECT_BY_VALUE.get(card_value(card), NO_EFFECT)


def card_dict(card: int) -> JsonDict:
    return {"id": card, "value": card_value(card), "color": card_color(card), "effect": card_effect(card)}


def duo_number(left: int, right: int) -> int:
    return 10 * card_value(left) + card_value(right)


def is_happy_mochi(left: int, right: int) -> bool:
    return card_value(left) == card_value(right)


def check_duo(left: int, right: int, top_left: int, top_right: int, side: str) -> tuple[str, str] | None:
    """Why the Duo (left, right) may not be played on the Central Duo, or None if it may."""
    if is_happy_mochi(left, right):
        return None
    number, target = duo_number(left, right), duo_number(top_left, top_right)
    if side == PLUS and number <= target:
        return "value_restriction", f"the Value card shows +: {number:02d} is not greater than {target:02d}"
    if side == MINUS and number >= target:
        return "value_restriction", f"the Value card shows -: {number:02d} is not less than {target:02d}"
    if card_color(top_left) == card_color(top_right) and card_color(left) != card_color(right):
        return (
            "color_restriction",
            "the Central Duo is one colour, so the Duo must be two cards of one colour",
        )
    return None


def playable_duos(hand: list[int], top_left: int, top_right: int, side: str) -> list[int]:
    """The positions ``i`` whose Duo (hand[i], hand[i + 1]) ``check_duo`` allows: the same
    rule, with the Central Duo's number and colours worked out once for the whole hand (it
    runs for every legal-move listing)."""
    target = 10 * (top_left % VALUES) + top_right % VALUES
    one_colour = top_left // VALUES == top_right // VALUES
    plus, minus = side == PLUS, side == MINUS
    playable = []
    for i in range(len(hand) - 1):
        left, right = hand[i], hand[i + 1]
        left_value, right_value = left % VALUES, right % VALUES
        if left_value != right_value:  # not a Happy Mochi: the restrictions apply
            number = 10 * left_value + right_value
            if (plus and number <= target) or (minus and number >= target):
                continue
            if one_colour and left // VALUES != right // VALUES:
                continue
        playable.append(i)
    return playable
