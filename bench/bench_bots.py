"""How well the server bots play, what a decision costs, and what they cost human players.

    python -m bench.bench_bots [--games mori,happy_mochi] [--matches 200] [--levels medium,hard]
                               [--jobs 2] [--results FILE] [--report] [--no-latency]
                               [--latency-game happy_mochi] [--bot-matches 100]

Part 1, the engines in worker processes (``--jobs``, by default the cores the machine's
load leaves free), no servers: per game, level and opponent level
(``--opponents``, by default ``random`` and ``policy``), ``--matches`` seeded matches in
which one seat (rotating) is the searching bot deciding with ``services.bots.decide`` from
its view and events only, every other seat the opponent level. Two players where the game
allows it, else its fewest (Mori: 3, against two opponents). It prints the searching seat's
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
import asyncio
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

import grpc
from mogames.common.v1 import common_pb2

from bench.environment import use_bench_environment
from bench.markdown import table
from clients.bot import play_match
from clients.game_client import GameClient
from deploy.launcher import running_system
from deploy.redis_server import free_port
from services.bots.adapters import adapter, games_with_adapters
from services.bots.decide import decide
from services.bots.levels import SEARCH_LEVELS
from services.catalog import rules_module
from services.runtime import cpus
from services.runtime.bots import bot_move, timeout_move

# Options that keep a match short enough to play hundreds of (More's goal is far otherwise).
GAME_OPTIONS: dict[str, dict[str, Any]] = {"more": {"max_rounds": 1}}
MAX_STEPS = 20_000
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


def play_one(game: str, players: int, level: str, opponent: str, n: int) -> tuple[float, list[float]]:
    """One seeded match: the searching seat's result (1 win, a share for a tie, 0 loss) and
    its decisions' CPU seconds. A searching opponent decides from its own seat's information."""
    rules = rules_module(game)
    state = rules.State.new(players, 10_000 + n, GAME_OPTIONS.get(game, {}))
    hero = n % players
    opening = state.opening_events()
    histories = [[e.body for e in opening if e.visible_to(seat)] for seat in range(players)]
    spent: list[float] = []
    for step in range(MAX_STEPS):
        if state.is_over():
            break
        seat = state.active_seats()[0]
        level_of_seat = level if seat == hero else opponent
        started = time.process_time()
        if level_of_seat in SEARCH_LEVELS:
            view = state.view(seat)
            move = decide(game, view, seat, level_of_seat, seed=n * 100_003 + step, history=histories[seat])
        elif level_of_seat == "policy":
            move = timeout_move(state, seat)
        else:
            move = bot_move(state, seat, level_of_seat, n, step)
        if seat == hero:
            spent.append(time.process_time() - started)
        for event in state.apply(seat, move):
            for other in range(players):
                if event.visible_to(other):
                    histories[other].append(event.body)
    winners = state.winners()
    return (1.0 / len(winners) if hero in winners else 0.0), spent


def _job(args: tuple[str, int, str, str, int]) -> tuple[tuple[str, int, str, str, int], float, list[float]]:
    game, players, level, opponent, n = args
    score, spent = play_one(game, players, level, opponent, n)
    return (game, players, level, opponent, n), score, spent


DECIDING_CODE = ("services/bots/decide.py", "services/bots/levels.py", "services/bots/search.py")


def bots_version(game: str) -> str:
    """A digest of the code ``game``'s bots decide with (the search, the levels, its adapter):
    results kept in a results file count only for the code that played them."""
    digest = hashlib.sha256()
    module = adapter(game)
    files = [ROOT / name for name in DECIDING_CODE]
    if module is not None and module.__file__:
        files.append(Path(module.__file__))
    for path in sorted(files):
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


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


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
        self.held: dict[tuple[str, int, str, str, int], tuple[float, list[float]]] = {}
        self.other_code = 0  # rows of these games played by other bot code: not counted
        if path is not None and path.exists():
            for line in path.read_text().splitlines(keepends=True):
                if not line.endswith("\n"):
                    break  # a row another run is still writing
                row = json.loads(line)
                if row["version"] == self.versions.get(row["game"]):
                    key = (row["game"], row["players"], row["level"], row["opponent"], row["n"])
                    self.held[key] = (row["score"], row["decisions_s"])
                elif row["game"] in self.versions:
                    self.other_code += 1

    def add(self, key: tuple[str, int, str, str, int], score: float, spent: list[float]) -> None:
        self.held[key] = (score, spent)
        if self.path is not None:
            game, players, level, opponent, n = key
            row = {"version": self.versions[game], "game": game, "players": players, "level": level}
            row |= {"opponent": opponent, "n": n, "score": score, "decisions_s": [round(s, 5) for s in spent]}
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
    wanted = [(*key, n) for n in range(args.matches) for key in pairings]
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
    for (game, players, level, opponent, n), (score, spent) in results.held.items():
        pairing = pairings.get((game, players, level, opponent))
        if pairing is not None and n < args.matches:
            pairing.score += score
            pairing.matches += 1
            pairing.decisions_s += spent
    return list(pairings.values())


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


# -- part 2: a human's moves next to bot matches ---------------------------------------------


async def human_latencies(client: GameClient, duration_s: float, seed: int) -> list[float]:
    """The latencies of a human's moves over ``duration_s``: two-seat matches this client plays."""
    latencies: list[float] = []
    until = time.monotonic() + duration_s
    rng = random.Random(seed)
    while time.monotonic() < until:
        played = await play_match(client, 2, seed=rng.randrange(2**32), rng=rng, until=until, one_stream=True)
        latencies += played.move_latencies_s
    return latencies


async def bot_matches(client: GameClient, count: int, level: str, players: int) -> list[str]:
    table_options = common_pb2.TableOptions(bot_seats=range(players), bot_level=level)
    created = await asyncio.gather(*(client.create(players, table=table_options) for _ in range(count)))
    return [m.match_id for m in created]


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started (Linux ``/proc``)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
        except (OSError, ValueError):
            continue  # ended meanwhile
    return found


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def scheduled_seconds(pid: int) -> tuple[float, float]:
    """The seconds every thread of ``pid`` has run on a CPU and waited for one, so far (Linux
    ``/proc/<pid>/task/<tid>/schedstat``); zeros once it is gone."""
    ran = waited = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            fields = (task / "schedstat").read_text().split()
            ran, waited = ran + int(fields[0]), waited + int(fields[1])
    except OSError:
        pass
    return ran / 1e9, waited / 1e9


@dataclass
class Processes:
    """The processes of a latency phase, by role: the human's path (the bench's own client,
    the gateway, the replica, Redis) and the replica's bot workers."""

    path: dict[str, int]
    workers: list[int]

    @classmethod
    def of(cls, gateway: int, replica: int) -> Processes:
        redis = [p for p in _children(os.getpid()) if "redis-server" in _command(p)]
        workers = [p for p in _children(replica) if "spawn_main" in _command(p)]
        path = {"client": os.getpid(), "gateway": gateway, "replica": replica, "redis": redis[0]}
        return cls(path, workers)

    def sample(self) -> dict[str, tuple[float, float]]:
        seconds = {role: scheduled_seconds(pid) for role, pid in self.path.items()}
        workers = [scheduled_seconds(pid) for pid in self.workers]
        seconds["workers"] = (sum(w[0] for w in workers), sum(w[1] for w in workers))
        return seconds


@dataclass
class Phase:
    """A phase's human move latencies, and per role the CPU share and the share of time its
    threads waited for a CPU (runnable, not running)."""

    latencies: list[float]
    ran: dict[str, float]
    waited: dict[str, float]


async def measured(client: GameClient, duration_s: float, seed: int, processes: Processes) -> Phase:
    """A human's move latencies over ``duration_s``, and what each process did meanwhile."""
    before, started = processes.sample(), time.monotonic()
    latencies = await human_latencies(client, duration_s, seed)
    after, elapsed = processes.sample(), time.monotonic() - started
    ran = {role: (after[role][0] - before[role][0]) / elapsed for role in after}
    waited = {role: (after[role][1] - before[role][1]) / elapsed for role in after}
    return Phase(latencies, ran, waited)


async def latency_figures(
    target: str, args: argparse.Namespace, gateway: int, replica: int, placement: str
) -> list[list[str]]:
    game = args.latency_game
    players = max(2, rules_module(game).GAME.min_players)
    async with grpc.aio.insecure_channel(target) as channel:
        client = GameClient(channel, game)
        await human_latencies(client, 2.0, seed=0)  # warm up
        idle = await measured(client, args.latency_duration, 1, Processes.of(gateway, replica))
        ids = await bot_matches(client, args.bot_matches, args.bot_level, players)
        await asyncio.sleep(3.0)  # the bots' worker is busy by now
        before, started = sum([(await client.match(m)).version for m in ids]), time.monotonic()
        loaded = await measured(client, args.latency_duration, 2, Processes.of(gateway, replica))
        bot_moves = sum([(await client.match(m)).version for m in ids]) - before
        bot_moves_per_s = bot_moves / (time.monotonic() - started)
    rows = []
    for name, phase in (("idle", idle), (f"{args.bot_matches} {args.bot_level} bot matches", loaded)):
        name = f"{placement}: {name}"
        values = phase.latencies
        path_waited = sum(phase.waited[role] for role in ("client", "gateway", "replica", "redis"))
        rows.append(
            [
                name,
                str(len(values)),
                f"{1000 * percentile(values, 0.5):.2f}",
                f"{1000 * percentile(values, 0.99):.2f}",
                f"{phase.ran['replica']:.0%}",
                f"{phase.ran['workers']:.0%}",
                f"{phase.ran['gateway']:.0%} / {phase.ran['redis']:.0%} / {phase.ran['client']:.0%}",
                f"{1000 * path_waited:.0f}",
            ]
        )
    ratio = percentile(loaded.latencies, 0.99) / percentile(idle.latencies, 0.99)
    print(
        f"  {placement}: bot moves committed while measuring: {bot_moves} ({bot_moves_per_s:.1f}/s);"
        f" p99 loaded/idle = {ratio:.2f}",
        flush=True,
    )
    return rows


def placements() -> list[tuple[str, int]]:
    """How the part-2 systems place the bot workers: by the replica's tasks at the lowest
    priority, and (on two CPUs or more) on a CPU of their own (``MOGAMES_BOT_OWN_CPUS=1``)."""
    shared = ("workers share the CPUs", 0)
    if len(cpus.allowed()) < 2:
        return [shared]
    return [shared, (f"workers on CPU {max(cpus.allowed())} alone", 1)]


def human_phases(args: argparse.Namespace, placement: str, own_cpus: int) -> list[list[str]]:
    """Part 2 on a system of its own whose replica gives its bot workers ``own_cpus`` CPUs;
    the gateway, Redis and this client then keep off them too, as the rest of a deployment
    would (other machines, or cores of their own)."""
    everywhere = cpus.allowed()
    os.environ["MOGAMES_BOT_OWN_CPUS"] = str(own_cpus)
    with running_system([args.latency_game], 1, gateway_listen=f"127.0.0.1:{free_port()}") as system:
        replica, gateway = (process.pid for process in system.processes[:2])
        processes = Processes.of(gateway, replica)
        if own_cpus:
            rest = cpus.split(everywhere, own_cpus)[0]
            for pid in (gateway, processes.path["redis"], os.getpid()):
                cpus.keep_process_on(rest, pid)
        try:
            return asyncio.run(latency_figures(system.gateway, args, gateway, replica, placement))
        finally:
            cpus.keep_process_on(everywhere)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", default="all", help="games with a bot adapter: all or a,b")
    parser.add_argument("--levels", default="medium,hard", help="the searching seat's levels")
    parser.add_argument(
        "--opponents", default="random,policy", help="the other seats' levels (medium and hard search too)"
    )
    parser.add_argument("--matches", type=int, default=200, help="matches per game, level and opponent")
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
