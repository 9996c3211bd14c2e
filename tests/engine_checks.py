"""Checks every per-game engine suite uses."""

from __future__ import annotations

import functools
import json
from typing import Any

import msgspec
import pytest
from google.protobuf import json_format

from services.engine import EngineState, MoveError
from services.runtime.codec import to_dict


def refused(state: Any, seat: int, move: dict, exc: type[MoveError], rule: str | None = None) -> MoveError:
    """``move`` is refused with ``exc`` (naming ``rule``) and the state is left unchanged."""
    before = state.to_dict()
    with pytest.raises(exc) as info:
        state.apply(seat, move)
    assert state.to_dict() == before, "a refused move changed the state"
    if rule is not None:
        assert info.value.rule == rule, info.value
    return info.value


def round_trip(data: dict, message: Any) -> dict:
    """``data`` through the proto ``message`` and back, as the platform converts it."""
    return to_dict(json_format.ParseDict(data, message))


@functools.cache
def msgpack_codec(
    state_class: type[EngineState],
) -> tuple[msgspec.msgpack.Encoder, msgspec.msgpack.Decoder[Any]]:
    """The typed MessagePack encoder and decoder of a game's ``State`` (the server's storage codec)."""
    return msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder(state_class)


def codecs_give_back(state: Any) -> None:
    """``state`` is an ``EngineState`` that its typed MessagePack round trip and its
    ``to_dict``/``from_dict`` round trip (straight and through JSON) both give back equal."""
    state_class = type(state)
    assert isinstance(state, EngineState), f"{state_class.__module__}.State is not an EngineState"
    encoder, decoder = msgpack_codec(state_class)
    back = decoder.decode(encoder.encode(state))
    assert type(back) is state_class and back == state, "the MessagePack round trip lost something"
    plain = state.to_dict()
    assert json.loads(json.dumps(plain)) == plain, "to_dict holds a value JSON changes (a tuple, an int key)"
    assert state_class.from_dict(plain) == state, "from_dict(to_dict()) is another state"
    assert state_class.from_dict(json.loads(json.dumps(plain))) == state, "the JSON of to_dict lost something"
    assert back.to_dict() == plain
