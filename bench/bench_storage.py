"""What each storage device saves and what it costs, game by game (docs/storage.md).

    python -m bench.bench_storage [--games happy_mochi,more] [--commits 704]

Plays one seeded match of random legal moves per game (no Redis: the engine, then the
store's own packing functions on its commits) and prints, per device, the bytes it saves
and the CPU it takes (``time.process_time``, per commit or per message):

- event bodies stored as MatchEvent bytes against MessagePack maps (the tail's size);
- the archive: chunks of 16 commits with versions as rises, the game's shipped dictionary
  and merging into 128, each against the same archive without that one device;
- the record as MessagePack against JSON;
- a sent event parsed from its stored bytes against converted from its dict;
- a move converted by the plan per message type against ``json_format``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
import zlib
from collections.abc import Callable
from typing import Any

import msgspec

from bench.markdown import table
from services.catalog import GAME_PACKAGES, rules_module
from services.runtime.codec import generated_modules
from services.runtime.event_packing import EventPacking
from services.runtime.history_chunks import (
    first_plain,
    game_dictionary,
    merge_chunks,
    pack_chunk,
    plain_chunk,
    unpack_chunk,
)
from services.runtime.proto_dicts import _json_format_dict, from_dict, to_dict
from services.runtime.record import encode_state
from services.runtime.store import CHUNK, MERGE

_pack = msgspec.msgpack.encode
_unpack = msgspec.msgpack.decode


def cpu_us(work: Callable[[], object], repeat: int) -> float:
    """CPU µs per call of ``work``, best of three runs of ``repeat`` calls."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        for _ in range(repeat):
            work()
        best = min(best, time.process_time() - started)
    return best / repeat * 1e6


def played(game: str, commits: int, seed: int) -> tuple[list[list[Any]], list[dict[str, Any]], Any]:
    """The commits of a seeded random match (as tail elements decode, bodies as dicts), its
    moves, and its last state."""
    rules = rules_module(game)
    rng = random.Random(seed)
    state = rules.State.new(rules.GAME.min_players, seed, {})
    stored: list[list[Any]] = []
    moves: list[dict[str, Any]] = []
    version = 0
    while len(stored) < commits and not state.is_over():
        seat = rng.choice(list(state.active_seats()))
        move = rng.choice(state.legal_moves(seat))
        moves.append(move)
        events = state.apply(seat, move)
        version += 1
        body = [[None if e.to is None else list(e.to), e.body] for e in events]
        stored.append([version, 1, body, [list(state.active_seats()), "IN_PROGRESS"]])
    return stored, moves, state


def as_bytes(commits: list[list[Any]], packing: EventPacking) -> list[list[Any]]:
    return [[v, s, [[to, packing.pack(body)] for to, body in events], a] for v, s, events, a in commits]


def archive_bytes(commits: list[list[Any]], game: str, *, rises: bool, shipped: bool, merge: bool) -> int:
    """The archive of ``commits`` after its first chunk, in bytes: chunks of CHUNK commits
    (merged by CHUNK * MERGE when ``merge``), with or without versions as rises and the
    game's shipped dictionary; every chunk's dictionary ends with the first chunk."""
    first = plain_chunk(commits[:CHUNK]) if rises else _pack(commits[:CHUNK])
    preset = (game_dictionary(game) if shipped else b"") + first
    size = CHUNK if not merge else CHUNK * MERGE
    level = 9 if merge else zlib.Z_DEFAULT_COMPRESSION
    total = 0
    for start in range(CHUNK, len(commits) - size + 1, size):
        part = commits[start : start + size]
        raw = plain_chunk(part) if rises else _pack(part)
        compressor = zlib.compressobj(level, zdict=preset)
        total += len(compressor.compress(raw) + compressor.flush())
    return total


def measure(game: str, commits: int, seed: int) -> dict[str, Any]:
    package = rules_module(game).GAME.package
    packing = EventPacking(package)
    pb2 = generated_modules(package)[0]
    decoded, moves, state = played(game, commits, seed)
    packed = as_bytes(decoded, packing)
    n = len(decoded)
    # Merging needs CHUNK * MERGE commits after the first chunk: a shorter match never merges.
    merges = (n - CHUNK) >= CHUNK * MERGE
    span = CHUNK * MERGE if merges else CHUNK
    archived = (n - CHUNK) // span * span
    whole = packed[: CHUNK + archived]

    def per_commit(**devices: bool) -> float:
        return archive_bytes(whole, game, **{"merge": merges, **devices}) / archived

    elements = [_pack(c) for c in packed]
    first_chunk = pack_chunk(elements[:CHUNK], None, game)
    chunk = pack_chunk(elements[CHUNK : 2 * CHUNK], first_chunk, game)
    plain_first = first_plain(first_chunk)
    bodies = [body for c in decoded for _, body in c[2]]
    body_bytes = [packing.pack(body) for body in bodies]
    record = {"state": encode_state(state), "seats": ["a", "b"], "version": n, "status": "IN_PROGRESS"}
    as_json = {**record, "state": state.to_dict()}
    move_messages = [from_dict(pb2.Move, move) for move in moves[:200]]
    return {
        "game": game,
        "commits": n,
        "tail maps B": sum(len(_pack(c)) for c in decoded) / n,
        "tail bytes B": sum(map(len, elements)) / n,
        "pack maps µs": cpu_us(lambda: [_pack(c) for c in decoded[:50]], 20) / 50,
        "pack bytes µs": cpu_us(
            lambda: [
                _pack(
                    [
                        c[0],
                        c[1],
                        [[t, from_dict(pb2.MatchEvent, b).SerializeToString()] for t, b in c[2]],
                        c[3],
                    ]
                )
                for c in decoded[:50]
            ],
            20,
        )
        / 50,
        "archive B/commit": per_commit(rises=True, shipped=True),
        "no rises": per_commit(rises=False, shipped=True),
        "no dictionary": per_commit(rises=True, shipped=False),
        "no merging": per_commit(rises=True, shipped=True, merge=False) if merges else "-",
        "chunk µs/commit": cpu_us(lambda: pack_chunk(elements[CHUNK : 2 * CHUNK], first_chunk, game), 20)
        / CHUNK,
        "merge µs/commit": cpu_us(
            lambda: merge_chunks([chunk] * (MERGE - 1), elements[CHUNK : 2 * CHUNK], first_chunk, game), 3
        )
        / (CHUNK * MERGE),
        "read µs/commit": cpu_us(lambda: unpack_chunk(chunk, plain_first), 50) / CHUNK,
        "record msgpack B": len(_pack(record)),
        "record JSON B": len(json.dumps(as_json, separators=(",", ":"))),
        "event parse µs": cpu_us(lambda: [pb2.MatchEvent.FromString(b) for b in body_bytes[:100]], 20) / 100,
        "event convert µs": cpu_us(lambda: [from_dict(pb2.MatchEvent, b) for b in bodies[:100]], 20) / 100,
        "move plan µs": cpu_us(lambda: [to_dict(m) for m in move_messages], 20) / len(move_messages),
        "move json_format µs": cpu_us(lambda: [_json_format_dict(m) for m in move_messages], 20)
        / len(move_messages),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", default=",".join(GAME_PACKAGES), help="comma-separated short names")
    parser.add_argument("--commits", type=int, default=CHUNK + 5 * CHUNK * MERGE, help="commits per match")
    parser.add_argument("--seed", type=int, default=20261204)
    args = parser.parse_args()
    rows = [measure(game, args.commits, args.seed) for game in args.games.split(",")]
    groups = [
        ["game", "commits", "tail maps B", "tail bytes B", "pack maps µs", "pack bytes µs"],
        [
            "game",
            "archive B/commit",
            "no rises",
            "no dictionary",
            "no merging",
            "chunk µs/commit",
            "merge µs/commit",
            "read µs/commit",
        ],
        [
            "game",
            "record msgpack B",
            "record JSON B",
            "event parse µs",
            "event convert µs",
            "move plan µs",
            "move json_format µs",
        ],
    ]
    for columns in groups:
        cells = [[_cell(row[c]) for c in columns] for row in rows]
        print(table(columns, cells))
        print()


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"
    return str(value)


if __name__ == "__main__":
    main()
