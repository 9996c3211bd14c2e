"""Every game this server knows: short name -> the Python package that holds it.

A game's package holds ``rules.py`` (``GAME``, ``State``: its engine, services/engine.py) and,
optionally, ``bot.py`` (the searching bots' adapter) and ``history-events.zdict`` (its
history's dictionary). Everything else that lists games (the service, the gateway's routes
and settings, nginx, ``make run``, the lobby, the players service's ladders, bots, autoplay,
the benches, the generic tests) reads this catalog, so registering a game is one entry here.

The games shipped are ``SHIPPED``. ``MOGAMES_EXTRA_GAMES`` (comma-separated Python packages)
adds games kept elsewhere, read once at start-up by every process: the tests serve their toy
game (``tests/nim``) this way, and a deployment could serve a game of its own.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator
from types import ModuleType

EXTRA_GAMES_SETTING = "MOGAMES_EXTRA_GAMES"

SHIPPED: dict[str, str] = {
    "happy_mochi": "services.happymochi",
    "mori": "services.mori",
    "more": "services.more",
    "morisi": "services.morisi",
    "momiji": "services.momiji",
}


def _extra_games(setting: str) -> dict[str, str]:
    games = {}
    for package in (part.strip() for part in setting.split(",")):
        if package:
            games[importlib.import_module(f"{package}.rules").GAME.name] = package
    return games


GAME_PACKAGES: dict[str, str] = {**SHIPPED, **_extra_games(os.environ.get(EXTRA_GAMES_SETTING, ""))}


def rules_module(game: str) -> ModuleType:
    """The pure rules engine of ``game`` (``<package>.rules``)."""
    return importlib.import_module(f"{GAME_PACKAGES[game]}.rules")


def move_cap(game: str) -> int:
    """The most moves a match of ``game`` may take before the server ends it (GameInfo.move_cap)."""
    cap: int = rules_module(game).GAME.move_cap
    return cap


@contextlib.contextmanager
def registered(package: str) -> Iterator[str]:
    """``package``'s game in this process's catalog while the block runs (its name yielded):
    what ``MOGAMES_EXTRA_GAMES`` does for a process at start-up, for a test's own process."""
    added = {name: where for name, where in _extra_games(package).items() if name not in GAME_PACKAGES}
    GAME_PACKAGES.update(added)
    try:
        yield next(iter(_extra_games(package)))
    finally:
        for name in added:
            del GAME_PACKAGES[name]
