"""Play whole matches with random-legal-move bots through a gateway.

python -m clients.autoplay --game happy_mochi --matches 20 [--players N] [--target host:port]
    [--bots N [--bot-level policy]]  (the last N seats played by the server's own bots)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import random
import sys
import time

import grpc
from tqdm import tqdm

from clients.bot import parse_options, play_match
from clients.game_client import GameClient
from services.catalog import GAME_PACKAGES, rules_module


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--game", choices=sorted(GAME_PACKAGES), required=True)
    parser.add_argument("--matches", type=int, default=10)
    parser.add_argument("--players", type=int, help="players per match (default: each count in turn)")
    parser.add_argument("--target", default="127.0.0.1:50051", help="gateway address")
    parser.add_argument("--concurrency", type=int, default=4, help="matches played at once")
    parser.add_argument(
        "--seed",
        type=int,
        help="first match seed; match i uses seed + i (the server must allow client seeds: "
        "MOGAMES_ALLOW_CLIENT_SEED=true); default: the server picks",
    )
    parser.add_argument("--option", action="append", default=[], help="match option name=value (repeatable)")
    parser.add_argument(
        "--bots", type=int, default=0, help="seats per match played by server-side bots (the last ones)"
    )
    parser.add_argument("--bot-level", default="", help="level of those bots (random, policy)")
    parser.add_argument(
        "--one-stream",
        action="store_true",
        help="each seat plays on one PlayMatch stream (WatchMatch + SubmitMove otherwise)",
    )
    return parser.parse_args(argv)


async def autoplay(args: argparse.Namespace) -> int:
    info = rules_module(args.game).GAME
    options = parse_options(args.option)
    counts = [args.players] if args.players else list(range(info.min_players, info.max_players + 1))
    wins: collections.Counter[int] = collections.Counter()
    moves = errors = 0
    started = time.perf_counter()
    gate = asyncio.Semaphore(args.concurrency)
    async with grpc.aio.insecure_channel(args.target) as channel:
        client = GameClient(channel, args.game)
        progress = tqdm(total=args.matches, unit="match", desc=info.title)

        async def one(i: int) -> None:
            nonlocal moves, errors
            async with gate:
                try:
                    played = await play_match(
                        client,
                        counts[i % len(counts)],
                        seed=None if args.seed is None else args.seed + i,
                        rng=random.Random(i),
                        options=options,
                        server_bots=min(args.bots, counts[i % len(counts)]),
                        bot_level=args.bot_level,
                        one_stream=args.one_stream,
                    )
                except grpc.aio.AioRpcError as error:
                    errors += 1
                    tqdm.write(f"match {i}: {error.code().name}: {error.details()}")
                else:
                    moves += played.moves
                    wins.update(played.winners)
                progress.update()

        await asyncio.gather(*(one(i) for i in range(args.matches)))
        progress.close()
    elapsed = time.perf_counter() - started
    played_ok = args.matches - errors
    print(
        f"{info.title}: {played_ok}/{args.matches} matches finished, {errors} errors,"
        f" {moves} moves in {elapsed:.1f}s"
    )
    if played_ok:
        print(f"moves per match: {moves / played_ok:.1f}; wins by seat: {dict(sorted(wins.items()))}")
    return 1 if errors else 0


def main() -> None:
    sys.exit(asyncio.run(autoplay(parse_args(sys.argv[1:]))))


if __name__ == "__main__":
    main()
