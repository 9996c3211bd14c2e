"""One load-generator process of ``make bench-capacity`` (bench/bench_capacity.py drives it).

    python -m bench.capacity_load --target 127.0.0.1:50051 --game happy_mochi --think 20

It holds seats: tables of ``--players`` seats, each seat one PlayMatch stream that moves on
its prompts after a think time drawn uniformly between half and one and a half ``--think``
seconds. Asyncio only: one coroutine per stream, a timer per pending move, no thread per
seat, and many streams on each HTTP/2 connection (``--streams-per-channel``). A table whose
match ended starts a new one.

Commands come on stdin as JSON lines and each is answered on stdout with one JSON line:
``{"seats": n}`` (answered once n seats hold an open stream), ``{"moving": bool}``, and
``{"report": true}`` (moves, latencies and errors since the last report, and this
process's own CPU seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from services.runtime.grpc_core import apply_core_settings

apply_core_settings()

import grpc  # noqa: E402  (grpc loads after its core settings)

from bench.baselines import cpu_seconds  # noqa: E402
from clients.game_client import GameClient  # noqa: E402

# Setup calls (CreateMatch, JoinMatch) in flight at once per process.
SETUP_CONCURRENCY = 64
REOPEN_AFTER_S = 1.0


@dataclass
class Tally:
    moves: int = 0
    latencies_s: list[float] = field(default_factory=list)
    errors: int = 0
    # Streams the server cut (its connection age, a restart) and opened again.
    cuts: int = 0


class Load:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.channels: list[grpc.aio.Channel] = []
        self.tables: list[asyncio.Task[None]] = []
        self.open_seats = 0
        self.moving = True
        self.tally = Tally()
        self.setup = asyncio.Semaphore(SETUP_CONCURRENCY)
        self.changed = asyncio.Event()
        # Seats holding a decision while moves are off: their moves are timed when they resume.
        self.held: list[Any] = []

    def client(self, n: int) -> GameClient:
        """The client of the ``n``th stream: a new connection every ``--streams-per-channel``."""
        index = n // self.args.streams_per_channel
        while len(self.channels) <= index:
            # A subchannel pool of the channel's own: each channel its own connection.
            options = [("grpc.use_local_subchannel_pool", 1)]
            self.channels.append(grpc.aio.insecure_channel(self.args.target, options=options))
        return GameClient(self.channels[index], self.args.game, timeout_s=60)

    async def grow(self, seats: int) -> None:
        while len(self.tables) * self.args.players < seats:
            first = len(self.tables) * self.args.players
            self.tables.append(asyncio.create_task(self.table(self.client(first))))
        while self.open_seats < len(self.tables) * self.args.players:
            self.changed.clear()
            await self.changed.wait()

    async def table(self, client: GameClient) -> None:
        """Matches one after the other, each seat of each on a stream of its own."""
        opened = False
        while True:
            try:
                async with self.setup:
                    match = await client.create(self.args.players, seed=self.rng.randrange(2**32))
                    players = range(self.args.players)
                    tokens = [(await client.join(match.match_id, f"seat-{n}")).token for n in players]
            except grpc.aio.AioRpcError as error:
                self.failed(error)
                await asyncio.sleep(REOPEN_AFTER_S)
                continue
            seats = [Seat(self, client, match.match_id, token, count=not opened) for token in tokens]
            opened = True
            await asyncio.gather(*(seat.play() for seat in seats))

    def failed(self, error: grpc.aio.AioRpcError) -> None:
        self.tally.errors += 1
        print(f"capacity_load: {error.code().name}: {error.details()}", file=sys.stderr)

    def set_moving(self, moving: bool) -> None:
        self.moving = moving
        if moving:
            held, self.held = self.held, []
            for seat in held:
                seat.holding = False
                seat.think()

    def report(self) -> dict[str, Any]:
        tally, self.tally = self.tally, Tally()
        return {
            "moves": tally.moves,
            "latencies_ms": [round(s * 1000, 3) for s in tally.latencies_s],
            "errors": tally.errors,
            "cuts": tally.cuts,
            "seats": self.open_seats,
            "cpu_s": cpu_seconds(os.getpid()),
        }


class Seat:
    """One seat's PlayMatch stream: a move on each prompt, after a think time."""

    def __init__(self, load: Load, client: GameClient, match_id: str, token: str, count: bool) -> None:
        self.load, self.client, self.match_id, self.token = load, client, match_id, token
        # The first match of a table counts its seats as they open; later ones replace them.
        self.count = count
        self.call: Any = None
        self.decision: tuple[int, list[Any]] | None = None
        self.acted_at = -1
        self.timer: asyncio.TimerHandle | None = None
        self.sent_at = 0.0
        self.sending: asyncio.Task[None] | None = None
        self.cursor = (0, 0)
        self.holding = False  # in the load's held seats

    async def play(self) -> None:
        version, seq = None, 0
        while True:
            self.call = await self.client.play(
                self.match_id, self.token, after_version=version, after_seq=seq
            )
            try:
                async for response in self.call:
                    if self.count:
                        self.count = False
                        self.load.open_seats += 1
                        self.load.changed.set()
                    if self.heard(response):
                        return
                return
            except grpc.aio.AioRpcError as error:
                if error.code() == grpc.StatusCode.UNAVAILABLE:
                    self.load.tally.cuts += 1
                else:
                    self.load.failed(error)
                await asyncio.sleep(REOPEN_AFTER_S)
                version, seq = self.cursor
                self.sent_at = 0.0
            finally:
                if self.timer is not None:
                    self.timer.cancel()
                self.call.cancel()

    def heard(self, response: Any) -> bool:
        """Takes one message; whether the match ended."""
        ended = False
        for event in response.events:
            kind = event.WhichOneof("event")
            if event.seq:
                self.cursor = (event.version, event.seq)
            ended = ended or kind == "match_ended"
            if kind == "prompt" and event.version > self.acted_at:
                self.decision = (event.version, list(event.prompt.moves))
        answer = response.WhichOneof("answer")
        if answer == "committed":
            if self.sent_at:
                self.load.tally.latencies_s.append(time.perf_counter() - self.sent_at)
                self.load.tally.moves += 1
            self.sent_at = 0.0
            self.acted_at = response.committed.version
            next_moves = list(response.committed.next_moves)
            self.decision = (self.acted_at, next_moves) if next_moves else None
        elif answer == "refused":
            self.sent_at = 0.0  # another seat's move made this one stale: the next prompt follows
        if not ended and self.decision is not None and not self.sent_at and self.timer is None:
            self.think()
        return ended

    def think(self) -> None:
        if not self.load.moving:
            if not self.holding:
                self.holding = True
                self.load.held.append(self)
            return
        if self.timer is not None or self.decision is None or self.sent_at:
            return
        think_s = self.load.rng.uniform(0.5, 1.5) * self.load.args.think
        self.timer = asyncio.get_running_loop().call_later(think_s, self.move)

    def move(self) -> None:
        self.timer = None
        if self.decision is None or self.sent_at or self.call is None or self.call.done():
            return
        version, moves = self.decision
        self.decision = None
        self.sent_at = time.perf_counter()
        self.sending = asyncio.create_task(
            self.client.send_move(
                self.call, self.load.rng.choice(moves), expected_version=version, request_id=uuid.uuid4().hex
            )
        )
        self.sending.add_done_callback(_ignore_a_cut)


def _ignore_a_cut(task: asyncio.Task[None]) -> None:
    # A write on a stream the server has just cut: the read side tells of the cut.
    if not task.cancelled():
        task.exception()


async def serve(args: argparse.Namespace) -> None:
    load = Load(args)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        command = json.loads(line)
        answer: dict[str, Any] = {"ok": True}
        if "seats" in command:
            await load.grow(int(command["seats"]))
            answer = {"seats": load.open_seats}
        elif "moving" in command:
            load.set_moving(bool(command["moving"]))
        elif "report" in command:
            answer = load.report()
        print(json.dumps(answer), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--game", default="happy_mochi")
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--think", type=float, default=20.0)
    parser.add_argument("--streams-per-channel", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.run(serve(args))
    except ImportError:  # pragma: no cover - uvloop is a pinned dependency
        asyncio.run(serve(args))


if __name__ == "__main__":
    main()
