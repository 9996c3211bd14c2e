"""Checks every per-game engine suite uses."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from services.engine import MoveError
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
