"""Rules-engine speed, pure Python in one process: random play and the state codec per game.

    python -m bench.bench_engines [--games mori,happy_mochi] [--steps 20000] [--players mori=4]

Per game it prints a Markdown table row (CPU time, ``time.process_time``):

* steps/s: random play, one step = ``legal_moves(seat)`` + ``apply`` of a random legal
  move (a finished match is replaced by a new one, its ``State.new`` included in the time);
* the state codec the store uses (services/runtime/store.py: ``encode_state``, the
  MessagePack of the State Struct, and ``StateDecoder``, typed by its class), over states
  sampled along that play: encode, decode, the round trip (µs each) and the encoded size in
  bytes (mean and largest);
* view: one ``view(seat)`` of the seat to move, over the same states.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.markdown import table
from services.catalog import GAME_PACKAGES, rules_module
from services.runtime.record import StateDecoder, encode_state

SAMPLE_EVERY = 37  # steps between sampled states (prime, so phases of a turn vary)
MAX_SAMPLES = 300


@dataclass
class Figures:
    game: str
    players: int
    steps: int
    matches: int
    steps_per_s: float
    encode_us: float
    decode_us: float
    round_trip_us: float
    size_mean: float
    size_max: int
    view_us: float


def cpu_us_per_call(fn: Callable[[Any], object], items: list[Any], repeat: int) -> float:
    """Mean CPU microseconds of ``fn(item)`` over ``items``, each called ``repeat`` times."""
    start = time.process_time()
    for _ in range(repeat):
        for item in items:
            fn(item)
    return (time.process_time() - start) * 1e6 / (repeat * len(items))


def random_play(game: str, players: int, steps: int, seed: int) -> tuple[float, int, list[Any]]:
    """(CPU seconds, matches started, sampled states) of ``steps`` random steps."""
    state_class = rules_module(game).State
    rng = random.Random(seed)
    samples: list[Any] = []
    matches = 1
    start = time.process_time()
    state = state_class.new(players, seed, {})
    for step in range(steps):
        if state.is_over():
            matches += 1
            state = state_class.new(players, seed + matches, {})
        seat = rng.choice(state.active_seats())
        state.apply(seat, rng.choice(state.legal_moves(seat)))
        if step % SAMPLE_EVERY == 0 and len(samples) < MAX_SAMPLES:
            paused = time.process_time()
            samples.append(state.to_dict())
            start += time.process_time() - paused  # sampling is not the engine's time
    elapsed = time.process_time() - start
    return elapsed, matches, [state_class.from_dict(d) for d in samples]


def measure(game: str, players: int, steps: int, seed: int) -> Figures:
    decode_state = StateDecoder(rules_module(game).State)
    elapsed, matches, states = random_play(game, players, steps, seed)
    encoded = [encode_state(s) for s in states]
    for state, data in zip(states, encoded, strict=True):
        if decode_state(data) != state:  # a codec that loses something would time nothing useful
            raise SystemExit(f"{game}: the state codec does not round-trip")
    sizes = [len(data) for data in encoded]
    repeat = max(1, 2000 // len(states))
    encode = cpu_us_per_call(encode_state, states, repeat)
    decode = cpu_us_per_call(decode_state, encoded, repeat)
    round_trip = cpu_us_per_call(lambda s: decode_state(encode_state(s)), states, repeat)
    seated = [(s, (s.active_seats() or [0])[0]) for s in states]
    view = cpu_us_per_call(lambda pair: pair[0].view(pair[1]), seated, repeat)
    return Figures(
        game=game,
        players=players,
        steps=steps,
        matches=matches,
        steps_per_s=steps / elapsed if elapsed else float("inf"),
        encode_us=encode,
        decode_us=decode,
        round_trip_us=round_trip,
        size_mean=statistics.fmean(sizes),
        size_max=max(sizes),
        view_us=view,
    )


HEADER = (
    "game",
    "players",
    "steps",
    "matches",
    "steps/s",
    "encode µs",
    "decode µs",
    "round trip µs",
    "state B",
    "max B",
    "view µs",
)


def cells(f: Figures) -> list[str]:
    return [
        f.game,
        str(f.players),
        str(f.steps),
        str(f.matches),
        f"{f.steps_per_s:,.0f}",
        f"{f.encode_us:.1f}",
        f"{f.decode_us:.1f}",
        f"{f.round_trip_us:.1f}",
        f"{f.size_mean:,.0f}",
        f"{f.size_max:,}",
        f"{f.view_us:.1f}",
    ]


def parse_players(pairs: list[str], games: list[str]) -> dict[str, int]:
    """Player count per game: the game's minimum unless ``game=N`` says otherwise."""
    players = {game: rules_module(game).GAME.min_players for game in games}
    for pair in pairs:
        game, _, count = pair.partition("=")
        if game not in players or not count.isdigit():
            raise SystemExit(f"--players takes game=N with a game of {', '.join(games)}; got {pair!r}")
        rules_module(game).GAME.check_players(int(count))
        players[game] = int(count)
    return players


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", default=",".join(GAME_PACKAGES), help="comma-separated game names")
    parser.add_argument("--steps", type=int, default=20_000, help="random steps per game")
    parser.add_argument("--players", action="append", default=[], metavar="GAME=N")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    games = [g for g in args.games.split(",") if g]
    unknown = [g for g in games if g not in GAME_PACKAGES]
    if unknown:
        parser.error(f"unknown game {unknown[0]!r}; known: {', '.join(GAME_PACKAGES)}")
    players = parse_players(args.players, games)
    print(table(HEADER, []), flush=True)
    for game in games:  # one row per game as soon as it is measured
        row = table(HEADER, [cells(measure(game, players[game], args.steps, args.seed))])
        print(row.splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
