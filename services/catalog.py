"""Every game this server knows: short name -> Python package under ``services``."""

from __future__ import annotations

import importlib
from types import ModuleType

GAME_PACKAGES: dict[str, str] = {
    "happy_mochi": "happymochi",
    "mori": "mori",
    "more": "more",
    "morisi": "morisi",
    "momiji": "momiji",
}


def rules_module(game: str) -> ModuleType:
    """The pure rules engine of ``game`` (``services.<package>.rules``)."""
    return importlib.import_module(f"services.{GAME_PACKAGES[game]}.rules")
