"""More: shape checks of moves and match options (pure helpers of ``services.more.rules``)."""

from __future__ import annotations

from collections.abc import Callable
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
        for kind, body in move.items():
            if type(body) is dict and type(kind) is str:
                plain = _PLAIN.get(kind)
                if plain is not None:
                    parsed = plain(body)
                    if parsed is not None:
                        return kind, parsed
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


# The bodies of well-formed moves, checked at once: the body with every field, or None for
# anything else (``parse_move`` then finds what is wrong). Each field is its kind's only one or
# missing, of the exact type and in range.


def _plain_discard(body: JsonDict) -> JsonDict | None:
    if len(body) != ("card" in body):
        return None
    card = body.get("card", 0)
    return {"card": card} if type(card) is int and 0 <= card < DECK_SIZE else None


def _plain_add_to_meld(body: JsonDict) -> JsonDict | None:
    if not body.keys() <= _ADD_FIELDS:
        return None
    index, card, low_end = body.get("meld", 0), body.get("card", 0), body.get("low_end", False)
    if type(index) is int and index >= 0 and type(card) is int and 0 <= card < DECK_SIZE:
        return {"meld": index, "card": card, "low_end": low_end} if type(low_end) is bool else None
    return None


def _plain_lay_meld(body: JsonDict) -> JsonDict | None:
    if len(body) != ("cards" in body):
        return None
    cards = body.get("cards", [])
    if type(cards) is not list:
        return None
    for c in cards:  # a plain loop: all() over a generator costs a call per card
        if type(c) is not int or not 0 <= c < DECK_SIZE:
            return None
    return {"cards": list(cards)} if len(set(cards)) == len(cards) else None


def _plain_bid(body: JsonDict) -> JsonDict | None:
    if len(body) != ("amount" in body):
        return None
    amount = body.get("amount", 0)
    return {"amount": amount} if type(amount) is int and 0 <= amount <= MAX_BID else None


def _plain_empty(body: JsonDict) -> JsonDict | None:
    return None if body else {}


_ADD_FIELDS = frozenset(MOVE_FIELDS["add_to_meld"])
_PLAIN: dict[str, Callable[[JsonDict], JsonDict | None]] = {
    "bid": _plain_bid,
    "draw": _plain_empty,
    "take_pile": _plain_empty,
    "lay_meld": _plain_lay_meld,
    "add_to_meld": _plain_add_to_meld,
    "take_back": _plain_empty,
    "discard": _plain_discard,
}


def _check_card(card: Any, where: str) -> None:
    if isinstance(card, bool) or not isinstance(card, int) or not 0 <= card < DECK_SIZE:
        raise MalformedMove(where, f"card ids are 0 to {DECK_SIZE - 1}")
