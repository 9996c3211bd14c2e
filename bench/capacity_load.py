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
import logging
import os
import random
import struct
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from services.runtime.grpc_core import apply_core_settings

apply_core_settings()

import grpc  # noqa: E402  (grpc loads after its core settings)
import httpx  # noqa: E402
import structlog  # noqa: E402
from mogames.common.v1 import common_pb2  # noqa: E402

from bench.baselines import cpu_seconds  # noqa: E402
from clients.game_client import GameClient  # noqa: E402
from services.runtime import collector  # noqa: E402

# Setup calls (CreateMatch, JoinMatch) in flight at once per process.
SETUP_CONCURRENCY = 64
REOPEN_AFTER_S = 1.0
WEB_SEATS_PER_CONNECTION = 50
# The Connect codes of a move refused by the rules, as PlayMatch answers them "refused".
REFUSALS = frozenset({"aborted", "failed_precondition", "invalid_argument", "out_of_range"})


@dataclass
class Tally:
    moves: int = 0
    latencies_s: list[float] = field(default_factory=list)
    errors: int = 0
    # Streams the server cut (its connection age, a restart) and opened again.
    cuts: int = 0
    # Moves no longer legal when they arrived.
    refused: int = 0


class Load:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.channels: list[grpc.aio.Channel] = []
        self.tables: list[asyncio.Task[None]] = []
        self.open_seats = 0
        # Moves wait for the bench to ask for them (all streams open first).
        self.moving = False
        self.tally = Tally()
        self.setup = asyncio.Semaphore(SETUP_CONCURRENCY)
        self.changed = asyncio.Event()
        # Seats holding a decision while moves are off: their moves are timed when they resume.
        self.held: list[Any] = []
        # The web port's clients (HTTP/2 without TLS), each one connection for its seats'
        # watches; and one for their moves' POSTs.
        self.web_clients: list[httpx.AsyncClient] = []
        self.web_posts = httpx.AsyncClient(
            base_url=f"http://{args.web}",
            http1=False,
            http2=True,
            timeout=None,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=None),
        )

    def web_client(self, n: int) -> httpx.AsyncClient:
        """The web client of the ``n``th seat: a connection of its own every
        WEB_SEATS_PER_CONNECTION seats, leaving streams free for their moves' POSTs (an
        HTTP/2 server takes a bounded number of streams at once on a connection)."""
        index = n // WEB_SEATS_PER_CONNECTION
        while len(self.web_clients) <= index:
            self.web_clients.append(
                httpx.AsyncClient(base_url=f"http://{self.args.web}", http1=False, http2=True, timeout=None)
            )
        return self.web_clients[index]

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
            self.tables.append(asyncio.create_task(self.table(self.client(first), first)))
        while self.open_seats < len(self.tables) * self.args.players:
            self.changed.clear()
            await self.changed.wait()

    async def table(self, client: GameClient, first: int) -> None:
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
            seats = [
                WebSeat(self, client, match.match_id, token, not opened, self.web_client(first + n))
                if self.args.web
                else Seat(self, client, match.match_id, token, count=not opened)
                for n, token in enumerate(tokens)
            ]
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
            "refused": tally.refused,
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
            if response.refused.code == grpc.StatusCode.UNAVAILABLE.value[0]:
                self.load.tally.errors += 1  # the store did not answer
            else:
                self.load.tally.refused += 1  # no longer legal: the next prompt follows
            self.sent_at = 0.0
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
        if not self.load.moving:
            self.think()  # held until moves are on again
            return
        if self.decision is None or self.sent_at or self.call is None or self.call.done():
            return
        moves = self.decision[1]
        self.decision = None
        self.sent_at = time.perf_counter()
        # As the web page does, without expected_version: a pick made while another seat's
        # went in still counts (Happy Mochi's seats pick at once).
        self.sending = asyncio.create_task(
            self.client.send_move(self.call, self.load.rng.choice(moves), request_id=uuid.uuid4().hex)
        )
        self.sending.add_done_callback(_ignore_a_cut)


class WebSeat(Seat):
    """One seat as the web page plays it: a WatchMatch stream on the web port (Connect,
    binary, HTTP/2) and a SubmitMove POST per move."""

    def __init__(
        self, load: Load, client: GameClient, match_id: str, token: str, count: bool, web: httpx.AsyncClient
    ) -> None:
        super().__init__(load, client, match_id, token, count)
        self.web = web

    async def play(self) -> None:
        web, pb2 = self.web, self.client.pb2
        service = f"/{self.client.info.full_service}"
        headers = {
            "content-type": "application/connect+proto",
            "connect-protocol-version": "1",
            "authorization": f"Bearer {self.token}",
        }
        version: int | None = None
        seq = 0
        while True:
            request = common_pb2.WatchMatchRequest(match_id=self.match_id, after_seq=seq)
            if version is not None:
                request.after_version = version
            body = request.SerializeToString()
            try:
                async with web.stream(
                    "POST",
                    f"{service}/WatchMatch",
                    content=struct.pack(">BI", 0, len(body)) + body,
                    headers=headers,
                ) as reply:
                    buffer = bytearray()
                    async for chunk in reply.aiter_raw():
                        buffer += chunk
                        for flags, data in _frames(buffer):
                            if flags & _END_STREAM:
                                raise _WebCut(data)
                            if self.count:
                                self.count = False
                                self.load.open_seats += 1
                                self.load.changed.set()
                            if self.heard_event(pb2.MatchEvent.FromString(data)):
                                return
                    raise _WebCut(b"")
            except (_WebCut, httpx.HTTPError) as error:
                if isinstance(error, _WebCut) and b"unavailable" not in error.args[0]:
                    self.load.tally.errors += 1
                    print(f"capacity_load: web watch ended: {error.args[0]!r}", file=sys.stderr)
                else:
                    self.load.tally.cuts += 1
                await asyncio.sleep(REOPEN_AFTER_S)
                version, seq = self.cursor
            finally:
                if self.timer is not None:
                    self.timer.cancel()

    def heard_event(self, event: Any) -> bool:
        kind = event.WhichOneof("event")
        if event.seq:
            self.cursor = (event.version, event.seq)
        if kind == "prompt" and event.version > self.acted_at:
            self.decision = (event.version, list(event.prompt.moves))
            if not self.sent_at:
                self.think()
        return kind == "match_ended"

    def move(self) -> None:
        self.timer = None
        if not self.load.moving:
            self.think()
            return
        if self.decision is None or self.sent_at:
            return
        moves = self.decision[1]
        self.decision = None
        self.sent_at = time.perf_counter()
        request = self.client.pb2.SubmitMoveRequest(match_id=self.match_id, request_id=uuid.uuid4().hex)
        request.move.CopyFrom(self.load.rng.choice(moves))
        self.sending = asyncio.create_task(self.submit(request))

    async def submit(self, request: Any) -> None:
        web = self.load.web_posts
        headers = {
            "content-type": "application/proto",
            "connect-protocol-version": "1",
            "authorization": f"Bearer {self.token}",
        }
        try:
            reply = await web.post(
                f"/{self.client.info.full_service}/SubmitMove",
                content=request.SerializeToString(),
                headers=headers,
            )
        except httpx.HTTPError:
            self.load.tally.errors += 1
            self.sent_at = 0.0
            return
        sent_at, self.sent_at = self.sent_at, 0.0
        if reply.status_code != 200:
            if reply.json().get("code") in REFUSALS:
                self.load.tally.refused += 1  # no longer legal: the next prompt follows
            else:
                self.load.tally.errors += 1
                print(
                    f"capacity_load: SubmitMove {reply.status_code}: {reply.content[:200]!r}", file=sys.stderr
                )
            return
        self.load.tally.latencies_s.append(time.perf_counter() - sent_at)
        self.load.tally.moves += 1
        answer = self.client.pb2.SubmitMoveResponse.FromString(reply.content)
        self.acted_at = answer.version
        if answer.next_moves:
            self.decision = (answer.version, list(answer.next_moves))
            self.think()


class _WebCut(Exception):
    """A web watch that ended before its match did (its end-of-stream message)."""


_END_STREAM = 0x02


def _frames(buffer: bytearray) -> list[tuple[int, bytes]]:
    """The complete Connect envelopes at the head of ``buffer``, taken out of it."""
    frames = []
    while len(buffer) >= 5:
        flags, length = struct.unpack(">BI", buffer[:5])
        if len(buffer) < 5 + length:
            break
        frames.append((flags, bytes(buffer[5 : 5 + length])))
        del buffer[: 5 + length]
    return frames


def _ignore_a_cut(task: asyncio.Task[None]) -> None:
    # A write on a stream the server has just cut: the read side tells of the cut.
    if not task.cancelled():
        task.exception()


async def serve(args: argparse.Namespace) -> None:
    load = Load(args)
    # Its thousands of streams pause the collector as they do a server's: a latency it
    # measures must not hold the load process's own collections.
    pacing = asyncio.create_task(collector.keep_collecting())
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
    pacing.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--game", default="happy_mochi")
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--think", type=float, default=5.0)
    parser.add_argument("--streams-per-channel", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--web", default="", help="the web port: seats watch and move there, as browsers")
    args = parser.parse_args()
    # stdout is the bench's channel, one JSON answer a line: log lines (the collector's) go
    # to stderr, warnings only.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    collector.configure()
    try:
        import uvloop

        uvloop.run(serve(args))
    except ImportError:  # pragma: no cover - uvloop is a pinned dependency
        asyncio.run(serve(args))


if __name__ == "__main__":
    main()
