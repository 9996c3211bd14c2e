"""Load test: concurrent bot matches against the whole system on a real Redis (append-only
file on), through both routing layers, next to a bare gRPC echo measured in the same run.

    python -m bench.bench [--game happy_mochi] [--concurrency 50] [--duration 15]

One run starts Redis, ``--replicas`` service processes per game, the Python gateway and
(when installed) nginx in front of it (deploy/nginx.py), and a bare grpc.aio echo server.
Bots play as live clients do: one WatchMatch per seat and one SubmitMove per prompt, or
both on one PlayMatch stream per seat; and as browsers do, on the gateway's web port, from
load processes of their own (bench/web_load.py). It prints, for ``--game`` through nginx
and through the Python gateway alone, each way of playing: committed moves/s, move p50/p99
(sent to answered), errors, Redis bytes per live match, and server CPU ms per committed
move (user +
system time of every server process, Redis and nginx included, from /proc, over the
measured window; the load generator's own CPU apart) next to the echo's server CPU per
call and their ratio; then the same for
every other game through one routing layer by PlayMatch (``--others-duration`` each); the
performance targets, each met or missed by this run (bench/bench_targets.py); and last, the
workers' figures on the same Redis: notifications/s, their delay from commit to webhook call,
and rating updates/s (bench/bench_workers.py).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass, field

import redis.asyncio as aioredis

from bench import bench_workers, markdown
from bench.baselines import CpuMeter, EchoFigures, echo_figures, median_of, relay_figures, running_echo
from bench.bench_targets import NGINX, PLAY_MATCH, PROMPTS, PYTHON_GATEWAY, WEB_PORT, row_name, target_rows
from bench.environment import use_bench_environment
from bench.load import game_load, percentile, web_game_load
from bench.ws_client import WEB_SOCKET_TABLE, WEB_SOCKETS
from clients.bot import parse_options
from deploy.launcher import System, running_system
from deploy.nginx import nginx_executable
from deploy.redis_server import free_port
from services.catalog import GAME_PACKAGES, rules_module
from services.runtime import keys
from services.runtime.record import MatchRecord

# -- one measured load ---------------------------------------------------------------------


@dataclass
class Figures:
    game: str
    front: str
    matches: int
    moves: int
    moves_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    bytes_per_live_match: float
    cpu_ms_per_move: float
    # The same by process role (redis, replicas, gateway, nginx).
    cpu_ms_by_role: dict[str, float] = field(default_factory=dict)
    # The echo's server CPU ms per call measured in the same round (0: the run's).
    echo_ms: float = 0.0
    # ÷ echo call of every round of this configuration (--rounds), this one's among them.
    round_ratios: list[float] = field(default_factory=list)
    # The live matches' mean version: their bytes grow with it (docs/storage.md, "Size").
    moves_per_live_match: float = float("nan")
    # The load generator's own CPU (the bench's process, or its web load processes), apart
    # from the server's.
    load_cpu_ms_per_move: float = float("nan")

    def ratio(self, echo_ms: float) -> float:
        return self.cpu_ms_per_move / (self.echo_ms or echo_ms)


def median_round(rounds: list[Figures]) -> Figures:
    """The round whose ÷ echo call is the median (the lower one of an even count), knowing
    every round's ratio."""
    ordered = sorted(rounds, key=lambda f: f.ratio(f.echo_ms))
    chosen = ordered[(len(ordered) - 1) // 2]
    chosen.round_ratios = [f.ratio(f.echo_ms) for f in ordered]
    return chosen


async def redis_pid(redis_url: str) -> int:
    client = aioredis.Redis.from_url(redis_url)
    try:
        return int((await client.info("server"))["process_id"])
    finally:
        await client.aclose()


async def live_storage(redis_url: str, match_ids: list[str]) -> tuple[float, float]:
    """Redis memory of every key of these matches (their hash tag), per match, and their
    mean version (about their commits: what their history grows with)."""
    if not match_ids:
        return float("nan"), float("nan")
    wanted = set(match_ids)
    client = aioredis.Redis.from_url(redis_url)
    try:
        total = 0
        async for key in client.scan_iter(match=f"{keys.PREFIX}:{{*", count=1000):
            text = key.decode()
            if text[text.index("{") + 1 : text.index("}")] in wanted:
                total += await client.memory_usage(key, samples=0) or 0
        versions = 0
        for match_id in match_ids:
            rev, doc = await client.hmget(keys.match(match_id), ["rev", "doc"])
            versions += MatchRecord.decode(doc, int(rev)).version if doc and rev else 0
        return total / len(wanted), versions / len(match_ids)
    finally:
        await client.aclose()


# How the bench's clients play: a WatchMatch and a SubmitMove per prompt, or one PlayMatch.
CLIENTS = {False: PROMPTS, True: PLAY_MATCH}


def seats_of(game: str, players: str) -> int | None:
    """The seats of each of ``game``'s matches by ``--players``: a number (kept within the
    game's range), ``min`` (the game's fewest) or ``random`` (None: drawn match by match)."""
    info = rules_module(game).GAME
    if players == "random":
        return None
    if players == "min":
        return info.min_players
    return min(max(int(players), info.min_players), info.max_players)


async def measure(
    game: str,
    front: str,
    target: str,
    roles: dict[str, list[int]],
    redis_url: str,
    args: argparse.Namespace,
    one_stream: bool,
    web: str | None = None,
) -> Figures:
    pairs = [o.split(":", 1)[1] for o in args.option if o.startswith(f"{game}:")]
    duration = args.duration if game == args.game else args.others_duration
    meter = CpuMeter(roles)
    if web is not None and web not in WEB_SOCKETS:
        load, elapsed, load_cpu_s = await web_game_load(
            target,
            game,
            args.concurrency,
            duration,
            pairs,
            seats_of(game, args.players),
            args.turn_seconds,
            web,
            args.web_load_processes,
            meter.start,
        )
    else:
        meter.start()
        own_cpu = time.process_time()
        load, elapsed = await game_load(
            target,
            game,
            args.concurrency,
            duration,
            parse_options(pairs),
            one_stream,
            seats_of(game, args.players),
            args.turn_seconds,
            play_on=args.web_url if web in WEB_SOCKETS else None,
            with_table=web == WEB_SOCKET_TABLE,
        )
        load_cpu_s = time.process_time() - own_cpu
    used = meter.stop()
    per_move = {role: seconds * 1000 / max(load.moves, 1) for role, seconds in used.items()}
    bytes_per_live_match, moves_per_live_match = await live_storage(redis_url, load.live)
    return Figures(
        game,
        row_name(
            front,
            f"{web}, {PLAY_MATCH}"
            if web in WEB_SOCKETS
            else f"Connect {web}, {PROMPTS}"
            if web
            else CLIENTS[one_stream],
        ),
        len(load.matches),
        load.moves,
        load.moves / elapsed,
        percentile(load.latencies_s, 0.5) * 1000,
        percentile(load.latencies_s, 0.99) * 1000,
        load.errors,
        bytes_per_live_match,
        sum(per_move.values()),
        per_move,
        moves_per_live_match=moves_per_live_match,
        load_cpu_ms_per_move=load_cpu_s * 1000 / max(load.moves, 1),
    )


def server_roles(
    system: System, store_pid: int, games: list[str], game: str, replicas: int
) -> dict[str, list[int]]:
    """The processes serving ``game`` by role: Redis, its replicas, the gateway, nginx (the
    other games' replicas stay idle and out of the count)."""
    start = games.index(game) * replicas
    fronts = [p.pid for p in system.processes[len(games) * replicas :]]
    roles = {"redis": [store_pid], "replicas": [p.pid for p in system.processes[start : start + replicas]]}
    roles["gateway"] = fronts[:1]
    if len(fronts) > 1:
        roles["nginx"] = fronts[1:]
    return roles


async def durable(redis_url: str) -> None:
    """Append-only file on, fsync every second, as a production Redis runs."""
    client = aioredis.Redis.from_url(redis_url)
    try:
        await client.config_set("appendfsync", "everysec")
        await client.config_set("appendonly", "yes")
    finally:
        await client.aclose()


async def bench(
    args: argparse.Namespace, system: System, echo: tuple[str, int], forwarder: tuple[str, int]
) -> None:
    await durable(system.redis_url)
    store_pid = await redis_pid(system.redis_url)
    games = args.all_games
    fronts = [(NGINX, system.gateway)] if system.gateway != system.python_gateway else []
    fronts.append((PYTHON_GATEWAY, system.python_gateway))
    echoes: list[EchoFigures] = []
    relays: list[EchoFigures] = []
    forwarded: list[EchoFigures] = []
    rounds: dict[str, list[Figures]] = {}
    # (front, its address, PlayMatch, the browser's HTTP version on the web port or None)
    configurations: list[tuple[str, str, bool, str | None]] = [
        (f, t, one_stream, None) for f, t in fronts for one_stream in (False, True)
    ]
    if args.browser:
        configurations += [(WEB_PORT, args.web_url, False, web) for web in ("HTTP/2", "HTTP/1.1")]
        # PlayMatch over WebSocket, next to the native PlayMatch row (create and join native);
        # then as the web page plays it, with the seat's table on the stream.
        configurations += [(WEB_PORT, system.python_gateway, True, web) for web in WEB_SOCKETS]
    # Rounds alternate the configurations, each next to an echo measured just before it:
    # on a shared machine a figure swings by a fifth from one minute to the next.
    for n in range(args.rounds):
        print(f"round {n + 1} of {args.rounds}:", flush=True)
        print(
            f"echo baseline: {args.concurrency} concurrent callers for {args.echo_duration:g} s ...",
            flush=True,
        )
        echoes.append(await echo_figures(*echo, args.concurrency, args.echo_duration))
        print(f"relay baseline: {args.concurrency} stream pairs for {args.echo_duration:g} s ...", flush=True)
        relays.append(await relay_figures(*echo, args.concurrency, args.echo_duration))
        print(f"forwarded echo baseline: {args.concurrency} concurrent callers ...", flush=True)
        forwarded.append(
            await echo_figures(*forwarder, args.concurrency, args.echo_duration, behind=(echo[1],))
        )
        for front, target, one_stream, web in configurations:
            print(
                f"{args.game} through {front} by {web or ''} {CLIENTS[one_stream]}: {args.concurrency}"
                f" matches for {args.duration:g} s ...",
                flush=True,
            )
            roles = server_roles(system, store_pid, games, args.game, args.replicas)
            figures = await measure(args.game, front, target, roles, system.redis_url, args, one_stream, web)
            figures.echo_ms = echoes[-1].cpu_ms_per_call
            rounds.setdefault(figures.front, []).append(figures)
    results = [median_round(each) for each in rounds.values()]
    echo_figures_, relay = median_of(echoes), median_of(relays)
    others_front, others_target = fronts[0]
    for game in games:
        if game == args.game:
            continue
        print(f"{game} through {others_front} by PlayMatch for {args.others_duration:g} s ...", flush=True)
        roles = server_roles(system, store_pid, games, game, args.replicas)
        results.append(await measure(game, others_front, others_target, roles, system.redis_url, args, True))
    print_table(results, echo_figures_, relay, args, median_of(forwarded))
    if args.workers:
        await bench_workers.run(system.redis_url, args.notices_per_s, args.duration, args.matches)


def print_table(
    results: list[Figures],
    echo: EchoFigures,
    relay: EchoFigures,
    args: argparse.Namespace,
    forwarded: EchoFigures | None = None,
) -> None:
    print()
    header = [
        "game",
        "through",
        "matches",
        "moves",
        "moves/s",
        "move p50 / p99 ms",
        "errors",
        "Redis bytes per live match (its moves)",
        "server CPU ms per move",
        "÷ echo call",
        "÷ echo call, each round",
    ]
    rows = [
        [
            r.game,
            r.front,
            str(r.matches),
            str(r.moves),
            f"{r.moves_per_s:.0f}",
            f"{r.p50_ms:.1f} / {r.p99_ms:.1f}",
            str(r.errors),
            f"{r.bytes_per_live_match:,.0f} ({r.moves_per_live_match:,.0f})",
            f"{r.cpu_ms_per_move:.2f}",
            f"{r.ratio(echo.cpu_ms_per_call):.1f}",
            ", ".join(f"{ratio:.1f}" for ratio in r.round_ratios) or "-",
        ]
        for r in results
    ]
    print(markdown.table(header, rows, text_columns=2))
    print()
    roles = ("redis", "replicas", "gateway", "nginx")
    print("server CPU ms per move by process:")
    shares = [
        [
            r.game,
            r.front,
            *(f"{r.cpu_ms_by_role.get(role, 0.0):.2f}" for role in roles),
            f"{r.load_cpu_ms_per_move:.2f}",
        ]
        for r in results
    ]
    print(markdown.table(["game", "through", *roles, "load generator (not counted)"], shares, text_columns=2))
    print()
    print("the targets in this run:")
    targets = target_rows(results, echo.cpu_ms_per_call, args.game)
    print(markdown.table(["target", "figure", "met"], targets, text_columns=1))
    print()
    print(
        f"echo: {echo.calls_per_s:.0f} calls/s, {echo.cpu_ms_per_call:.3f} ms of server CPU per call"
        f" (bare grpc.aio unary echo, 64-byte payload, {args.concurrency} concurrent callers, same run;"
        f" the median of {args.rounds} round(s): a row of --game is its median round, next to that"
        " round's echo; the other games are measured once, next to this one; the echo and relay"
        " server runs on grpc's default core settings, the services and gateway on their own:"
        " services/runtime/grpc_core.py)"
    )
    print(
        f"relay: {relay.calls_per_s:.0f} moves/s, {relay.cpu_ms_per_call:.3f} ms of server CPU per move"
        f" = {relay.cpu_ms_per_call / echo.cpu_ms_per_call:.2f} echo calls (bare grpc.aio, {args.concurrency}"
        " pairs of streams; a move is one message in and two out, to its sender and to the other stream:"
        " the least a PlayMatch move costs on grpc.aio, with no Redis, rules or checks)"
    )
    if forwarded is not None:
        print(
            f"forwarded echo: {forwarded.calls_per_s:.0f} calls/s, {forwarded.cpu_ms_per_call:.3f} ms of"
            f" server CPU per call = {forwarded.cpu_ms_per_call / echo.cpu_ms_per_call:.2f} echo calls"
            " (the echo through a bare grpc.aio forwarder, both processes counted: the least a unary"
            " call through a gateway to a replica costs, with no Redis, rules or checks; every"
            " SubmitMove, native or from a browser, pays it, and its watch's events on top)"
        )
    print(
        f"{args.concurrency} concurrent matches of {args.players} seats (--players); {args.replicas}"
        " replica(s) per game;"
        + (f" a {args.turn_seconds} s turn clock on every decision;" if args.turn_seconds else "")
        + " Redis with AOF"
        " (everysec); a seat plays each prompt of its WatchMatch by a SubmitMove, or both on one PlayMatch"
        " stream (move latency: sent to answered); server CPU is"
        " every server process (Redis, nginx, gateway, the game's replicas) from /proc over the window,"
        " per committed move"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--game", default="happy_mochi", help="the game measured through both fronts")
    parser.add_argument("--others", default="all", help="other games through one front: all, none or a,b")
    parser.add_argument("--concurrency", type=int, default=50, help="matches played at once")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of load per front and round")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds of --game's configurations, alternating; its median printed",
    )
    parser.add_argument("--others-duration", type=float, default=6.0, help="seconds of load per other game")
    parser.add_argument("--echo-duration", type=float, default=6.0, help="seconds of echo calls")
    parser.add_argument("--replicas", type=int, default=2, help="service processes per game")
    parser.add_argument(
        "--players",
        default="min",
        help="seats per match: a number, min (each game's fewest: 2-player Happy Mochi, as the targets"
        " assume) or random (drawn from the game's range, match by match)",
    )
    parser.add_argument("--no-nginx", action="store_true", help="the Python gateway only")
    parser.add_argument(
        "--no-browser",
        dest="browser",
        action="store_false",
        help="skip the rows of the gateway's web port (Connect, binary, over HTTP/2 and HTTP/1.1)",
    )
    parser.add_argument(
        "--web-load-processes",
        type=int,
        default=2,
        help="processes playing the browser rows' matches (bench/web_load.py), sharing --concurrency",
    )
    parser.add_argument(
        "--turn-seconds",
        type=int,
        default=0,
        help="a turn clock of this many seconds on every decision (TableOptions.turn_seconds; 0: none)",
    )
    parser.add_argument(
        "--no-workers", dest="workers", action="store_false", help="skip the workers' figures"
    )
    parser.add_argument(
        "--notices-per-s", type=int, default=200, help="the notifier's load: notices a second"
    )
    parser.add_argument("--matches", type=int, default=1000, help="finished matches for the ratings worker")
    parser.add_argument(
        "--option", action="append", default=[], help="match option game:name=value, e.g. more:max_rounds=1"
    )
    args = parser.parse_args()
    others = {"all": list(GAME_PACKAGES), "none": []}.get(args.others, args.others.split(","))
    args.all_games = [args.game] + [g for g in others if g and g != args.game]
    unknown = set(args.all_games) - set(GAME_PACKAGES)
    if unknown:
        parser.error(f"unknown games: {', '.join(sorted(unknown))}")
    nginx = not args.no_nginx and nginx_executable() is not None
    if not nginx and not args.no_nginx:
        print("nginx is not installed: the Python gateway only", file=sys.stderr)
    listen = f"127.0.0.1:{free_port()}"
    web_listen = f"127.0.0.1:{free_port()}"
    args.web_url = f"http://{web_listen}"
    use_bench_environment(MOGAMES_WEB_LISTEN=web_listen if args.browser else "")
    with (
        running_system(args.all_games, args.replicas, gateway_listen=listen, nginx_front=nginx) as system,
        running_echo() as echo,
        running_echo(echo[0]) as forwarder,
    ):
        asyncio.run(bench(args, system, echo, forwarder))


if __name__ == "__main__":
    main()
