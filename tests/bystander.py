"""A player of other matches, in a process of its own, timing every call it makes.

    python -m tests.bystander <gateway host:port> '<json list of [game, match_id, token]>'

It asks GetView of each given match in turn (one call at a time, 10 ms apart) and prints
``ready`` once every match has answered. It stops when its stdin closes, then prints one
JSON line: ``[[game, time.monotonic() at the call, latency seconds], ...]`` of the calls
made after ``ready`` (the monotonic clock is the machine's: the caller can line the calls
up with what it did meanwhile). Being its own process, its timings hold the servers' delays and not the
CPU of whoever sends the traffic it is a bystander of.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import grpc

from clients.game_client import GameClient

PAUSE_S = 0.01


async def main(gateway: str, matches: list[tuple[str, str, str]]) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    closed = asyncio.ensure_future(reader.read())  # stdin's EOF: the caller is done
    async with grpc.aio.insecure_channel(gateway) as channel:
        clients = {game: GameClient(channel, game) for game, _, _ in matches}
        for game, match_id, token in matches:
            await clients[game].view(match_id, token)
        print("ready", flush=True)
        timings: list[tuple[str, float, float]] = []
        while not closed.done():
            for game, match_id, token in matches:
                start = time.monotonic()
                await clients[game].view(match_id, token)
                timings.append((game, start, time.monotonic() - start))
                await asyncio.sleep(PAUSE_S)
    print(json.dumps(timings), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], [tuple(m) for m in json.loads(sys.argv[2])]))
