"""Every method of every game, through the gateway and straight to a replica, fed random
bytes, truncated protobuf, oversize fields, invalid UTF-8 and extreme integers: only
client-error codes come back (never UNKNOWN or INTERNAL), and no call on another match,
made from another process meanwhile, takes 100 ms or more (issue 14). The test runs alone
(tests/machine_share.py): the bound is about the servers, not about other tests' load."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import time
from typing import Any

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from clients.game_client import GameClient, auth
from deploy.redis_server import running_redis
from services.catalog import rules_module
from services.runtime.codec import generated_modules
from tests.conftest import available_games
from tests.helpers import active_seat_move, start_match, wait_serving
from tests.test_processes import running_services_and_gateway

C = grpc.StatusCode
CLIENT_ERRORS = {
    C.OK,
    C.INVALID_ARGUMENT,
    C.NOT_FOUND,
    C.UNAUTHENTICATED,
    C.PERMISSION_DENIED,
    C.FAILED_PRECONDITION,
    C.RESOURCE_EXHAUSTED,
    C.ABORTED,
}
# How long a stream may stay open without a message and still count as answered (an empty stream).
STREAM_WAIT_S = 0.3
# The bound: no call on another match slowed past it while the fuzzing goes on.
SLOW_CALL_S = 0.1

_INTS = {
    FieldDescriptor.TYPE_UINT32: 2**32 - 1,
    FieldDescriptor.TYPE_FIXED32: 2**32 - 1,
    FieldDescriptor.TYPE_UINT64: 2**64 - 1,
    FieldDescriptor.TYPE_FIXED64: 2**64 - 1,
    FieldDescriptor.TYPE_INT32: -(2**31),
    FieldDescriptor.TYPE_SINT32: -(2**31),
    FieldDescriptor.TYPE_SFIXED32: -(2**31),
    FieldDescriptor.TYPE_INT64: -(2**63),
    FieldDescriptor.TYPE_SINT64: 2**63 - 1,
    FieldDescriptor.TYPE_SFIXED64: -(2**63),
    FieldDescriptor.TYPE_ENUM: 2**31 - 1,
}


def _fill(message: Message, mode: str, depth: int = 0) -> None:
    """Every field of ``message`` (nested ones too) at an extreme: ``oversize`` strings and
    lists, or ``extreme`` integers. Setting several members of a oneof keeps the last."""
    for field in message.DESCRIPTOR.fields:
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if depth >= 3 or field.message_type.GetOptions().map_entry:
                continue
            if field.is_repeated:
                items = getattr(message, field.name)
                for _ in range(3000 if mode == "oversize" else 2):
                    _fill(items.add(), mode, depth + 1)
            else:
                _fill(getattr(message, field.name), mode, depth + 1)
            continue
        if mode == "oversize":
            if field.type == FieldDescriptor.TYPE_STRING:
                value: Any = "é" * 3000
            elif field.type == FieldDescriptor.TYPE_BYTES:
                value = b"\0" * 3000
            elif field.type == FieldDescriptor.TYPE_BOOL:
                value = True
            else:
                value = 1
            if field.is_repeated:
                getattr(message, field.name).extend([value] * 3000)
            else:
                setattr(message, field.name, value)
        elif field.type in _INTS:
            value = _INTS[field.type]
            if field.is_repeated:
                getattr(message, field.name).extend([value] * 3)
            else:
                setattr(message, field.name, value)


def _invalid_utf8() -> bytes:
    """Field 1 (a string in every request but CreateMatch) holding bytes that are not UTF-8."""
    return b"\x0a\x04\xff\xfe\xfd\xfc"


async def _answer(channel: grpc.aio.Channel, method: Any, path: str, body: bytes, token: str) -> C:
    metadata = auth(token)
    try:
        if method.server_streaming:
            if method.client_streaming:  # PlayMatch: the body as its first message
                call = channel.stream_stream(path)(iter([body]), metadata=metadata, timeout=5)
            else:
                call = channel.unary_stream(path)(body, metadata=metadata, timeout=5)
            try:
                await asyncio.wait_for(call.read(), STREAM_WAIT_S)
            except TimeoutError:
                pass  # open and quiet: an empty stream so far
            finally:
                call.cancel()
            return C.OK
        await channel.unary_unary(path)(body, metadata=metadata, timeout=5)
        return C.OK
    except grpc.aio.AioRpcError as error:
        return error.code()


async def _templates(client: Any, game: str) -> tuple[dict[str, bytes], str]:
    """A valid request of each method about one started match, and a seat token of it."""
    module = generated_modules(rules_module(game).GAME)[0]
    players = rules_module(game).GAME.min_players
    started = await start_match(client, players, seed=7)
    seat, move, version = await active_seat_move(client, started)
    service = module.DESCRIPTOR.services_by_name[rules_module(game).GAME.service]
    templates = {}
    for method in service.methods:
        request = _request_class(method.input_type)()
        if "match_id" in method.input_type.fields_by_name:
            request.match_id = started.match_id
        if method.name == "CreateMatch":
            request.players = players
        if method.name == "SubmitMove":
            request.move.CopyFrom(move)
            request.expected_version = version
        templates[method.name] = request.SerializeToString()
    return templates, started.tokens[seat]


def _request_class(descriptor: Any) -> Any:
    return message_factory.GetMessageClass(descriptor)


def _inputs(rng: random.Random, template: bytes, descriptor: Any) -> list[tuple[str, bytes]]:
    cls = _request_class(descriptor)
    oversize, extreme = cls.FromString(template), cls.FromString(template)
    _fill(oversize, "oversize")
    _fill(extreme, "extreme")
    cases = [(f"random{n}", rng.randbytes(n)) for n in (1, 5, 40, 300)]
    cuts = sorted({rng.randrange(len(template)) for _ in range(3)}) if template else []
    cases += [(f"truncated{cut}", template[:cut]) for cut in cuts]
    cases += [
        ("oversize", oversize.SerializeToString()),
        ("extreme", extreme.SerializeToString()),
        ("invalid_utf8", _invalid_utf8()),
        ("huge", rng.randbytes(200_000)),
        ("empty", b""),
    ]
    return cases


# The templates replay a deal by seed, and the fuzzing makes many matches.
SERVICE_ENV = {
    "MOGAMES_ALLOW_CLIENT_SEED": "true",
    "MOGAMES_CREATE_LIMIT": "100000",
    "MOGAMES_MAX_WAITING_PER_CLIENT": "100000",
}


async def _bystander_matches(channel: grpc.aio.Channel, games: list[str]) -> list[tuple[str, str, str]]:
    """A started match of each game for the bystander, and a seat token of each."""
    matches = []
    for game in games:
        started = await start_match(GameClient(channel, game), rules_module(game).GAME.min_players, seed=3)
        matches.append((game, started.match_id, next(iter(started.tokens.values()))))
    return matches


@pytest.mark.alone
async def test_every_method_answers_bad_input_with_a_client_error_and_slows_no_other_match(tmp_path):
    """Real processes: a service per game and a gateway on their own Redis, and a bystander
    (tests/bystander.py) playing a match of every game from its own process meanwhile."""
    rng = random.Random(14)
    games = available_games()
    failures: list[str] = []
    sent: list[tuple[float, float, str]] = []  # each bad input: when it was sent and answered
    with (
        running_redis() as redis_url,
        running_services_and_gateway(games, redis_url, tmp_path, SERVICE_ENV) as processes,
    ):
        bystander = None
        try:
            gateway = grpc.aio.insecure_channel(processes.gateway_address)
            direct = {game: grpc.aio.insecure_channel(a) for game, a in processes.service_addresses.items()}
            for game in games:
                await wait_serving(gateway, rules_module(game).GAME.full_service)
            # Built before the bystander starts: making them is this test's CPU, not the servers'.
            work = []
            for game in games:
                module = generated_modules(rules_module(game).GAME)[0]
                service = module.DESCRIPTOR.services_by_name[rules_module(game).GAME.service]
                templates, token = await _templates(GameClient(gateway, game), game)
                for method in service.methods:
                    path = f"/{service.full_name}/{method.name}"
                    for label, body in _inputs(rng, templates[method.name], method.input_type):
                        work.append((game, method, path, label, body, token))
            matches = json.dumps(await _bystander_matches(gateway, games))
            bystander = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests.bystander",
                processes.gateway_address,
                matches,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            assert bystander.stdout is not None and bystander.stdin is not None
            assert await asyncio.wait_for(bystander.stdout.readline(), 60) == b"ready\n"
            for game, method, path, label, body, token in work:
                for target, channel in (("gateway", gateway), ("direct", direct[game])):
                    began = time.monotonic()
                    code = await _answer(channel, method, path, body, token)
                    sent.append((began, time.monotonic(), f"{game} {method.name} {label} via {target}"))
                    if code not in CLIENT_ERRORS:
                        failures.append(f"{game} {method.name} {label} via {target}: {code.name}")
                    if label == "oversize" and code not in (C.INVALID_ARGUMENT, C.RESOURCE_EXHAUSTED):
                        failures.append(f"{game} {method.name} oversize via {target}: {code.name}")
            bystander.stdin.close()
            timings = json.loads(await asyncio.wait_for(bystander.stdout.read(), 60))
            for channel in (gateway, *direct.values()):
                await channel.close()
        finally:
            if bystander is not None and bystander.returncode is None:
                bystander.kill()
                await bystander.wait()
    assert not failures, "\n".join(failures)
    assert {game for game, _, _ in timings} == set(games), "the bystander called every game"
    slow = sorted((t for t in timings if t[2] >= SLOW_CALL_S), key=lambda t: -t[2])

    def meanwhile(at: float, took: float) -> list[str]:
        return [what for start, end, what in sent if start < at + took and end > at]

    assert not slow, (
        f"{len(slow)} of {len(timings)} calls on other matches took 100 ms or more:\n"
        + "\n".join(
            f"{game} {took * 1000:.0f} ms, meanwhile: {meanwhile(at, took)}" for game, at, took in slow[:8]
        )
    )
