"""Arbitrary client moves never crash an engine: every move a client can encode is either
applied or refused with a MoveError (INVALID_ARGUMENT / FAILED_PRECONDITION), never an
unexpected exception (INTERNAL), and a refused move changes nothing."""

from __future__ import annotations

import random

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor

from clients.game_client import game_modules
from services.catalog import GAME_PACKAGES, rules_module
from services.engine import MoveError
from services.runtime.codec import to_dict
from tests.helpers import start_match
from tests.test_all_games import default_options

INTS = [0, 1, 2, 3, 5, 9, 13, 40, 54, 69, 70, 105, 106, 255, 2**31 - 1]


def fill(message, rng: random.Random, depth: int = 0) -> None:
    """Random values in every field of ``message``: valid-looking and out-of-range alike."""
    for field in message.DESCRIPTOR.fields:
        if field.message_type is not None:
            if depth < 3 and rng.random() < 0.8:
                count = rng.randint(0, 3) if field.is_repeated else 1
                for _ in range(count):
                    child = (
                        getattr(message, field.name).add()
                        if field.is_repeated
                        else getattr(message, field.name)
                    )
                    fill(child, rng, depth + 1)
            continue
        values = [scalar(field, rng) for _ in range(rng.randint(0, 4) if field.is_repeated else 1)]
        if field.is_repeated:
            getattr(message, field.name).extend(values)
        else:
            setattr(message, field.name, values[0])


def scalar(field, rng: random.Random):
    if field.type == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if field.type == FieldDescriptor.TYPE_STRING:
        return rng.choice(["", "x", "hexagon", "0,1", "ZZZ"])
    if field.type == FieldDescriptor.TYPE_ENUM:
        return rng.choice([v.number for v in field.enum_type.values] + [99])  # 99: unknown to the engine
    value = rng.choice(INTS)
    if field.type in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32) and rng.random() < 0.3:
        return -value
    return value


def random_move(pb2, rng: random.Random):
    move = pb2.Move()
    kind = rng.choice(move.DESCRIPTOR.oneofs_by_name["kind"].fields)
    getattr(move, kind.name).SetInParent()
    fill(getattr(move, kind.name), rng)
    return move


def advance(state, rng: random.Random, steps: int) -> None:
    for _ in range(steps):
        if state.is_over():
            return
        seat = rng.choice(state.active_seats())
        state.apply(seat, rng.choice(state.legal_moves(seat)))


@pytest.mark.parametrize("game", sorted(GAME_PACKAGES))
def test_engine_applies_or_refuses_any_encodable_move(game):
    rules = rules_module(game)
    pb2, _ = game_modules(game)
    rng = random.Random(7)
    accepted = refused = 0
    for trial in range(60):
        state = rules.State.new(rules.GAME.min_players, trial, default_options(game))
        advance(state, rng, rng.randint(0, 40))
        for _ in range(15):
            seat = rng.randrange(rules.GAME.min_players)
            before = state.to_dict()
            move = to_dict(random_move(pb2, rng))
            try:
                state.apply(seat, move)
            except MoveError:
                refused += 1
                assert state.to_dict() == before, f"{game}: refused {move} changed the state"
            else:
                accepted += 1
                state = rules.State.from_dict(before)  # keep exploring from the same position
    assert refused > 0


@pytest.mark.parametrize("game", sorted(GAME_PACKAGES))
async def test_service_never_answers_internal_to_arbitrary_moves(cluster, game):
    client = cluster.client(game)
    pb2, _ = game_modules(game)
    info = rules_module(game).GAME
    started = await start_match(client, info.min_players, seed=3)
    rng = random.Random(11)
    for _ in range(25):
        seat = rng.randrange(info.min_players)
        try:
            await client.submit(started.match_id, started.tokens[seat], random_move(pb2, rng))
        except grpc.aio.AioRpcError as error:
            assert error.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION), (
                error.code(),
                error.details(),
            )
