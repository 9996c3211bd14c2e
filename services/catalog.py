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

# The most moves a match of each game may take before the server ends it ABANDONED (reason
# "move_cap"): a match that still loops (bots moving back and forth) ends, and no real one
# comes near it. Several times the longest all-random-bot match seen (make bench-policy
# --level random; all-policy matches end within bench/bench_policy.py's far lower caps).
# MOGAMES_MAX_MOVES overrides it for a service.
MOVE_CAPS: dict[str, int] = {
    "happy_mochi": 60_000,
    "mori": 3_000,
    "more": 60_000,
    "morisi": 20_000,
    "momiji": 3_000,
}


def rules_module(game: str) -> ModuleType:
    """The pure rules engine of ``game`` (``services.<package>.rules``)."""
    return importlib.import_module(f"services.{GAME_PACKAGES[game]}.rules")
