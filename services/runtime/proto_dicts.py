"""A game's protobuf messages as the engines' plain dicts, and back.

Engines speak dicts shaped like their proto messages (proto field names, every field
present), so these conversions serve every game.
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

M = TypeVar("M", bound=Message)


def to_dict(message: Message) -> dict[str, Any]:
    """``message`` as ``json_format.MessageToDict`` gives it (proto field names, every field
    without presence present), converted from a plan made once per message type: a
    client's move is converted on every SubmitMove, and json_format's generic walk was a
    measurable part of one. A type the plan does not cover goes through json_format."""
    return _JSON_FORM.convert(message)


def engine_dict(message: Message) -> dict[str, Any]:
    """``message`` as an engine writes it: ``to_dict``'s form, but 64-bit integers as ints
    (JSON writes them as strings; an engine's scores are ints)."""
    return _ENGINE_FORM.convert(message)


def _json_format_dict(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


# A message type's plan: (name, default) of each field without presence, and each field's
# converter by number (the form's value, a list or message whole).
_Plan = tuple[list[tuple[str, Any]], dict[int, Callable[[Any], Any]]]
_FALLBACK: _Plan = ([], {})
_LIST = object()
_INT64 = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED64,
}


class _DictForm:
    """Messages to dicts by plans made once per message type, 64-bit integers written by
    ``int64`` (json_format's ``str``, or ``int``)."""

    def __init__(self, int64: Callable[[int], Any]) -> None:
        self.int64 = int64
        self._plans: dict[Any, _Plan] = {}  # by message Descriptor (upb's or the pure one)

    def convert(self, message: Message) -> dict[str, Any]:
        plan = self._plans.get(message.DESCRIPTOR)
        if plan is None:
            plan = self._plans[message.DESCRIPTOR] = self._plan(message.DESCRIPTOR)
        if plan is _FALLBACK:
            return _json_format_dict(message)
        defaults, converters = plan
        # Fields without presence appear at their default unless set (a list: a new one).
        body = {name: [] if default is _LIST else default for name, default in defaults}
        for field, value in message.ListFields():
            body[field.name] = converters[field.number](value)
        return body

    def _plan(self, descriptor: Any) -> _Plan:
        if descriptor.full_name.startswith("google.protobuf."):
            return _FALLBACK  # well-known types have JSON forms of their own
        defaults: list[tuple[str, Any]] = []
        converters: dict[int, Callable[[Any], Any]] = {}
        for field in descriptor.fields:
            convert = self._converter(field)
            if convert is None:
                return _FALLBACK
            converters[field.number] = convert
            if field.is_repeated:
                defaults.append((field.name, _LIST))
            elif not field.has_presence:
                defaults.append((field.name, convert(field.default_value)))
        return defaults, converters

    def _converter(self, field: FieldDescriptor) -> Callable[[Any], Any] | None:
        """How a value of ``field`` is written (a list whole, when it is one); None for what
        json_format writes in ways not copied here (floats, bytes, maps)."""
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            return None
        if field.type in (
            FieldDescriptor.TYPE_FLOAT,
            FieldDescriptor.TYPE_DOUBLE,
            FieldDescriptor.TYPE_BYTES,
        ):
            return None
        one: Callable[[Any], Any]
        if field.message_type is not None:
            one = self.convert
        elif field.enum_type is not None:
            names = {value.number: value.name for value in field.enum_type.values}
            one = lambda number: names.get(number, number)  # noqa: E731 - an unknown value stays a number
        elif field.type in _INT64:
            one = self.int64
        elif field.is_repeated:
            return list
        else:
            return _same
        if field.is_repeated:
            return lambda values: [one(value) for value in values]
        return one


_JSON_FORM = _DictForm(str)
_ENGINE_FORM = _DictForm(int)


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


def generated_modules(game: GameInfo | str) -> tuple[ModuleType, ModuleType]:
    """The generated ``_pb2`` and ``_pb2_grpc`` modules (``make gen``) of a game (its info
    or its package name)."""
    package = game if isinstance(game, str) else game.package
    base = f"mogames.{package}.v1.{package}"
    return importlib.import_module(f"{base}_pb2"), importlib.import_module(f"{base}_pb2_grpc")


def stub_class(game: GameInfo) -> Any:
    """The generated client stub class of a game's service (``<Service>Stub``)."""
    return getattr(generated_modules(game)[1], f"{game.service}Stub")
