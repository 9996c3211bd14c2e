"""A replica's cached decoded state never commits a wrong move: two MatchService replicas on
one real Redis, one of them holding a stale cache; and a commit re-sent by redis-py after a
broken connection is answered as a duplicate, not applied twice."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.catalog import rules_module
from services.engine import MoveError
from services.runtime.errors import FailedPrecondition
from services.runtime.history import StoredEvent
from services.runtime.matches import MatchService, MoveResult
from services.runtime.record import StateDecoder
from services.runtime.redis_client import connect
from services.runtime.store import MatchStore
from tests.conftest import service_settings

GAME = "happy_mochi"
RULES = rules_module(GAME)


@contextlib.asynccontextmanager
async def replica(redis_url: str) -> AsyncIterator[MatchService]:
    client = connect(redis_url)
    try:
        yield MatchService(RULES, MatchStore(client, GAME), service_settings(GAME, redis_url))
    finally:
        await client.aclose()


async def started_match(service: MatchService, seed: int) -> tuple[str, dict[int, str]]:
    facts = await service.create_match(2, seed, {})
    tokens = {}
    for n in range(2):
        joined = await service.join_match(facts.match_id, f"p{n}")
        tokens[joined.seat] = joined.token
    return facts.match_id, tokens


async def stored_state(service: MatchService, match_id: str) -> tuple[Any, int, int]:
    """The engine state as stored, its version and rev (decoded afresh, not cached)."""
    record = await service.store.load(match_id)
    assert record is not None
    return StateDecoder(RULES.State)(record.state), record.version, record.rev


async def random_move(service: MatchService, match_id: str, rng: random.Random) -> tuple[int, dict[str, Any]]:
    state, _, _ = await stored_state(service, match_id)
    seat = rng.choice(list(state.active_seats()))
    return seat, rng.choice(state.legal_moves(seat))


async def stream(redis_url: str, match_id: str) -> list[StoredEvent]:
    client = connect(redis_url)
    try:
        return await MatchStore(client, GAME).history(match_id)
    finally:
        await client.aclose()


def assert_contiguous(events: list[StoredEvent], version: int) -> None:
    """Every version from 1 to ``version`` once, its events numbered 1, 2, ... without gap."""
    ids = [(e.version, e.seq) for e in events]
    assert len(ids) == len(set(ids)), "an event is stored twice"
    played = [e for e in events if e.version > 0]
    assert sorted({e.version for e in played}) == list(range(1, version + 1))
    for v in range(1, version + 1):
        seqs = [e.seq for e in played if e.version == v]
        assert seqs == list(range(1, len(seqs) + 1))


def expected_outcome(state: Any, seat: int, move: dict[str, Any]) -> list[dict[str, Any]] | None:
    """What the current state demands of ``move``: the bodies of its events ``seat`` sees, or
    None for a refusal (``state`` is changed: pass a copy)."""
    if seat not in state.active_seats():
        return None
    try:
        return [e.body for e in state.apply(seat, move) if e.visible_to(seat)]
    except MoveError:
        return None


async def submit(
    service: MatchService, match_id: str, token: str, move: dict[str, Any]
) -> MoveResult | Exception:
    try:
        return await service.submit_move(match_id, token, move, None, "")
    except (FailedPrecondition, MoveError) as refusal:
        return refusal


@pytest.mark.parametrize("seed", range(8))
async def test_a_stale_cached_state_never_commits(redis_url: str, seed: int) -> None:
    rng = random.Random(seed)
    async with replica(redis_url) as a, replica(redis_url) as b:
        match_id, tokens = await started_match(a, seed)
        # A serves a move: its cache holds the match at the rev its commit made.
        seat, move = await random_move(a, match_id, rng)
        await a.submit_move(match_id, tokens[seat], move, None, "")
        cached = a.cache.peek(match_id)
        assert cached is not None and cached.rev == (await stored_state(a, match_id))[2]
        stale_state = RULES.State.from_dict(cached.state.to_dict())
        # B commits meanwhile: A's cache is now one write behind.
        seat, move = await random_move(b, match_id, rng)
        await b.submit_move(match_id, tokens[seat], move, None, "")
        current, version, rev = await stored_state(a, match_id)
        assert a.cache.peek(match_id, rev) is None, "A's cache must be stale for this test"

        # A gets a move its stale cache would accept (the seat it thinks is to move).
        stale_seat = rng.choice(list(stale_state.active_seats()))
        stale_move = rng.choice(stale_state.legal_moves(stale_seat))
        expected = expected_outcome(RULES.State.from_dict(current.to_dict()), stale_seat, stale_move)
        outcome = await submit(a, match_id, tokens[stale_seat], stale_move)

        after, after_version, after_rev = await stored_state(a, match_id)
        if expected is not None:
            assert isinstance(outcome, MoveResult), outcome
            assert outcome.version == version + 1 == after_version
            assert [e.body for e in outcome.events][: len(expected)] == expected
            reference = RULES.State.from_dict(current.to_dict())
            reference.apply(stale_seat, stale_move)
            assert after.to_dict() == reference.to_dict(), "the move applied to the current state"
        else:
            assert isinstance(outcome, (FailedPrecondition, MoveError)), outcome
            assert (after_version, after_rev) == (version, rev), "a refused move changed nothing"
        assert_contiguous(await stream(redis_url, match_id), after_version)

        # Whatever the outcome, A's next move uses the match as it is now.
        seat, move = await random_move(a, match_id, rng)
        result = await a.submit_move(match_id, tokens[seat], move, None, "")
        final, final_version, final_rev = await stored_state(a, match_id)
        assert result.version == final_version == after_version + 1
        refreshed = a.cache.peek(match_id)
        assert refreshed is not None and refreshed.rev == final_rev, "A's cache refreshed"
        assert refreshed.state.to_dict() == final.to_dict()
        assert_contiguous(await stream(redis_url, match_id), final_version)


async def test_a_stale_cache_with_a_pinned_current_version_commits(redis_url: str) -> None:
    """expected_version that the stale cache thinks is wrong, but the match is at: accepted."""
    rng = random.Random(99)
    async with replica(redis_url) as a, replica(redis_url) as b:
        match_id, tokens = await started_match(a, 99)
        seat, move = await random_move(a, match_id, rng)
        await a.submit_move(match_id, tokens[seat], move, None, "")
        seat, move = await random_move(b, match_id, rng)
        await b.submit_move(match_id, tokens[seat], move, None, "")
        _, version, _ = await stored_state(a, match_id)
        seat, move = await random_move(a, match_id, rng)
        result = await a.submit_move(match_id, tokens[seat], move, version, "")
        assert result.version == version + 1
        assert_contiguous(await stream(redis_url, match_id), version + 1)


class ReplyCutter:
    """A real TCP proxy in front of Redis that, once armed, forwards the next commit script
    to Redis but breaks the connection instead of delivering its ``ok`` reply: the move is
    committed and the client only sees the connection drop (and redis-py re-sends)."""

    OK_REPLY = b"*2\r\n$2\r\nok\r\n"

    def __init__(self, redis_port: int) -> None:
        self.redis_port = redis_port
        self.armed = False
        self.cuts = 0
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        redis_r, redis_w = await asyncio.open_connection("127.0.0.1", self.redis_port)

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, replies: bool) -> None:
            try:
                while data := await reader.read(65536):
                    if replies and self.armed and self.OK_REPLY in data:
                        self.armed = False
                        self.cuts += 1
                        break
                    writer.write(data)
                    await writer.drain()
            except ConnectionError:
                pass
            finally:
                for w in (client_w, redis_w):
                    w.close()

        await asyncio.gather(pipe(client_r, redis_w, False), pipe(redis_r, client_w, True))

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


async def test_a_commit_resent_after_a_broken_connection_is_not_applied_twice(redis_url: str) -> None:
    """A SubmitMove without a request id: its commit runs, the reply is lost with the
    connection, redis-py re-sends the script on a new connection. The server's own request
    id makes that a duplicate (answered as the first), so the move is in once."""
    redis_port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    cutter = ReplyCutter(redis_port)
    proxy_port = await cutter.start()
    rng = random.Random(5)
    try:
        async with replica(redis_url) as direct, replica(f"redis://127.0.0.1:{proxy_port}/0") as cut:
            match_id, tokens = await started_match(direct, 5)
            _, version, _ = await stored_state(direct, match_id)
            seat, move = await random_move(direct, match_id, rng)
            cutter.armed = True
            result = await cut.submit_move(match_id, tokens[seat], move, None, "")
            assert cutter.cuts == 1, "the commit's reply was cut"
            _, after_version, _ = await stored_state(direct, match_id)
            assert result.version == after_version == version + 1, "the move is in once"
            assert_contiguous(await stream(redis_url, match_id), after_version)
    finally:
        await cutter.stop()


@pytest.mark.parametrize("seed", range(8, 14))
async def test_a_stale_cache_does_not_refuse_what_the_current_state_allows(redis_url: str, seed: int) -> None:
    rng = random.Random(seed)
    async with replica(redis_url) as a, replica(redis_url) as b:
        match_id, tokens = await started_match(a, seed)
        seat, move = await random_move(a, match_id, rng)
        await a.submit_move(match_id, tokens[seat], move, None, "")
        seat, move = await random_move(b, match_id, rng)
        await b.submit_move(match_id, tokens[seat], move, None, "")
        current, version, rev = await stored_state(a, match_id)
        assert a.cache.peek(match_id, rev) is None, "A's cache must be stale for this test"
        seat, move = await random_move(a, match_id, rng)
        reference = RULES.State.from_dict(current.to_dict())
        reference.apply(seat, move)
        result = await a.submit_move(match_id, tokens[seat], move, None, "")
        after, after_version, after_rev = await stored_state(a, match_id)
        assert result.version == after_version == version + 1
        assert after.to_dict() == reference.to_dict()
        refreshed = a.cache.peek(match_id)
        assert refreshed is not None and refreshed.rev == after_rev
        assert_contiguous(await stream(redis_url, match_id), after_version)
