"""A match's history stays exact when its tail is compacted into the archive
(docs/storage.md): replay from version 0, resume after every (version, seq), and retried request
ids answered whole, on a real Redis, for several games and two replicas."""

from __future__ import annotations

import contextlib
import random
import uuid
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from deploy.history_dictionaries import COMMITS, MAX_BYTES, dictionary, sample_commits
from services.catalog import GAME_PACKAGES, rules_module
from services.runtime import keys
from services.runtime.errors import Aborted, FailedPrecondition
from services.runtime.event_packing import packing_for
from services.runtime.history import KEEP_RECENT, StoredCommit, StoredEvent
from services.runtime.history_chunks import (
    UnknownDictionary,
    dictionary_path,
    first_plain,
    game_dictionary,
    is_merged,
    merge_chunks,
    pack_chunk,
    plain_chunk,
    unpack_chunk,
)
from services.runtime.matches import FINISHED, MatchService, MoveResult
from services.runtime.redis_client import connect
from services.runtime.store import CHUNK, DIGEST_BYTES, MERGE, RECORD_BYTES, REQUEST_WINDOW, MatchStore
from tests.conftest import service_settings

Position = tuple[int, int]
# What the shipped dictionaries save at least, over a match's first few chunks.
SMALLER = 0.9

SERVICES = Path(__file__).resolve().parents[1] / "services"


@contextlib.asynccontextmanager
async def replicas(game: str, redis_url: str, count: int = 2) -> AsyncIterator[list[MatchService]]:
    """``count`` replicas of one game's service on one Redis, each with its own store."""
    clients = [connect(redis_url) for _ in range(count)]
    try:
        settings = service_settings(game, redis_url)
        yield [MatchService(rules_module(game), MatchStore(c, game), settings) for c in clients]
    finally:
        for client in clients:
            await client.aclose()


async def start(service: MatchService, players: int, seed: int) -> tuple[str, dict[int, str]]:
    facts = await service.create_match(players, seed, {})
    tokens = {}
    for n in range(players):
        joined = await service.join_match(facts.match_id, f"p{n}")
        tokens[joined.seat] = joined.token
    return facts.match_id, tokens


def positions(events: list[StoredEvent]) -> list[Position]:
    return [(e.version, e.seq) for e in events]


def assert_contiguous(history: list[StoredEvent], version: int) -> None:
    """Versions 0..``version`` each once, their events numbered 1, 2, ... without a gap."""
    assert positions(history) == sorted(set(positions(history))), "out of order or twice"
    for v in range(version + 1):
        seqs = [e.seq for e in history if e.version == v]
        assert seqs == list(range(1, len(seqs) + 1)) and seqs, f"version {v}: seqs {seqs}"


async def play(
    services: list[MatchService], match_id: str, tokens: dict[int, str], seed: int, moves: int
) -> tuple[list[StoredEvent], dict[str, tuple[int, dict[str, Any], MoveResult]]]:
    """Random legal moves with request ids, on replicas taken at random; after each commit,
    the stored history is the one before plus exactly that commit's events and the tail
    stays short. Returns the history and each request id's seat, move and first answer."""
    rng = random.Random(seed)
    store = services[0].store
    history = await store.history(match_id)
    answers: dict[str, tuple[int, dict[str, Any], MoveResult]] = {}
    for _ in range(moves):
        service = rng.choice(services)
        record = await store.load(match_id)
        assert record is not None
        if record.status == FINISHED:
            break
        state = service.decode_state(record.state)
        seat = rng.choice(list(state.active_seats()))
        request_id = uuid.uuid4().hex
        move = rng.choice(state.legal_moves(seat))
        answer = await service.submit_move(match_id, tokens[seat], move, None, request_id)
        answers[request_id] = (seat, move, answer)
        now = await store.history(match_id)
        assert now[: len(history)] == history, "a commit changed or lost earlier history"
        added = now[len(history) :]
        assert {e.version for e in added} == {answer.version}
        assert [e for e in added if e.visible_to(seat)] == answer.events
        history = now
        # Each replica may hold the chunk handed out until its next commit on the match.
        assert await store.redis.llen(keys.tail(match_id)) <= CHUNK + KEEP_RECENT + len(services) - 1
    return history, answers


async def watched(service: MatchService, match_id: str, token: str | None, cursor: dict[str, Any]) -> list:
    """What ``WatchMatch`` streams of a finished match from ``cursor`` (it then closes)."""
    return [e async for e in service.watch(match_id, token, cursor.get("version"), cursor.get("seq", 0))]


@pytest.mark.parametrize(("game", "players", "seed"), [("mori", 3, 4), ("momiji", 2, 5)])
async def test_a_finished_match_replays_and_resumes_exactly_after_compaction(
    redis_url: str, game: str, players: int, seed: int
) -> None:
    async with replicas(game, redis_url) as services:
        match_id, tokens = await start(services[0], players, seed)
        history, answers = await play(services, match_id, tokens, seed, moves=400)
        record = await services[0].store.load(match_id)
        assert record is not None and record.status == FINISHED
        assert_contiguous(history, record.version)
        assert await services[0].store.redis.llen(keys.archive(match_id)) >= 3, "compacted"
        watcher = services[1]
        for seat, token in [(None, None), *tokens.items()]:
            visible = [e for e in history if e.visible_to(seat)]
            assert await watched(watcher, match_id, token, {}) == visible
            for v in range(record.version + 1):
                from_version = [e for e in visible if e.version >= v]
                assert await watched(watcher, match_id, token, {"version": v}) == from_version
            for position in positions(history):
                version, seq = position
                # Past the end, the end once more: every stream ends with match_ended.
                after = [e for e in visible if (e.version, e.seq) > position] or visible[-1:]
                assert await watched(watcher, match_id, token, {"version": version, "seq": seq}) == after
        # A retried request id of the match's last REQUEST_WINDOW moves, archived or not,
        # gets its first answer whole; an older one is a new move, refused: the match is
        # over. Neither applies anything.
        assert len(answers) > REQUEST_WINDOW
        for request_id, (seat, move, first) in list(answers.items())[-REQUEST_WINDOW:]:
            again = await services[1].submit_move(match_id, tokens[seat], move, None, request_id)
            assert (again.version, again.events, again.active_seats, again.status) == (
                first.version,
                first.events,
                first.active_seats,
                first.status,
            )
        request_id, (seat, move, _) = next(iter(answers.items()))
        with pytest.raises(FailedPrecondition, match="match_over"):
            await services[1].submit_move(match_id, tokens[seat], move, None, request_id)
        assert await services[0].store.history(match_id) == history


async def test_a_live_match_resumes_at_every_position_after_compaction(redis_url: str) -> None:
    async with replicas("happy_mochi", redis_url) as services:
        match_id, tokens = await start(services[0], 2, 11)
        history, answers = await play(services, match_id, tokens, 11, moves=3 * CHUNK + 7)
        store = services[1].store
        assert await store.redis.llen(keys.archive(match_id)) >= 2, "compacted"
        for position in [(0, 0), *positions(history)]:
            events, _ = await store.events_after(match_id, position, with_record=False)
            assert events == [e for e in history if (e.version, e.seq) > position], position
        for version in range(history[-1].version + 1):
            assert await store.events_of_version(match_id, version) == [
                e for e in history if e.version == version
            ]
        request_id, (seat, move, first) = next(iter(answers.items()))
        again = await services[0].submit_move(match_id, tokens[seat], move, None, request_id)
        assert (again.version, again.events, again.active_seats, again.status) == (
            first.version,
            first.events,
            first.active_seats,
            first.status,
        )
        assert await store.history(match_id) == history, "the retry applied nothing"


async def test_a_read_racing_a_compaction_misses_and_repeats_nothing(redis_url: str) -> None:
    """A reader takes the tail, then a commit archives part of it before the reader looks
    at the archive: the events come once each."""
    async with replicas("happy_mochi", redis_url, count=1) as services:
        store = services[0].store
        match_id, tokens = await start(services[0], 2, 12)
        await play(services, match_id, tokens, 12, moves=CHUNK + KEEP_RECENT - 3)
        old_tail = await store.redis.lrange(keys.tail(match_id), 0, -1)
        archived = await store.redis.llen(keys.archive(match_id))
        history, _ = await play(services, match_id, tokens, 13, moves=CHUNK)
        assert await store.redis.llen(keys.archive(match_id)) > archived, "a chunk was archived meanwhile"
        first = msgspec.msgpack.decode(old_tail[0])
        before = (first[0], first[1] - 1) if first[1] > 1 else (first[0] - 1, 2**64 - 1)
        commits = await store._commits_after(match_id, before, old_tail)
        events = [e for c in commits for e in c.events if (e.version, e.seq) > before]
        # Everything after ``before``, in order, at least up to where the tail read ended.
        assert events == [e for e in history if (e.version, e.seq) > before][: len(events)]
        last = msgspec.msgpack.decode(old_tail[-1])
        assert positions(events)[-1] >= (last[0], last[1] + len(last[2]) - 1)


def _inflate(chunk: bytes, preset: bytes = b"") -> bytes:
    decompressor = zlib.decompressobj(zdict=preset) if preset else zlib.decompressobj()
    return decompressor.decompress(chunk) + decompressor.flush()


def _deflate(plain: bytes, preset: bytes = b"") -> bytes:
    if not preset:
        return zlib.compress(plain)
    compressor = zlib.compressobj(zdict=preset)
    return compressor.compress(plain) + compressor.flush()


async def _archived(redis_client, game: str, match_id: str) -> tuple[list[bytes], list[bytes]]:
    """The match's archive chunks as stored, and each decompressed (the first with the
    game's shipped dictionary, the others with it followed by the first)."""
    chunks = await redis_client.lrange(keys.archive(match_id), 0, -1)
    shipped = game_dictionary(game)
    first = _inflate(chunks[0], shipped)
    return chunks, [first, *(_inflate(chunk, shipped + first) for chunk in chunks[1:])]


async def test_a_long_match_merges_its_chunks_and_replays_exactly(redis_url: str, redis_client) -> None:
    """Every MERGE chunks after the first become one archive element, in fewer bytes than
    those chunks, on two replicas; replay and resume from every position stay exact."""
    async with replicas("morisi", redis_url) as services:
        match_id, tokens = await start(services[0], 2, 31)
        history, _ = await play(
            services, match_id, tokens, 31, moves=(2 + 2 * MERGE) * CHUNK + KEEP_RECENT + 1
        )
        chunks, plains = await _archived(redis_client, "morisi", match_id)
        merged = [is_merged(chunk) for chunk in chunks]
        commits = [unpack_chunk(chunk, plains[0]) for chunk in chunks]
        assert merged.count(True) == 2, f"merged: {merged}"
        # The first as it was; then the merged ones, then fewer than MERGE unmerged ones.
        assert merged == [False, True, True] + [False] * (len(chunks) - 3)
        assert 0 < len(chunks) - 3 < MERGE
        assert [len(c) for c in commits] == [CHUNK, CHUNK * MERGE, CHUNK * MERGE] + [CHUNK] * (
            len(chunks) - 3
        )
        # Against the same commits archived 16 at a time, as before the merging.
        packed = [msgspec.msgpack.encode(commit) for chunk in commits[1:3] for commit in chunk]
        unmerged = [
            pack_chunk(packed[i : i + CHUNK], chunks[0], "morisi") for i in range(0, len(packed), CHUNK)
        ]
        assert sum(map(len, chunks[1:3])) < 0.85 * sum(map(len, unmerged))
        store = services[1].store
        for position in [(0, 0), *positions(history)]:
            events, _ = await store.events_after(match_id, position, with_record=False)
            assert events == [e for e in history if (e.version, e.seq) > position], position
        assert await services[0].store.history(match_id) == history


async def test_chunks_of_a_game_without_a_shipped_dictionary_read(redis_url: str, redis_client) -> None:
    """A game that ships no dictionary compresses its first chunk alone and every later one
    with the first as its dictionary: such an archive reads the same."""
    async with replicas("mori", redis_url, count=1) as services:
        store = services[0].store
        match_id, tokens = await start(services[0], 3, 15)
        history, _ = await play(services, match_id, tokens, 15, moves=3 * CHUNK + KEEP_RECENT)
        chunks, plains = await _archived(redis_client, "mori", match_id)
        assert len(chunks) >= 3
        for index, plain in enumerate(plains):
            preset = plains[0] if index else b""
            earlier = _deflate(plain, preset)
            assert earlier != chunks[index]
            await redis_client.lset(keys.archive(match_id), index, earlier)
        assert await store.history(match_id) == history


# A dictionary is optional (docs/adding-a-game.md): the games that ship one.
@pytest.mark.parametrize("game", [game for game in GAME_PACKAGES if dictionary_path(game).is_file()])
async def test_the_shipped_dictionary_makes_a_match_archive_smaller(
    redis_url: str, redis_client, game: str
) -> None:
    """A match (another seed than the dictionary's sample) archives in fewer bytes than the
    earlier layout (first chunk alone, later ones with the first as dictionary) made of
    the same commits, and replays the same."""
    assert game_dictionary(game), f"{dictionary_path(game)} is empty"
    async with replicas(game, redis_url, count=1) as services:
        players = rules_module(game).GAME.min_players
        match_id, tokens = await start(services[0], players, 21)
        history, _ = await play(services, match_id, tokens, 21, moves=4 * CHUNK + KEEP_RECENT)
        chunks, plains = await _archived(redis_client, game, match_id)
        assert len(chunks) >= 3, "the match ended before three chunks were archived"
        earlier = [_deflate(plains[0]), *(_deflate(plain, plains[0]) for plain in plains[1:])]
        stored, before = sum(map(len, chunks)), sum(map(len, earlier))
        assert stored < SMALLER * before, f"{stored} bytes against {before} without the dictionary"
        assert await services[0].store.history(match_id) == history


def test_a_chunk_writes_each_version_as_its_rise_and_reads_it_back_whole() -> None:
    """Versions after a chunk's first are stored as -(1 + rise), and merged chunks (each
    starting absolute) read back the same."""
    versions = [7, 7, 8, 9, 9, 12, 13]
    elements = [msgspec.msgpack.encode([v, 1, [[None, b"\x01"]], None]) for v in versions]
    decoded = [msgspec.msgpack.decode(e) for e in elements]
    assert [c[0] for c in msgspec.msgpack.decode(plain_chunk(decoded))] == [7, -1, -2, -2, -1, -4, -2]
    first = pack_chunk(elements[:2], None, "happy_mochi")
    later = pack_chunk(elements[2:5], first, "happy_mochi")
    plain = first_plain(first)
    assert [c[0] for c in unpack_chunk(later, plain)] == versions[2:5]
    merged = merge_chunks([later], elements[5:], first, "happy_mochi")
    assert [c[0] for c in unpack_chunk(merged, plain)] == versions[2:]


def test_a_chunk_naming_an_unknown_dictionary_is_refused_by_name() -> None:
    chunk = _deflate(msgspec.msgpack.encode([[1, 1, [], None]]), b"a dictionary nobody ships")
    with pytest.raises(UnknownDictionary, match="dictionary this server lacks"):
        unpack_chunk(chunk, b"")


async def test_a_match_hash_stays_one_listpack(redis_url: str, redis_client) -> None:
    """With the Redis settings the project runs (deploy/redis_server.py TUNING) a match's
    rev and document are one listpack, not a hash table: ~230 bytes less a match."""
    async with replicas("happy_mochi", redis_url, count=1) as services:
        match_id, tokens = await start(services[0], 2, 18)
        await play(services, match_id, tokens, 18, moves=40)
        encoding = await redis_client.object("encoding", keys.match(match_id))
        assert encoding in (b"listpack", b"ziplist"), encoding


async def test_a_request_digest_counts_only_at_a_record_start(redis_url: str, redis_client) -> None:
    """Records are 8-byte digests and 4-byte versions back to back: a digest's bytes that
    straddle two records are not a hit."""
    async with replicas("happy_mochi", redis_url, count=1) as services:
        store = services[0].store
        match_id, _ = await start(services[0], 2, 16)
        first, second = b"\x01" * DIGEST_BYTES, b"\x02" * DIGEST_BYTES
        records = first + (7).to_bytes(4, "big") + second + (9).to_bytes(4, "big")
        await redis_client.set(keys.requests(match_id), records)
        straddling = records[6 : 6 + DIGEST_BYTES]
        for digest, version in [(first, 7), (second, 9), (straddling, None), (b"\x03" * DIGEST_BYTES, None)]:
            _, found = await store.load_for_request(match_id, digest)
            assert found == version, digest


async def test_a_match_keeps_the_request_records_of_its_last_moves_only(redis_url: str) -> None:
    """The records stop growing at REQUEST_WINDOW moves: the last ones' retries still get
    their first answer; an older retry is a new move, which its stale expected version
    refuses, applying nothing."""
    async with replicas("happy_mochi", redis_url) as services:
        store = services[0].store
        match_id, tokens = await start(services[0], 2, 17)
        history, answers = await play(services, match_id, tokens, 17, moves=REQUEST_WINDOW + 9)
        assert len(answers) == REQUEST_WINDOW + 9, "the match ended before the window filled"
        assert await store.redis.strlen(keys.requests(match_id)) == REQUEST_WINDOW * RECORD_BYTES
        for request_id, (seat, move, first) in list(answers.items())[-REQUEST_WINDOW:]:
            again = await services[1].submit_move(match_id, tokens[seat], move, None, request_id)
            assert (again.version, again.events) == (first.version, first.events)
        request_id, (seat, move, first) = next(iter(answers.items()))
        with pytest.raises(Aborted):
            await services[1].submit_move(match_id, tokens[seat], move, first.version - 1, request_id)
        assert await store.history(match_id) == history, "no retry applied anything"


async def test_the_dictionary_tool_samples_whole_matches_as_stored(redis_url: str) -> None:
    """``python -m deploy.history_dictionaries`` (for a game without a dictionary yet): Mori's
    matches are short, so its sample is the commits of several, each from its start, and
    its dictionary holds them as chunks do, within what deflate looks back over."""
    matches = await sample_commits("mori", redis_url)
    assert len(matches) > 1 and sum(map(len, matches)) >= COMMITS, "one match only"
    packing = packing_for("mori")
    for match in matches:
        commits = [StoredCommit.decode(list(commit), packing) for commit in match]
        # Version 0 is the creation and the joins, a commit each; then a move a commit.
        assert (commits[0].version, commits[0].first_seq) == (0, 1)
        versions = [c.version for c in commits]
        assert versions == sorted(versions) and versions[-1] > 0 and all(c.events for c in commits)
    written = dictionary(matches)
    assert MAX_BYTES - 2000 < len(written) <= MAX_BYTES
    assert written.startswith(plain_chunk(matches[0]))
