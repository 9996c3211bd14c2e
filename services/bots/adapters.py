"""The registry of bot adapters by game name: ``<package>/bot.py`` where it exists."""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

from services.catalog import GAME_PACKAGES

REQUIRED = ("determinize", "playout_move")


@cache
def adapter(game: str) -> ModuleType | None:
    """The adapter module of ``game``, or None when the game has none (yet)."""
    package = GAME_PACKAGES[game]
    try:
        module = importlib.import_module(f"{package}.bot")
    except ModuleNotFoundError as error:
        if error.name != f"{package}.bot":
            raise
        return None
    missing = [name for name in REQUIRED if not hasattr(module, name)]
    if missing:
        raise TypeError(f"{package}.bot lacks {', '.join(missing)}")
    return module


def games_with_adapters() -> list[str]:
    """The games whose seats can be played by a searching bot."""
    return [game for game in GAME_PACKAGES if adapter(game) is not None]
