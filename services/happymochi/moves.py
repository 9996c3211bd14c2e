"""Happy Mochi move shapes: the Move oneof's kinds and fields, checked before anything else."""

from __future__ import annotations

from typing import Any

from services.engine import MalformedMove, split_move

DECK = "DRAW_SOURCE_DECK"
LEFT = "DRAW_SOURCE_LEFT"
RIGHT = "DRAW_SOURCE_RIGHT"
SOURCES = (DECK, LEFT, RIGHT)
STACK_OF = {LEFT: "STACK_LEFT", RIGHT: "STACK_RIGHT"}

# Fields of every move kind: name -> "uint32" or the tuple of allowed enum names.
MOVE_FIELDS: dict[str, dict[str, Any]] = {
    "draw": {"source": SOURCES},
    "place_card": {"position": "uint32"},
    "play_duo": {"position": "uint32"},
    "name_drawer": {"seat": "uint32"},
    "flip_value": {},
    "pass_turn": {},
}
ENUM_ZERO = {"source": "DRAW_SOURCE_UNSPECIFIED"}


def parse_move(move: Any) -> tuple[str, dict[str, Any]]:
    """Check a move's shape; returns (kind, handler keyword arguments). Raises MalformedMove."""
    kind, body = split_move(move, MOVE_FIELDS)
    spec = MOVE_FIELDS[kind]
    out: dict[str, Any] = {}
    for name, typ in spec.items():
        field = f"move.{kind}.{name}"
        if typ == "uint32":
            value = body.get(name, 0)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**32:
                raise MalformedMove(field, f"expected an unsigned integer, got {value!r}")
        else:
            value = body.get(name, ENUM_ZERO[name])
            if value not in typ:
                raise MalformedMove(field, f"expected one of {list(typ)}, got {value!r}")
        out["drawer" if (kind, name) == ("name_drawer", "seat") else name] = value
    return kind, out
