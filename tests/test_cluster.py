"""The platform on a real Redis Cluster (3 masters, 3 replicas on loopback).

The platform tests below are the single-Redis ones, run again here with the services
pointed at ``redis+cluster://``: create, join, moves, idempotent retries, racing submits
across two replicas, WatchMatch replay, resume and live across replicas (the watch hub's
subscription on any node), prompts and spectators, the game feed and its consumer groups,
per-client budgets, the lobby's match list and matchmaking. Then a master is killed in the middle of play.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import Any

import grpc
import pytest
from mogames.common.v1 import common_pb2

from deploy.redis_server import running_redis
from services.runtime import keys
from services.runtime.redis_client import (
    SOCKET_TIMEOUT_S,
    RedisClient,
    RedisUrlError,
    check_url,
    connect,
    parse_cluster_url,
    pubsub,
)
from services.runtime.settings import ServiceSettings, SettingsError
from tests.cluster_fixtures import RedisClusterProcesses, running_redis_cluster
from tests.conftest import Cluster, running_services
from tests.helpers import StartedMatch, start_match
from tests.test_concurrency import (
    stored_events,
    test_many_clients_on_two_replicas_lose_and_duplicate_nothing,
    test_one_request_id_racing_itself_across_replicas_commits_once,
    test_racing_joins_fill_each_seat_once,
    test_racing_submits_of_one_move_commit_exactly_once,
    test_retried_request_id_returns_the_first_answer_and_applies_nothing,
    test_stale_expected_version_is_aborted_and_changes_nothing,
)
from tests.test_edge_limits import (
    test_join_match_has_a_budget_too,
    test_one_client_flooding_create_match_is_cut_off_at_its_limit,
    test_waiting_matches_per_client_are_capped_until_one_fills,
)
from tests.test_live_play import (
    test_a_match_can_refuse_spectators,
    test_a_multi_step_turn_answers_with_the_next_moves,
    test_a_replayed_move_answers_the_first_answer_whole,
    test_a_retried_join_gets_the_same_seat_and_token,
    test_a_spectator_sees_the_public_view_and_public_events_only,
    test_each_seat_gets_one_prompt_per_version_it_must_decide_with_its_legal_moves,
)
from tests.test_matchmaking import (
    test_a_lone_player_gets_bots_after_the_wait,
    test_a_waiting_ticket_can_be_cancelled,
    test_list_matches_pages_over_public_matches,
)
from tests.test_platform import (
    test_consumer_groups_share_the_game_feed_without_overlap,
    test_each_accepted_move_raises_version_by_one,
    test_error_codes,
    test_every_accepted_move_reaches_the_game_stream,
    test_finished_match_expires_and_refuses_moves,
    test_match_starts_when_last_seat_is_taken,
)
from tests.test_watch import (
    test_a_stream_cut_between_two_events_of_one_version_resumes_exactly,
    test_a_watcher_started_before_the_first_join_sees_every_join_and_the_start,
    test_out_of_range_cursors_are_refused_and_blind_nobody,
    test_resume_from_every_position_misses_nothing_and_repeats_nothing,
    test_watch_of_a_finished_match_replays_to_the_end_and_closes,
    test_watcher_on_one_replica_sees_moves_made_on_the_other,
)

# Imported, so collected here too, with this module's fixtures.
RUN_ON_CLUSTER = (
    test_match_starts_when_last_seat_is_taken,
    test_each_accepted_move_raises_version_by_one,
    test_error_codes,
    test_finished_match_expires_and_refuses_moves,
    test_every_accepted_move_reaches_the_game_stream,
    test_consumer_groups_share_the_game_feed_without_overlap,
    test_retried_request_id_returns_the_first_answer_and_applies_nothing,
    test_racing_submits_of_one_move_commit_exactly_once,
    test_many_clients_on_two_replicas_lose_and_duplicate_nothing,
    test_stale_expected_version_is_aborted_and_changes_nothing,
    test_racing_joins_fill_each_seat_once,
    test_one_request_id_racing_itself_across_replicas_commits_once,
    test_one_client_flooding_create_match_is_cut_off_at_its_limit,
    test_waiting_matches_per_client_are_capped_until_one_fills,
    test_join_match_has_a_budget_too,
    test_a_lone_player_gets_bots_after_the_wait,
    test_a_waiting_ticket_can_be_cancelled,
    test_list_matches_pages_over_public_matches,
    test_watcher_on_one_replica_sees_moves_made_on_the_other,
    test_a_watcher_started_before_the_first_join_sees_every_join_and_the_start,
    test_resume_from_every_position_misses_nothing_and_repeats_nothing,
    test_a_stream_cut_between_two_events_of_one_version_resumes_exactly,
    test_watch_of_a_finished_match_replays_to_the_end_and_closes,
    test_out_of_range_cursors_are_refused_and_blind_nobody,
    test_each_seat_gets_one_prompt_per_version_it_must_decide_with_its_legal_moves,
    test_a_multi_step_turn_answers_with_the_next_moves,
    test_a_spectator_sees_the_public_view_and_public_events_only,
    test_a_match_can_refuse_spectators,
    test_a_retried_join_gets_the_same_seat_and_token,
    test_a_replayed_move_answers_the_first_answer_whole,
)
GAMES = ["happy_mochi", "mori"]  # the ones the tests above play


# These override conftest's fixtures of the same names for this module only.
@pytest.fixture(scope="module")
async def cluster(redis_cluster: RedisClusterProcesses) -> AsyncIterator[Cluster]:
    async with running_services(redis_cluster.url, games=GAMES) as services:
        yield services


@pytest.fixture(scope="module")
def redis_url(redis_cluster: RedisClusterProcesses) -> str:
    return redis_cluster.url


@pytest.fixture(scope="module")
async def lobby_cluster(redis_cluster: RedisClusterProcesses) -> AsyncIterator[Cluster]:
    async with running_services(
        redis_cluster.url,
        ["happy_mochi"],
        gateways=2,
        bot_think_ms=0,
        scheduler_tick_ms=50,
        scheduler_lease_ms=1000,
    ) as services:
        yield services


@pytest.fixture(scope="module")
async def redis_client(redis_cluster: RedisClusterProcesses) -> AsyncIterator[RedisClient]:
    client = connect(redis_cluster.url)
    yield client
    await client.aclose()


def test_cluster_urls_name_their_nodes_and_bad_ones_stop_the_service(monkeypatch):
    target = parse_cluster_url("rediss+cluster://app:p%40ss@10.0.0.1:7000,[::1]:7001")
    assert target.nodes == (("10.0.0.1", 7000), ("::1", 7001))
    assert (target.tls, target.username, target.password) == (True, "app", "p@ss")
    assert not parse_cluster_url("redis+cluster://h:1").tls
    for bad in ("redis+cluster://a:1,b", "redis+cluster://a:1/3", "http://a:1"):
        with pytest.raises(RedisUrlError):
            check_url(bad)
    monkeypatch.setenv("MOGAMES_TOKEN_SECRET", "x" * 16)
    monkeypatch.setenv("MOGAMES_REDIS_URL", "redis+cluster://a:1,b")
    with pytest.raises(SettingsError, match="MOGAMES_REDIS_URL cluster nodes must be host:port"):
        ServiceSettings.from_env("mori")


async def test_the_services_really_run_on_a_cluster(cluster, redis_client, redis_cluster):
    """Matches land on every master: the tests above crossed slots and nodes."""
    client = cluster.client("happy_mochi")
    created = [(await client.create(2, seed=n)).match_id for n in range(24)]
    masters = {redis_cluster.master_of_key(keys.match(match_id)).port for match_id in created}
    assert len(masters) == 3
    for match_id in created:
        assert await redis_client.hget(keys.match(match_id), "rev") == b"0"


@pytest.mark.parametrize("target", ["single Redis", "Redis Cluster"])
async def test_a_quiet_pubsub_waits_past_the_socket_timeout_and_hears_every_master(target, redis_cluster):
    """The watch hub's subscription: one connection hears notifications of matches in every
    slot, and a long silence is not an error."""
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(running_redis()) if target == "single Redis" else redis_cluster.url
        await hears_every_channel_after_a_silence(url)


async def hears_every_channel_after_a_silence(url: str) -> None:
    client = connect(url)
    await client.ping()
    subscription = pubsub(client)
    channels = [keys.match(f"quiet-{n}") for n in range(12)]  # spread over every master
    await subscription.subscribe(*channels)
    heard: list[bytes] = []

    async def listen() -> None:
        while len(heard) < len(channels):
            message = await subscription.get_message(timeout=None)
            if message and message["type"] == "message":
                heard.append(message["channel"])

    listener = asyncio.create_task(listen())
    try:
        await asyncio.sleep(SOCKET_TIMEOUT_S + 0.5)
        assert not listener.done()  # still waiting, no timeout
        for channel in channels:
            await client.publish(channel, "1")
        await asyncio.wait_for(listener, timeout=10)
        assert sorted(heard) == sorted(c.encode() for c in channels)
    finally:
        listener.cancel()
        await subscription.aclose()
        await client.aclose()


# -- a master dies during play ---------------------------------------------------------

FAILOVER_GAME = "happy_mochi"
MATCHES = 6
MOVES_BEFORE_KILL = 4
MOVES_AFTER_FAILOVER = 3
# With the test cluster's cluster-node-timeout (1 s; deploy/redis_cluster.py), on a loaded
# machine: docs/operations.md, "Redis in production".
FAILOVER_WITHIN_S = 10
UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


class Served:
    """Calls retried on UNAVAILABLE (the same request, so the same request id)."""

    def __init__(self) -> None:
        self.unavailable_at: list[float] = []

    async def __call__(self, call: Callable[[], Awaitable[Any]]) -> Any:
        for _ in range(200):
            try:
                return await call()
            except grpc.aio.AioRpcError as error:
                if error.code() != UNAVAILABLE:
                    raise
                self.unavailable_at.append(time.monotonic())
                await asyncio.sleep(0.1)
        raise AssertionError("still UNAVAILABLE after 20 s")


async def play(
    client: Any,
    started: StartedMatch,
    served: Served,
    acknowledged: list[tuple[int, float]],
    stop: asyncio.Event,
    moves: int | None = None,
) -> None:
    """Moves until ``stop`` (or ``moves`` of them, or the end): each acknowledged version and when."""
    while not stop.is_set() and (moves is None or len(acknowledged) < moves):
        match = await served(lambda: client.match(started.match_id))
        if match.status != common_pb2.IN_PROGRESS:
            return
        seat = match.active_seats[0]
        token = started.tokens[seat]
        legal = await served(lambda t=token: client.legal_moves(started.match_id, t))
        request_id = uuid.uuid4().hex
        move = legal.moves[0]
        answer = await served(
            lambda t=token, m=move, r=request_id: client.submit(started.match_id, t, m, request_id=r)
        )
        acknowledged.append((answer.version, time.monotonic()))


async def wait_for(
    condition: Callable[[], bool], what: str, timeout_s: float = 30, tasks: Collection[asyncio.Task[Any]] = ()
) -> None:
    """Until ``condition``; a task of ``tasks`` that failed meanwhile fails this with its error."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        for task in tasks:
            if task.done() and task.exception() is not None:
                raise AssertionError(f"{what}: a player failed") from task.exception()
        assert time.monotonic() < deadline, f"{what}: not after {timeout_s} s"
        await asyncio.sleep(0.05)


async def watch_versions(client: Any, match_id: str, seen: list[int]) -> None:
    """Each version of the match's history after its start (version 0: the joins) as a
    spectator sees it (not prompts, not heartbeats)."""
    stream = client.watch(match_id, after_version=0)
    try:
        async for event in stream:
            if event.seq and event.version and (not seen or seen[-1] != event.version):
                seen.append(event.version)
    finally:
        stream.cancel()


async def test_a_master_killed_during_play_loses_and_duplicates_no_move():
    with running_redis_cluster() as nodes:
        async with running_services(nodes.url, games=[FAILOVER_GAME]) as services:
            clients = [services.replica_client(FAILOVER_GAME, n) for n in (0, 1)]
            matches = [await start_match(clients[n % 2], 2, seed=n) for n in range(MATCHES)]
            by_master: dict[int, list[str]] = {}
            for m in matches:
                by_master.setdefault(nodes.master_of_key(keys.match(m.match_id)).port, []).append(m.match_id)
            victim_port, on_victim = max(by_master.items(), key=lambda item: len(item[1]))
            victim = next(n for n in nodes.nodes if n.port == victim_port)

            acknowledged: dict[str, list[tuple[int, float]]] = {m.match_id: [] for m in matches}
            served, stop = Served(), asyncio.Event()
            players = [
                asyncio.create_task(play(clients[n % 2], m, served, acknowledged[m.match_id], stop))
                for n, m in enumerate(matches)
            ]
            # Watchers on both replicas of the matches that lose their master: their hubs'
            # subscriptions may sit on the node that dies.
            watched = {(m, r): [] for m in on_victim for r in (0, 1)}
            watchers = [
                asyncio.create_task(watch_versions(clients[r], m, v)) for (m, r), v in watched.items()
            ]
            await wait_for(
                lambda: all(len(acknowledged[m]) >= MOVES_BEFORE_KILL for m in on_victim),
                "play",
                tasks=players,
            )
            victim.process.kill()
            killed_at = time.monotonic()
            await asyncio.to_thread(nodes.wait_until_healthy)
            healthy_at = time.monotonic()
            # Counted from the kill, not from the cluster reporting healthy: the matches move
            # again as soon as a replica is promoted, which can be long before that report,
            # and a short match may end meanwhile. Each player has at most one move in flight
            # when the master dies; every later one was committed after the failover.
            await wait_for(
                lambda: all(
                    sum(at > killed_at for _, at in acknowledged[m]) >= MOVES_AFTER_FAILOVER + 1
                    for m in on_victim
                ),
                "play after the failover",
                tasks=players,
            )
            stop.set()
            await asyncio.gather(*players)
            await wait_for(
                lambda: all(v[-1:] == [len(acknowledged[m])] for (m, _), v in watched.items()),
                f"every watcher at the last version {watched}",
            )
            for watcher in watchers:
                watcher.cancel()
            for (match_id, _), versions in watched.items():
                assert versions == list(range(1, len(acknowledged[match_id]) + 1)), "watchers missed nothing"

            assert victim_port not in nodes.roles()
            store = connect(nodes.url)
            try:
                for m in matches:
                    versions = [version for version, _ in acknowledged[m.match_id]]
                    assert versions == list(range(1, len(versions) + 1))
                    stored = {e.version for e in await stored_events(store, m.match_id, FAILOVER_GAME)} - {0}
                    assert stored == set(versions), "every acknowledged move is stored, once"
                    assert (await clients[0].match(m.match_id)).version == len(versions)
            finally:
                await store.aclose()
            # Refused only while the slot had no master (and while clients found the new one).
            assert all(killed_at <= at <= healthy_at + 5 for at in served.unavailable_at)
            # Moves resumed within the failover time docs/operations.md gives.
            for m in on_victim:
                resumed_at = min(at for _, at in acknowledged[m] if at > killed_at)
                assert resumed_at - killed_at < FAILOVER_WITHIN_S
