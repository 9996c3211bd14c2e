"""Every match ends: seeded matches in which the server's ``policy`` bot plays every seat (the
game's ``State.timeout_move``, what a timed-out seat gets too) end within the game's move cap, for
every game and player count. Pure engines, no server.

``make bench-policy`` plays seeds 0-999 of every game and player count and prints the figures. The
suite plays the same 1,000 seeds of every game but More, whose matches are thousands of moves long:
seeds 0-249 of it. Seeds go in blocks of a second or two of CPU, so xdist spreads them.
"""

from __future__ import annotations

import pytest

from bench.bench_policy import MOVE_CAPS, play_to_the_end
from services.catalog import GAME_PACKAGES, rules_module

MATCHES = {"more": 250}  # the suite's seeds per player count where not 1,000
BLOCK = {"more": 25}  # seeds per test where not 125


def blocks() -> list[tuple[str, int, range]]:
    out = []
    for game in sorted(GAME_PACKAGES):
        info = rules_module(game).GAME
        matches, block = MATCHES.get(game, 1000), BLOCK.get(game, 125)
        for players in range(info.min_players, info.max_players + 1):
            out += [(game, players, range(first, first + block)) for first in range(0, matches, block)]
    return out


def block_id(case: tuple[str, int, range]) -> str:
    game, players, seeds = case
    return f"{game}-{players}p-seeds-{seeds.start}-{seeds.stop - 1}"


@pytest.mark.parametrize("case", blocks(), ids=block_id)
def test_all_policy_matches_end_within_the_cap(case):
    game, players, seeds = case
    cap = MOVE_CAPS[game]
    stuck = [seed for seed in seeds if play_to_the_end(game, players, seed, "policy", cap) is None]
    assert not stuck, f"{game}, {players} players: seeds {stuck} still going after {cap} moves"


def test_the_suite_covers_every_game_and_player_count():
    covered = {(game, players) for game, players, _ in blocks()}
    for game in GAME_PACKAGES:
        info = rules_module(game).GAME
        assert {(game, p) for p in range(info.min_players, info.max_players + 1)} <= covered


def test_a_match_still_going_at_the_cap_is_reported():
    # seed 2's two-player Morisi, all policy, is 58 moves long
    assert play_to_the_end("morisi", 2, 2, "policy", 1000) == 58
    assert play_to_the_end("morisi", 2, 2, "policy", 58) == 58
    assert play_to_the_end("morisi", 2, 2, "policy", 57) is None
