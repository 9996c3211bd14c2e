"""Every match ends: seeded matches in which the server's own bots play every seat, one level for
all, played to the end by the pure rules engines in one process (no server).

    python -m bench.bench_policy [--games morisi,more] [--matches 1000] [--first-seed 0]
                                 [--level policy|random] [--cap N]

A ``policy`` bot plays the game's timeout policy (``State.timeout_move``, what a timed-out seat
gets too); a ``random`` bot any legal move. Per game and player count it prints a Markdown table
row: matches, how many ended within the cap (the game's ``POLICY_MOVE_CAPS`` entry for
``policy``; for ``random`` the server's own cap, ``GameInfo.move_cap``), the longest and
the mean match in moves, and CPU seconds (``time.process_time``). It exits non-zero if some match
did not end, naming its seeds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass

from bench.markdown import table
from services import catalog
from services.catalog import GAME_PACKAGES, rules_module
from services.runtime.bots import bot_move

# Moves within which every all-policy match of the game ends, at any player count: a few times the
# longest seen over 1,000 seeds per player count, so a policy that loops shows at once. Random
# play ends by chance, far later: it is held to the server's cap (GameInfo.move_cap).
POLICY_MOVE_CAPS = {"happy_mochi": 2_000, "mori": 1_000, "more": 10_000, "morisi": 1_000, "momiji": 1_000}


def move_cap(game: str, level: str) -> int:
    return POLICY_MOVE_CAPS[game] if level == "policy" else catalog.move_cap(game)


def play_to_the_end(game: str, players: int, seed: int, level: str, cap: int) -> int | None:
    """The moves of the seeded match (default options) in which a ``level`` bot plays every seat,
    or None if it is still going after ``cap`` moves. Seats deciding at the same time move in
    seat order."""
    state = rules_module(game).State.new(players, seed, {})
    moves = 0
    while not state.is_over():
        if moves == cap:
            return None
        seat = state.active_seats()[0]
        state.apply(seat, bot_move(state, seat, level, seed, moves))
        moves += 1
    return moves


@dataclass
class Figures:
    game: str
    players: int
    matches: int
    ended: int
    longest: int
    mean: float
    cpu_s: float
    stuck: list[int]


def measure(game: str, players: int, seeds: range, level: str, cap: int) -> Figures:
    start = time.process_time()
    lengths: list[int] = []
    stuck: list[int] = []
    for seed in seeds:
        moves = play_to_the_end(game, players, seed, level, cap)
        if moves is None:
            stuck.append(seed)
        else:
            lengths.append(moves)
    return Figures(
        game=game,
        players=players,
        matches=len(seeds),
        ended=len(lengths),
        longest=max(lengths, default=0),
        mean=statistics.fmean(lengths) if lengths else 0.0,
        cpu_s=time.process_time() - start,
        stuck=stuck,
    )


HEADER = ("game", "players", "level", "matches", "ended", "cap", "longest", "mean moves", "CPU s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", default=",".join(GAME_PACKAGES), help="comma-separated game names")
    parser.add_argument("--matches", type=int, default=1000, help="seeded matches per player count")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--level", choices=("policy", "random"), default="policy")
    parser.add_argument("--cap", type=int, help="moves per match (default: the game's cap)")
    args = parser.parse_args()
    games = [g for g in args.games.split(",") if g]
    unknown = [g for g in games if g not in GAME_PACKAGES]
    if unknown:
        parser.error(f"unknown game {unknown[0]!r}; known: {', '.join(GAME_PACKAGES)}")
    seeds = range(args.first_seed, args.first_seed + args.matches)
    print(table(HEADER, [], text_columns=3), flush=True)
    total = 0.0
    stuck: list[str] = []
    for game in games:
        cap = args.cap or move_cap(game, args.level)
        info = rules_module(game).GAME
        for players in range(info.min_players, info.max_players + 1):
            f = measure(game, players, seeds, args.level, cap)
            total += f.cpu_s
            row = [game, str(players), args.level, f"{f.matches:,}", f"{f.ended:,}", f"{cap:,}"]
            row += [f"{f.longest:,}", f"{f.mean:,.0f}", f"{f.cpu_s:.1f}"]
            print(table(HEADER, [row], text_columns=3).splitlines()[-1], flush=True)
            if f.stuck:
                stuck.append(f"{game} {players} players: seeds {f.stuck[:20]} ({len(f.stuck)})")
    print(f"\n{total:.1f} CPU s in all")
    if stuck:
        sys.exit("still going after the cap:\n" + "\n".join(stuck))


if __name__ == "__main__":
    main()
