"""Every match ends: seeded matches in which the server's ``policy`` bot plays every seat (the
game's ``State.timeout_move``, what a timed-out seat gets too) end within the game's move cap, for
every game and player count; so do a few with ``random`` bots, within the server's cap. Pure
engines, no server.

``make bench-policy`` plays seeds 0-999 of every game and player count and prints the figures. The
suite plays the same 1,000 seeds of every game but More, whose matches are thousands of moves long:
seeds 0-249 of it. Seeds go in blocks of a second or two of CPU, so xdist spreads them.
"""

from __future__ import annotations

import pytest

from bench.bench_policy import move_cap, play_to_the_end
from services.catalog import GAME_PACKAGES, rules_module

MATCHES = {"more": 250}  # the suite's seeds per player count where not 1,000
BLOCK = {"more": 25}  # seeds per test where not 125
RANDOM_MATCHES = 10  # random matches run to thousands of moves: a few seeds per player count


def tables() -> list[tuple[str, int]]:
    """Every game at every player count."""
    out = []
    for game in sorted(GAME_PACKAGES):
        info = rules_module(game).GAME
        out += [(game, players) for players in range(info.min_players, info.max_players + 1)]
    return out


def blocks() -> list[tuple[str, int, range]]:
    out = []
    for game, players in tables():
        matches, block = MATCHES.get(game, 1000), BLOCK.get(game, 125)
        out += [(game, players, range(first, first + block)) for first in range(0, matches, block)]
    return out


def block_id(case: tuple[str, int, range]) -> str:
    game, players, seeds = case
    return f"{game}-{players}p-seeds-{seeds.start}-{seeds.stop - 1}"


def table_id(case: tuple[str, int]) -> str:
    return f"{case[0]}-{case[1]}p"


def still_going(game: str, players: int, seeds: range, level: str) -> list[int]:
    cap = move_cap(game, level)
    return [seed for seed in seeds if play_to_the_end(game, players, seed, level, cap) is None]


@pytest.mark.parametrize("case", blocks(), ids=block_id)
def test_all_policy_matches_end_within_the_cap(case):
    game, players, seeds = case
    stuck = still_going(game, players, seeds, "policy")
    assert not stuck, f"{game}, {players} players: seeds {stuck} still going after {move_cap(game, 'policy')}"


@pytest.mark.parametrize("case", tables(), ids=table_id)
def test_all_random_matches_end_within_the_server_cap(case):
    game, players = case
    stuck = still_going(game, players, range(RANDOM_MATCHES), "random")
    assert not stuck, f"{game}, {players} players: seeds {stuck} still going after {move_cap(game, 'random')}"


def test_the_suite_covers_every_game_and_player_count():
    assert {(game, players) for game, players, _ in blocks()} == set(tables())
    assert {game for game, _ in tables()} == set(GAME_PACKAGES)
    assert ("happy_mochi", 6) in tables() and ("morisi", 3) in tables()


def test_a_match_still_going_at_the_cap_is_reported():
    # seed 2's two-player Morisi, all policy, is 58 moves long
    assert play_to_the_end("morisi", 2, 2, "policy", 1000) == 58
    assert play_to_the_end("morisi", 2, 2, "policy", 58) == 58
    assert play_to_the_end("morisi", 2, 2, "policy", 57) is None
