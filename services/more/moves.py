"""More: shape checks of moves and match options (pure helpers of ``services.more.rules``)."""

from __future__ import annotations

from typing import Any

from services.engine import BadOptions, JsonDict, MalformedMove, split_move
from services.more.cards import DECK_SIZE

MAX_BID = 3
MAX_ROUNDS = 1000

MOVE_FIELDS: dict[str, dict[str, Any]] = {
    "bid": {"amount": 0},
    "draw": {},
    "take_pile": {},
    "lay_meld": {"cards": []},
    "add_to_meld": {"meld": 0, "card": 0, "low_end": False},
    "take_back": {},
    "discard": {"card": 0},
}


def check_options(options: JsonDict | None) -> JsonDict:
    options = dict(options or {})
    unknown = set(options) - {"bid_for_solo", "max_rounds"}
    if unknown:
        raise BadOptions("options", f"unknown option(s): {', '.join(sorted(unknown))}")
    bid = options.get("bid_for_solo", False)
    rounds = options.get("max_rounds", 0)
    if not isinstance(bid, bool):
        raise BadOptions("options.bid_for_solo", "bid_for_solo must be true or false")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 0 <= rounds <= MAX_ROUNDS:
        raise BadOptions("options.max_rounds", f"max_rounds must be a whole number from 0 to {MAX_ROUNDS}")
    return {"bid_for_solo": bid, "max_rounds": rounds}


def parse_move(move: Any) -> tuple[str, JsonDict]:
    """Shape check of a move dict; returns (kind, body with every field)."""
    if type(move) is dict and len(move) == 1:  # well-formed moves, checked at once
        parsed = _parse_plain(*next(iter(move.items())))
        if parsed is not None:
            return parsed
    kind, body = split_move(move, MOVE_FIELDS)
    out: JsonDict = {}
    for key, default in MOVE_FIELDS[kind].items():
        value = body.get(key, default)
        where = f"move.{kind}.{key}"
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise MalformedMove(where, "must be true or false")
        elif isinstance(default, list):
            if not isinstance(value, list):
                raise MalformedMove(where, "must be a list of card ids")
            value = list(value)
            for card in value:
                _check_card(card, where)
            if len(set(value)) != len(value):
                raise MalformedMove(where, "a card is listed twice")
        elif key == "card":
            _check_card(value, where)
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise MalformedMove(where, "must be a non-negative whole number")
        if key == "amount" and value > MAX_BID:
            raise MalformedMove(where, f"a bid is 0 to {MAX_BID}")
        out[key] = value
    return kind, out


def _parse_plain(kind: Any, body: Any) -> tuple[str, JsonDict] | None:
    """(kind, body) of a move that passes every check of ``parse_move``, None for anything else
    (``parse_move`` then finds what is wrong)."""
    fields = MOVE_FIELDS.get(kind) if type(kind) is str else None
    if fields is None or type(body) is not dict or not body.keys() <= fields.keys():
        return None
    if kind == "discard":
        card = body.get("card", 0)
        return (kind, {"card": card}) if type(card) is int and 0 <= card < DECK_SIZE else None
    if kind == "add_to_meld":
        index, card, low_end = body.get("meld", 0), body.get("card", 0), body.get("low_end", False)
        if type(index) is int and index >= 0 and type(card) is int and 0 <= card < DECK_SIZE:
            return (
                (kind, {"meld": index, "card": card, "low_end": low_end}) if type(low_end) is bool else None
            )
        return None
    if kind == "lay_meld":
        cards = body.get("cards", [])
        if type(cards) is list and all(type(c) is int and 0 <= c < DECK_SIZE for c in cards):
            return (kind, {"cards": list(cards)}) if len(set(cards)) == len(cards) else None
        return None
    if kind == "bid":
        amount = body.get("amount", 0)
        return (kind, {"amount": amount}) if type(amount) is int and 0 <= amount <= MAX_BID else None
    return (kind, {}) if not fields else None


def _check_card(card: Any, where: str) -> None:
    if isinstance(card, bool) or not isinstance(card, int) or not 0 <= card < DECK_SIZE:
        raise MalformedMove(where, f"card ids are 0 to {DECK_SIZE - 1}")
