"""How well the server bots play, what a decision costs, and what they cost human players.

    python -m bench.bench_bots [--games mori,happy_mochi] [--matches 200] [--levels medium,hard]
                               [--all-seats] [--jobs 2] [--results FILE] [--report] [--no-latency]
                               [--latency-game happy_mochi] [--bot-matches 100]

Part 1, the engines in worker processes (``--jobs``, by default the cores the machine's
load leaves free), no servers: per game, level and opponent level
(``--opponents``, by default ``random`` and ``policy``; ``playout`` is the adapter's playout
policy without a search, what the search adds to it), ``--matches`` seeded matches in
which one seat (rotating) is the searching bot deciding with ``services.bots.decide`` from
its view and events only, every other seat the opponent level. Two players where the game
allows it, else its fewest (Mori: 3, against two opponents). ``--all-seats`` plays every seed
from every seat instead (``--matches`` seeds, that many matches per seat), so a seat's
advantage the seed hands out (More's Solo) falls to the searching bot exactly its share of
the time, and equal strength scores exactly the chance share. It prints the searching seat's
win rate (a tie counts as a share) with its 95 % Wilson interval, the target (two players:
90 % against random; more: 2.5 times the chance share; 60 % against policy) with "met" when
the whole interval is above it, "missed" when below, "open" otherwise, and the mean
and 99th percentile of the CPU time per decision (``time.process_time`` of the deciding
process, the search's budget), per pairing and per game and level. Every match's result is
appended to ``--results`` (``artifacts/bench-bots.jsonl``) with a digest of the bot code; a
later run with the same code plays only the matches missing there, so the 200 matches per
pairing may be played over several runs; ``--report`` prints what the file holds.

Part 2, a running system (Redis, one replica of ``--latency-game``, the gateway): the p50 and
p99 of a human's moves (PlayMatch, a two-seat match the bench plays itself) while the
replica is otherwise idle, then while ``--bot-matches`` matches of server bots only
(``--bot-level``) are played on the same replica, in the same run; the bot moves committed
per second, and per phase the CPU share of the replica, its bot workers, the gateway, Redis
and the bench's client, and how long the human's path (those but the workers) waited for a
CPU, in ms per second (from ``/proc``): what the workers take from the human moves shows
there. ``MOGAMES_BOT_WORKER_PRIORITY`` in the environment reaches the replica. Part 2 runs
twice, each time on a system of its own: the workers sharing the CPUs, then (on two CPUs or
more) on the last CPU alone (``MOGAMES_BOT_OWN_CPUS=1``), the gateway, Redis and this client
kept off it as well.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.bots_latency import human_phases, placements
from bench.environment import use_bench_environment
from bench.load import percentile
from bench.markdown import table
from services.bots.adapters import adapter, games_with_adapters
from services.bots.decide import decide
from services.bots.levels import SEARCH_LEVELS
from services.catalog import rules_module
from services.engine import JsonDict
from services.runtime.bots import bot_move, timeout_move

# Options that keep a match short enough to play hundreds of (More's goal is far otherwise).
GAME_OPTIONS: dict[str, dict[str, Any]] = {"more": {"max_rounds": 1}}
MAX_STEPS = 20_000
PLAYOUT = "playout"  # an opponent playing the adapter's playout policy, no search
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Pairing:
    game: str
    players: int
    level: str
    opponent: str
    score: float = 0.0
    matches: int = 0
    decisions_s: list[float] = field(default_factory=list)


Match = tuple[str, int, str, str, int, int]
"""game, players, the searching seat's level, the other seats' level, the seed's number, the searching seat"""


def play_one(
    game: str, players: int, level: str, opponent: str, n: int, hero: int
) -> tuple[float, list[float]]:
    """Match ``n`` with ``hero`` the searching seat: its result (1 win, a share for a tie, 0 loss)
    and its decisions' CPU seconds. A searching opponent decides from its own seat's information."""
    rules = rules_module(game)
    state = rules.State.new(players, 10_000 + n, GAME_OPTIONS.get(game, {}))
    opening = state.opening_events()
    histories = [[e.body for e in opening if e.visible_to(seat)] for seat in range(players)]
    spent: list[float] = []
    for step in range(MAX_STEPS):
        if state.is_over():
            break
        seat = state.active_seats()[0]
        level_of_seat = level if seat == hero else opponent
        started = time.process_time()
        seed = n * 100_003 + step
        if level_of_seat in SEARCH_LEVELS:
            move = decide(game, state.view(seat), seat, level_of_seat, seed=seed, history=histories[seat])
        elif level_of_seat == "policy":
            move = timeout_move(state, seat)
        elif level_of_seat == PLAYOUT:
            move = playout_policy_move(game, state.view(seat), seat, seed, histories[seat])
        else:
            move = bot_move(state, seat, level_of_seat, n, step)
        if seat == hero:
            spent.append(time.process_time() - started)
        for event in state.apply(seat, move):
            for other in range(players):
                if event.visible_to(other):
                    histories[other].append(event.body)
    if not state.is_over():
        raise RuntimeError(f"{game} match {n} did not end in {MAX_STEPS} moves")
    winners = state.winners()
    return (1.0 / len(winners) if hero in winners else 0.0), spent


def playout_policy_move(game: str, view: JsonDict, seat: int, seed: int, history: list[JsonDict]) -> JsonDict:
    """The move the adapter's playout policy makes from one sample of the seat's information:
    the searching levels without their search (a baseline, not a level players are offered)."""
    module = adapter(game)
    if module is None:
        raise LookupError(f"{game} has no bot adapter, so no playout policy")
    sample = module.determinize(view, seat, random.Random(seed), history=history)
    move: JsonDict = module.playout_move(sample, seat, random.Random(seed))
    return move


def _job(match: Match) -> tuple[Match, float, list[float]]:
    score, spent = play_one(*match)
    return match, score, spent


DECIDING_CODE = ("services/bots/decide.py", "services/bots/levels.py", "services/bots/search.py")


def deciding_files(game: str) -> list[Path]:
    """The code ``game``'s bots decide with: the search, the levels, and its adapter's package
    (the adapter, what it samples and plays with, the rules)."""
    files = [ROOT / name for name in DECIDING_CODE]
    module = adapter(game)
    if module is not None and module.__file__:
        files += Path(module.__file__).parent.glob("*.py")
    return sorted(files)


def bots_version(game: str) -> str:
    """A digest of ``deciding_files``: results kept in a results file count only for the code
    that played them."""
    digest = hashlib.sha256()
    for path in deciding_files(game):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def target(players: int, level: str, opponent: str) -> float | None:
    """The bar for the hard level (None: no bar, e.g. hard against medium, or medium, whose
    bar is to sit between its opponent and hard)."""
    if level != "hard":
        return None
    if opponent == "policy":
        return 0.6
    if opponent == "random":
        return 0.9 if players == 2 else min(1.0, 2.5 / players)
    return None


def verdict(low: float, high: float, goal: float) -> str:
    """Whether a 95 % interval shows a target met, missed, or neither yet."""
    if low >= goal:
        return "met"
    return "missed" if high < goal else "open"


def default_jobs() -> int:
    """Processes for the matches: the cores the machine's load leaves free, at least one."""
    cores = os.cpu_count() or 1
    return max(1, min(cores, round(cores - os.getloadavg()[0])))


class Results:
    """Match results as JSON lines, one per match: a run adds to the file and skips the
    matches it already holds for the same bot code, so 200 matches per pairing can be played
    across several runs (or machines, files concatenated)."""

    def __init__(self, path: Path | None, games: list[str]) -> None:
        self.path = path
        self.versions = {game: bots_version(game) for game in games}
        self.held: dict[Match, tuple[float, list[float]]] = {}
        self.other_code = 0  # rows of these games played by other bot code: not counted
        if path is not None and path.exists():
            for line in path.read_text().splitlines(keepends=True):
                if not line.endswith("\n"):
                    break  # a row another run is still writing
                row = json.loads(line)
                if row["version"] == self.versions.get(row["game"]):
                    # a row without a seat is the rotation's: match n from seat n mod players
                    seat = row.get("seat", row["n"] % row["players"])
                    key = (row["game"], row["players"], row["level"], row["opponent"], row["n"], seat)
                    self.held[key] = (row["score"], row["decisions_s"])
                elif row["game"] in self.versions:
                    self.other_code += 1

    def add(self, key: Match, score: float, spent: list[float]) -> None:
        self.held[key] = (score, spent)
        if self.path is not None:
            game, players, level, opponent, n, seat = key
            row = {"version": self.versions[game], "game": game, "players": players, "level": level}
            row |= {"opponent": opponent, "n": n, "seat": seat, "score": score}
            row |= {"decisions_s": [round(s, 5) for s in spent]}
            with self.path.open("a") as out:
                out.write(json.dumps(row) + "\n")


def win_rates(args: argparse.Namespace) -> list[Pairing]:
    pairings: dict[tuple[str, int, str, str], Pairing] = {}
    for game in args.games:
        players = max(2, rules_module(game).GAME.min_players)
        for level in args.levels:
            for opponent in args.opponents:
                if opponent != level:
                    pairings[(game, players, level, opponent)] = Pairing(game, players, level, opponent)
    results = Results(args.results, args.games)
    # Match by match across the pairings, so a run stopped early leaves every pairing its share.
    wanted = [
        (*key, n, seat)
        for n in range(args.matches)
        for key in pairings
        for seat in (range(key[1]) if args.all_seats else (n % key[1],))
    ]
    jobs = [job for job in wanted if job not in results.held]
    print(f"  {len(wanted) - len(jobs)} matches already in {args.results}; {len(jobs)} to play", flush=True)
    if results.other_code:
        print(f"  {results.other_code} matches there were played by other bot code: not counted", flush=True)
    if jobs and not args.report:
        started = time.monotonic()
        context = multiprocessing.get_context("spawn")
        with context.Pool(args.jobs, initializer=os.nice, initargs=(args.nice,)) as pool:
            for done, (key, score, spent) in enumerate(pool.imap_unordered(_job, jobs, chunksize=1), 1):
                results.add(key, score, spent)
                if done % max(1, len(jobs) // 20) == 0:
                    print(f"  {done}/{len(jobs)} matches, {time.monotonic() - started:.0f} s", flush=True)
    tally(pairings, counted(wanted, results.held, args.all_seats), results.held)
    return list(pairings.values())


def counted(wanted: list[Match], held: dict[Match, Any], all_seats: bool) -> list[Match]:
    """The wanted matches a report counts: those held, and under ``--all-seats`` only seeds
    held from every seat, so that equal strength scores exactly the chance share (a seed
    held from its rotation seat alone would weigh that seat's side of the deal)."""
    have = [match for match in wanted if match in held]
    if not all_seats:
        return have
    seats_held: dict[tuple[Any, ...], int] = {}
    for match in have:
        seats_held[match[:5]] = seats_held.get(match[:5], 0) + 1
    return [match for match in have if seats_held[match[:5]] == match[1]]


def tally(
    pairings: dict[tuple[str, int, str, str], Pairing], matches: list[Match], held: dict[Match, Any]
) -> None:
    for match in matches:
        score, spent = held[match]
        pairing = pairings[match[:4]]
        pairing.score += score
        pairing.matches += 1
        pairing.decisions_s += spent


def print_win_rates(pairings: list[Pairing]) -> None:
    rows = []
    for p in pairings:
        low, high = wilson(p.score, p.matches)
        rate = p.score / max(p.matches, 1)
        goal = target(p.players, p.level, p.opponent)
        rows.append(
            [
                f"{p.game} ({p.players}p)",
                p.level,
                p.opponent,
                str(p.matches),
                f"{rate:.1%}",
                f"{low:.1%}–{high:.1%}",
                f"{rate * p.players:.2f}",
                "" if goal is None else f"{goal:.0%} {verdict(low, high, goal)}",
                f"{1000 * sum(p.decisions_s) / max(len(p.decisions_s), 1):.0f}",
                f"{1000 * percentile(p.decisions_s, 0.99):.0f}",
            ]
        )
    header = ["game", "level", "against", "matches", "wins", "95 % interval", "× chance", "target"]
    print(table([*header, "mean ms", "p99 ms"], rows, text_columns=3))
    print_medium_between(pairings)
    print_decision_times(pairings)


def print_medium_between(pairings: list[Pairing]) -> None:
    """Whether medium sits between its opponent's chance share and hard's rate."""
    rates = {(p.game, p.level, p.opponent): p.score / p.matches for p in pairings if p.matches}
    for (game, level, opponent), rate in rates.items():
        hard = rates.get((game, "hard", opponent))
        if level == "medium" and hard is not None:
            players = next(p.players for p in pairings if p.game == game)
            between = 1 / players <= rate <= hard
            print(
                f"  {game} against {opponent}: medium {rate:.1%}, hard {hard:.1%}: medium "
                f"{'sits' if between else 'does not sit'} between chance ({1 / players:.0%}) and hard"
            )


def print_decision_times(pairings: list[Pairing]) -> None:
    """CPU per decision of each game's searching levels, over all its pairings."""
    spent: dict[tuple[str, str], list[float]] = {}
    for p in pairings:
        spent.setdefault((p.game, p.level), []).extend(p.decisions_s)
    rows = [
        [
            game,
            level,
            str(len(values)),
            f"{1000 * sum(values) / max(len(values), 1):.0f}",
            f"{1000 * percentile(values, 0.5):.0f}",
            f"{1000 * percentile(values, 0.99):.0f}",
            f"{1000 * max(values, default=float('nan')):.0f}",
        ]
        for (game, level), values in spent.items()
    ]
    header = ["game", "level", "decisions", "mean ms", "p50 ms", "p99 ms", "max ms"]
    print(table(header, rows, text_columns=2))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", default="all", help="games with a bot adapter: all or a,b")
    parser.add_argument("--levels", default="medium,hard", help="the searching seat's levels")
    parser.add_argument(
        "--opponents",
        default="random,policy",
        help="the other seats' levels (medium and hard search too; playout: the adapter's playout policy)",
    )
    parser.add_argument("--matches", type=int, default=200, help="matches per game, level and opponent")
    parser.add_argument(
        "--all-seats", action="store_true", help="play every match from every seat (--matches per seat)"
    )
    parser.add_argument(
        "--jobs", type=int, default=0, help="processes playing matches (default: the cores the load leaves)"
    )
    parser.add_argument("--nice", type=int, default=0, help="niceness of those processes")
    parser.add_argument(
        "--results",
        type=Path,
        default=ROOT / "artifacts" / "bench-bots.jsonl",
        help="match results kept across runs; a run plays only the matches missing there",
    )
    parser.add_argument("--report", action="store_true", help="print the results held, play nothing")
    parser.add_argument("--latency-game", default="happy_mochi")
    parser.add_argument("--bot-matches", type=int, default=100)
    parser.add_argument("--bot-level", default="hard")
    parser.add_argument(
        "--latency-duration", type=float, default=15.0, help="seconds of human moves per phase"
    )
    parser.add_argument("--no-latency", action="store_true", help="part 1 only")
    args = parser.parse_args()
    available = games_with_adapters()
    args.games = available if args.games == "all" else args.games.split(",")
    args.levels = args.levels.split(",")
    args.opponents = args.opponents.split(",")
    unknown = set(args.games) - set(available)
    if unknown:
        parser.error(f"no bot adapter for: {', '.join(sorted(unknown))}")
    args.jobs = args.jobs or default_jobs()
    args.results.parent.mkdir(parents=True, exist_ok=True)
    print(f"win rates: {args.matches} matches per pairing on {args.jobs} processes ...", flush=True)
    pairings = win_rates(args)
    print_win_rates(pairings)
    if args.no_latency or args.report:
        return
    use_bench_environment(MOGAMES_WEB_LISTEN="")  # no web port: only native gRPC is measured
    print(
        f"human moves on one {args.latency_game} replica: idle, then next to {args.bot_matches}"
        f" {args.bot_level} bot matches, {args.latency_duration:g} s each ...",
        flush=True,
    )
    rows = [row for placement, own in placements() for row in human_phases(args, placement, own)]
    header = ["replica", "moves", "p50 ms", "p99 ms", "replica CPU", "workers CPU"]
    print(table([*header, "gateway / Redis / client CPU", "path waited ms/s"], rows))


if __name__ == "__main__":
    main()
