"""One load process of ``make bench``'s browser rows: plays its share of the matches on the
web port (bench/web_client.py) in a process of its own, so that the bench's own event loop
is not the limit, and reports what it played and the CPU it used for that.

    python -m bench.web_load --target http://127.0.0.1:8081 --http HTTP/2 --matches 25 ...

It prints ``ready`` once started, plays from the line ``go`` on its standard input for
``--duration`` seconds, then prints its figures as one line of JSON (bench.bench reads them).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import time

import uvloop

from bench.load import game_load
from clients.bot import parse_options


async def run(args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    print("ready", flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)
    cpu_before = time.process_time()
    load, elapsed = await game_load(
        args.target,
        args.game,
        args.matches,
        args.duration,
        parse_options(args.option),
        players=args.players,
        turn_seconds=args.turn_seconds,
        web=args.http,
        first=args.first,
    )
    figures = {**dataclasses.asdict(load), "elapsed_s": elapsed, "cpu_s": time.process_time() - cpu_before}
    print(json.dumps(figures), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", required=True, help="the web port's base URL")
    parser.add_argument("--http", choices=("HTTP/2", "HTTP/1.1"), required=True)
    parser.add_argument("--game", required=True)
    parser.add_argument("--matches", type=int, required=True, help="matches played at once")
    parser.add_argument("--first", type=int, default=0, help="the first match worker's number (its seed)")
    parser.add_argument("--duration", type=float, required=True)
    parser.add_argument("--players", type=int, default=None, help="seats per match (none: drawn)")
    parser.add_argument("--turn-seconds", type=int, default=0)
    parser.add_argument("--option", action="append", default=[], help="a game option name=value")
    uvloop.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
