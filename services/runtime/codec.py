"""Translation between a game's protobuf messages and the engine's plain dicts.

Engines speak dicts shaped like their proto messages (proto field names, every field
present), so one generic codec serves every game.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from services.engine import GameInfo
from services.runtime.by_identity import ByIdentity
from services.runtime.store import StoredEvent

M = TypeVar("M", bound=Message)

# Event messages a codec keeps made (a commit's events go to every watcher and the answer).
EVENTS_KEPT = 4096


def to_dict(message: Message) -> dict[str, Any]:
    """``message`` as ``json_format.MessageToDict`` gives it (proto field names, every field
    without presence present), converted from a plan made once per message type: a
    client's move is converted on every SubmitMove, and json_format's generic walk was a
    measurable part of one. A type the plan does not cover goes through json_format."""
    plan = _plans.get(message.DESCRIPTOR)
    if plan is None:
        plan = _plans[message.DESCRIPTOR] = _plan(message.DESCRIPTOR)
    if plan is _FALLBACK:
        return _json_format_dict(message)
    defaults, converters = plan
    # Fields without presence appear at their default unless set (a list: a new one).
    body = {name: [] if default is _LIST else default for name, default in defaults}
    for field, value in message.ListFields():
        body[field.name] = converters[field.number](value)
    return body


def _json_format_dict(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


# A message type's plan: (name, default) of each field without presence, and each field's
# converter by number (json_format's form of its value, a list or message whole).
_Plan = tuple[list[tuple[str, Any]], dict[int, Callable[[Any], Any]]]
_FALLBACK: _Plan = ([], {})
_LIST = object()
_plans: dict[Any, _Plan] = {}  # by message Descriptor (upb's or the pure one)
_INT64 = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED64,
}


def _plan(descriptor: Any) -> _Plan:
    if descriptor.full_name.startswith("google.protobuf."):
        return _FALLBACK  # well-known types have JSON forms of their own
    defaults: list[tuple[str, Any]] = []
    converters: dict[int, Callable[[Any], Any]] = {}
    for field in descriptor.fields:
        convert = _converter(field)
        if convert is None:
            return _FALLBACK
        converters[field.number] = convert
        if field.is_repeated:
            defaults.append((field.name, _LIST))
        elif not field.has_presence:
            defaults.append((field.name, convert(field.default_value)))
    return defaults, converters


def _converter(field: FieldDescriptor) -> Callable[[Any], Any] | None:
    """How json_format writes a value of ``field`` (a list whole, when it is one); None for
    what it writes in ways not copied here (floats, bytes, maps)."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        return None
    if field.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_BYTES):
        return None
    one: Callable[[Any], Any]
    if field.message_type is not None:
        one = to_dict
    elif field.enum_type is not None:
        names = {value.number: value.name for value in field.enum_type.values}
        one = lambda number: names.get(number, number)  # noqa: E731 - an unknown value stays a number
    elif field.type in _INT64:
        one = str
    elif field.is_repeated:
        return list
    else:
        return _same
    if field.is_repeated:
        return lambda values: [one(value) for value in values]
    return one


def _same(value: Any) -> Any:
    return value


def from_dict(cls: type[M], body: dict[str, Any]) -> M:
    """``body`` as a ``cls`` message: through the message's own constructor (nested dicts and
    lists, enum names: done in C, ~15x faster than ``json_format``); a body the constructor
    does not take (a JSON-only spelling) goes through ``json_format`` as before."""
    try:
        return cls(**body)
    except (TypeError, ValueError):
        return json_format.ParseDict(body, cls())


def generated_modules(game: GameInfo) -> tuple[ModuleType, ModuleType]:
    """The game's generated ``_pb2`` and ``_pb2_grpc`` modules (``make gen``)."""
    base = f"mogames.{game.package}.v1.{game.package}"
    return importlib.import_module(f"{base}_pb2"), importlib.import_module(f"{base}_pb2_grpc")


class Codec:
    def __init__(self, game: GameInfo) -> None:
        self.game = game
        self.pb2, self.pb2_grpc = generated_modules(game)
        self._events: ByIdentity[Message] = ByIdentity(EVENTS_KEPT)

    def options(self, request: Message) -> dict[str, Any]:
        return to_dict(request.options)  # type: ignore[attr-defined]

    def move_in(self, move: Message) -> dict[str, Any] | None:
        """The engine form of a client's move; None when no move kind is set."""
        if move.WhichOneof("kind") is None:
            return None
        return to_dict(move)

    def move_out(self, move: dict[str, Any]) -> Message:
        return from_dict(self.pb2.Move, move)

    def view(self, body: dict[str, Any], version: int, seat: int | None, active: list[int]) -> Message:
        """A seat's view, or a spectator's (``seat`` None: the seat field stays 0)."""
        message = from_dict(self.pb2.View, body)
        message.version = version
        message.seat = seat or 0
        message.active_seats.extend(active)
        return message

    def event(self, event: StoredEvent) -> Message:
        """The event as sent (never to be changed: it is shared). Made once per stored event
        however many watchers and answers carry it."""
        message = self._events.get(event)
        if message is None:
            message = from_dict(self.pb2.MatchEvent, event.body)
            message.version = event.version
            message.seq = event.seq
            self._events.put(event, message)
        return message
