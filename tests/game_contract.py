"""The contract every game owes its players, checked on real processes for any game of the
catalog: create, join, prompts, moves, refusals, watch, spectators and timers.

``served_game(package, ...)`` serves a game kept outside ``services/`` (its package holding its
``rules.py`` and its ``<package>.proto``) as a deployment would: its proto compiled, a service
and a gateway process started with ``MOGAMES_EXTRA_GAMES`` naming it, and the game registered in
this test process's catalog while it runs. The ``check_*`` functions take a client of any game;
each replays the match on the engine (same seed, same moves) to know what the server must say.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient
from deploy.redis_server import running_redis
from services.catalog import EXTRA_GAMES_SETTING, registered, rules_module
from services.runtime.codec import to_dict
from tests.helpers import is_history, refusal, wait_serving
from tests.test_processes import running_service_and_gateway

ROOT = Path(__file__).resolve().parent.parent
C = grpc.StatusCode
S = common_pb2.MatchStatus
# A scheduler that looks every 50 ms and bots that play at once: a timed-out seat is moved for
# within a second of its deadline.
QUICK = {"MOGAMES_SCHEDULER_TICK_MS": "50", "MOGAMES_BOT_THINK_MS": "0", "MOGAMES_ALLOW_CLIENT_SEED": "1"}


def compile_proto(package: str, out: Path) -> Path:
    """``<package>/<name>.proto`` compiled into ``out`` as ``mogames/<name>/v1/<name>_pb2*.py``
    (where ``make gen`` puts a shipped game's), next to the shipped contracts it imports."""
    rules = importlib.import_module(f"{package}.rules")
    name = rules.GAME.package
    source = Path(rules.__file__).parent / f"{name}.proto"
    tree = out / "protos" / "mogames" / name / "v1"
    tree.mkdir(parents=True)
    shutil.copy(source, tree / source.name)
    generated = out / "gen"
    generated.mkdir()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{ROOT / 'protos'}",
            f"-I{out / 'protos'}",
            f"--python_out={generated}",
            f"--grpc_python_out={generated}",
            f"mogames/{name}/v1/{source.name}",
        ],
        check=True,
    )
    return generated


@contextlib.contextmanager
def served_game(package: str, tmp: Path) -> Iterator[tuple[str, str]]:
    """(game name, gateway address): ``package``'s game served by a service process and a
    gateway process on a Redis of their own (only their scheduler sees its matches)."""
    generated = compile_proto(package, tmp)
    # The generated modules join the shipped ones' namespace package, here and in the processes.
    sys.path.append(str(generated))
    importlib.invalidate_caches()
    path = os.pathsep.join(p for p in (str(generated), os.environ.get("PYTHONPATH", "")) if p)
    try:
        with (
            pytest.MonkeyPatch.context() as env,
            registered(package) as game,
            running_redis() as redis_url,
        ):
            # The gateway process is started with this process's environment.
            env.setenv(EXTRA_GAMES_SETTING, package)
            env.setenv("PYTHONPATH", path)
            with running_service_and_gateway(game, redis_url, tmp, QUICK) as processes:
                yield game, processes.gateway_address
    finally:
        sys.path.remove(str(generated))


@contextlib.asynccontextmanager
async def game_client(game: str, address: str) -> AsyncIterator[GameClient]:
    """A client of ``game`` through the gateway at ``address``, once the gateway serves it (its
    port opens before it has seen its replicas' health)."""
    async with grpc.aio.insecure_channel(address) as channel:
        await wait_serving(channel, rules_module(game).GAME.full_service)
        yield GameClient(channel, game)


class Replay:
    """The match as the engine plays it from the same seed and moves: what the server must say."""

    def __init__(self, game: str, players: int, seed: int, options: dict[str, Any]) -> None:
        self.rules = rules_module(game)
        self.state = self.rules.State.new(players, seed, options)
        self.events: list[Any] = list(self.state.opening_events())

    def apply(self, seat: int, move: dict[str, Any]) -> None:
        self.events += self.state.apply(seat, move)

    def game_events(self, seat: int | None) -> list[dict[str, Any]]:
        """The engine's events ``seat`` (None: a spectator) may see, in order."""
        return [event.body for event in self.events if event.visible_to(seat)]


def game_part(message: Any) -> dict[str, Any]:
    """A view without the fields the platform fills."""
    platform = ("version", "seat", "active_seats", "clocks")
    return {key: value for key, value in to_dict(message).items() if key not in platform}


def body(event: Any) -> dict[str, Any]:
    kind = event.WhichOneof("event")
    return {kind: to_dict(getattr(event, kind))}


async def seated(
    client: GameClient, players: int, seed: int, table: Any = None
) -> tuple[str, dict[int, str]]:
    match = await client.create(players, seed=seed, table=table)
    tokens = {}
    for n in range(players):
        joined = await client.join(match.match_id, f"player-{n}")
        tokens[joined.seat] = joined.token
    return match.match_id, tokens


async def check_create_and_join(client: GameClient) -> None:
    """A match waits for its seats, starts when the last is taken, and refuses a bad count."""
    info = client.info
    match = await client.create(info.min_players, seed=4)
    assert (match.status, match.version, match.game) == (S.WAITING_FOR_PLAYERS, 0, info.name)
    seats = set()
    for n in range(info.min_players):
        joined = await client.join(match.match_id, f"player-{n}")
        seats.add(joined.seat)
        assert joined.token and joined.rejoin_key
    assert seats == set(range(info.min_players))
    started = await client.match(match.match_id)
    assert started.status == S.IN_PROGRESS and list(started.active_seats)
    full = await refusal(client.join(match.match_id, "late"))
    assert full.code == C.FAILED_PRECONDITION
    too_many = await refusal(client.create(info.max_players + 1))
    assert (too_many.code, too_many.field) == (C.INVALID_ARGUMENT, "players")


async def check_moves_prompts_watch_and_spectators(client: GameClient, players: int, seed: int) -> None:
    """A whole match of the engine's ``timeout_move``s: each seat to move is prompted with its
    legal moves on its PlayMatch stream, each move raises the version by one, a spectator's
    view is the engine's, and a watch from the start tells a seat and a spectator exactly the
    engine's events each may see, between match_started and match_ended."""
    match_id, tokens = await seated(client, players, seed)
    options = to_dict(client.pb2.CreateMatchRequest().options)
    replay = Replay(client.game, players, seed, options)
    streams = {seat: await client.play(match_id, token) for seat, token in tokens.items()}
    try:
        version = 0
        while not replay.state.is_over():
            [seat] = replay.state.active_seats()
            prompt = await _prompt(streams[seat], version)
            legal = [to_dict(move) for move in prompt.moves]
            assert prompt.seat == seat and legal == replay.state.legal_moves(seat)
            move = replay.state.timeout_move(seat)
            answer = await client.submit(
                match_id, tokens[seat], json_format.ParseDict(move, client.pb2.Move()), version
            )
            replay.apply(seat, move)
            version += 1
            assert answer.version == version
            spectator = await client.view(match_id, None)
            assert game_part(spectator) == replay.state.view(None) and spectator.version == version
    finally:
        for call in streams.values():
            call.cancel()
    final = await client.match(match_id)
    assert (final.status, final.version) == (S.FINISHED, version)
    assert list(final.winners) == replay.state.winners() and list(final.scores) == replay.state.scores()
    for seat in (None, 0):
        watched = [e async for e in client.watch(match_id, tokens[seat] if seat is not None else None)]
        history = [body(e) for e in watched if is_history(e)]
        kinds = [next(iter(b)) for b in history]
        assert kinds[: players + 1] == ["player_joined"] * players + ["match_started"]
        assert kinds[-1] == "match_ended"
        told = [b for b in history[players + 1 : -1] if "seat_connection" not in b]
        assert told == replay.game_events(seat), f"what seat {seat} was told"


async def _prompt(call: Any, version: int) -> Any:
    """The prompt of ``version`` on a PlayMatch stream."""
    while True:
        response = await asyncio.wait_for(call.read(), 10)
        assert response is not grpc.aio.EOF, "the stream ended"
        for event in response.events:
            if event.WhichOneof("event") == "prompt" and event.version == version:
                return event.prompt


async def check_refusals(client: GameClient, seed: int) -> None:
    """Another seat's move, a stale version, an empty move and an illegal one are refused with
    the right status, naming the rule or field, and change nothing."""
    info = client.info
    match_id, tokens = await seated(client, info.min_players, seed)
    match = await client.match(match_id)
    [seat] = match.active_seats
    idle = next(s for s in tokens if s != seat)
    legal = await client.legal_moves(match_id, tokens[seat])
    move = legal.moves[0]
    not_turn = await refusal(client.submit(match_id, tokens[idle], move))
    assert (not_turn.code, not_turn.reason) == (C.FAILED_PRECONDITION, "not_your_turn")
    stale = await refusal(client.submit(match_id, tokens[seat], move, expected_version=7))
    assert (stale.code, stale.field) == (C.ABORTED, "expected_version")
    empty = await refusal(client.submit(match_id, tokens[seat], client.pb2.Move()))
    assert (empty.code, empty.field) == (C.INVALID_ARGUMENT, "move")
    forged = await refusal(client.submit(match_id, tokens[seat][:-3] + "abc", move))
    assert forged.code == C.UNAUTHENTICATED
    assert (await client.match(match_id)).version == 0, "a refusal changed the match"


async def check_timers(client: GameClient, seed: int) -> None:
    """A seat that lets its turn time out is moved for with the engine's ``timeout_move``, once,
    and its watchers are told; after ``max_timeouts`` a bot plays its seat to the end."""
    info = client.info
    table = common_pb2.TableOptions(turn_seconds=1, max_timeouts=1)
    match_id, _tokens = await seated(client, info.min_players, seed, table)
    match = await client.match(match_id)
    assert [clock.seat for clock in match.clocks] == list(match.active_seats)
    replay = Replay(client.game, info.min_players, seed, to_dict(client.pb2.CreateMatchRequest().options))
    watched = [e async for e in client.watch(match_id, timeout_s=60)]
    history = [body(e) for e in watched if is_history(e)]
    [seat] = replay.state.active_seats()
    first = history.index({"timed_out": {"seat": seat, "consecutive": 1}})
    replay.apply(seat, replay.state.timeout_move(seat))
    # The platform's events are MatchEvent's fields below 10 and from 100 (docs/adding-a-game.md).
    platform = {f.name for f in client.pb2.MatchEvent.DESCRIPTOR.fields if not 10 <= f.number < 100}
    made = next(b for b in history[first + 1 :] if next(iter(b)) not in platform)
    assert made == replay.events[-1].body, "the timed-out seat's move is not timeout_move's"
    assert [b["bot_seated"]["reason"] for b in history if b.get("bot_seated", {}).get("seat") == seat] == [
        "timeouts"
    ]
    final = await client.match(match_id)
    assert final.status == S.FINISHED and list(final.winners)
