"""A random-legal-move bot that plays any game to the end by WatchMatch prompts and SubmitMove."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import grpc
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient
from clients.retry import GIVE_UP_AFTER_S, is_transient, retried, retry_delay_s
from services.runtime.errors import stream_cut

CUT_WHILE_SENDING = "CUT_WHILE_SENDING"
# A safety net against a game that never ends; far above any real match's length.
MAX_MOVES = 50_000


class MatchDidNotEnd(RuntimeError):
    pass


class MoveRefused(RuntimeError):
    """A legal move (from the seat's own prompt) refused otherwise than as stale."""


@dataclass
class PlayedMatch:
    match_id: str
    moves: int
    scores: list[int]
    winners: list[int]
    move_latencies_s: list[float] = field(default_factory=list)
    finished: bool = False
    # For each stream a transient failure cut: seconds until the stream opened again
    # delivered its first message.
    resumed_after_s: list[float] = field(default_factory=list)
    # How each cut ended its stream: the status's code, or CUT_WHILE_SENDING when gRPC's
    # client lost the server's status to a move being sent as the stream ended.
    cut_codes: list[str] = field(default_factory=list)


async def play_match(
    client: GameClient,
    players: int,
    seed: int | None = None,
    rng: random.Random | None = None,
    until: float | None = None,
    options: dict[str, Any] | None = None,
    server_bots: int = 0,
    bot_level: str = "",
    one_stream: bool = False,
    turn_seconds: int = 0,
) -> PlayedMatch:
    """Create a match, seat ``players`` bots, and play random legal moves until it ends
    (or, with ``until``, a ``time.monotonic()`` deadline, until then). The last
    ``server_bots`` seats are the server's own bots (TableOptions.bot_seats), which play
    themselves; this client plays the others.

    Each seat plays as a live client does: one WatchMatch, and one SubmitMove per decision,
    taken from the stream's prompts (or from ``next_moves`` in a multi-step turn); with
    ``one_stream``, both on one PlayMatch stream. ``turn_seconds`` gives every decision a
    turn clock (TableOptions.turn_seconds; 0: none)."""
    rng = rng or random.Random(seed)
    table = common_pb2.TableOptions(
        bot_seats=range(players - server_bots, players), bot_level=bot_level, turn_seconds=turn_seconds
    )
    match = await retried(lambda: client.create(players, seed=seed, options=options, table=table))
    tokens = {}
    for n in range(players - server_bots):
        request_id = uuid.uuid4().hex  # a retried join is answered once
        joined = await retried(partial(client.join, match.match_id, f"bot-{n}", request_id))
        tokens[joined.seat] = joined.token
    played = PlayedMatch(match.match_id, 0, [], [])
    play_seat = _play_seat_on_stream if one_stream else _play_seat
    seats = [asyncio.create_task(play_seat(client, played, s, t, rng, until)) for s, t in tokens.items()]
    if not seats:  # server bots only: watch them play
        seats = [asyncio.create_task(_play_seat(client, played, None, None, rng, until))]
    timeout = None if until is None else max(0.0, until - time.monotonic())
    done, pending = await asyncio.wait(seats, timeout=timeout, return_when=asyncio.FIRST_EXCEPTION)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for task in done:
        task.result()  # raises what a seat raised
    final = await retried(lambda: client.match(match.match_id))
    played.finished = final.status == common_pb2.FINISHED
    played.scores, played.winners = list(final.scores), list(final.winners)
    return played


async def _play_seat(
    client: GameClient,
    played: PlayedMatch,
    seat: int | None,
    token: str | None,
    rng: random.Random,
    until: float | None,
) -> None:
    """One seat: watch from the start of play, answer every prompt, stop at the match's end
    (``token`` None: a spectator, who only waits for the end). A watch cut by a transient
    failure resumes after the last event received; a move is retried with its request id."""
    cursor = _Cursor(played)
    acted_at = -1  # the version this seat last moved to
    while True:
        stream = client.watch(played.match_id, token, after_version=cursor.version, after_seq=cursor.seq)
        try:
            async for event in stream:
                kind = event.WhichOneof("event")
                cursor.saw(event, kind)
                if kind == "match_ended":
                    return
                if kind != "prompt" or event.version <= acted_at or token is None:
                    continue  # not a decision, or one this seat already took from next_moves
                version, moves = event.version, list(event.prompt.moves)
                while moves:
                    if until is not None and time.monotonic() >= until:
                        return
                    _check_length(client, played)
                    started = time.perf_counter()
                    move, request_id = rng.choice(moves), uuid.uuid4().hex
                    try:
                        submit = partial(
                            client.submit, played.match_id, token, move, expected_version=version
                        )
                        response = await retried(partial(submit, request_id=request_id))
                    except grpc.aio.AioRpcError as error:
                        if error.code() != grpc.StatusCode.ABORTED:
                            raise
                        break  # another seat moved first: this seat's next prompt follows
                    played.move_latencies_s.append(time.perf_counter() - started)
                    played.moves += 1
                    acted_at = version = response.version
                    moves = list(response.next_moves)
            return
        except grpc.aio.AioRpcError as error:
            await cursor.after_cut(error)
        finally:
            stream.cancel()


class _Cursor:
    """Where a seat's stream resumes: after the last event of the history received. Cuts
    are waited out with the server's retry delay, for GIVE_UP_AFTER_S."""

    def __init__(self, played: PlayedMatch) -> None:
        self.version, self.seq = 0, 0
        self.cut_since: float | None = None
        self.played = played

    def heard(self) -> None:
        """A message arrived: a cut stream, if any, has resumed."""
        if self.cut_since is not None:
            self.played.resumed_after_s.append(time.monotonic() - self.cut_since)
            self.cut_since = None

    def saw(self, event: Any, kind: str | None) -> None:
        self.heard()
        if event.seq:  # prompts and heartbeats (seq 0) are no position in the history
            self.version, self.seq = event.version, event.seq

    async def after_cut(self, error: grpc.aio.AioRpcError) -> None:
        """Return once the stream may be opened again; raise ``error`` if it is no cut."""
        now = time.monotonic()
        self.played.cut_codes.append(CUT_WHILE_SENDING if stream_cut(error) else error.code().name)
        self.cut_since = self.cut_since or now
        if not is_transient(error) or now - self.cut_since > GIVE_UP_AFTER_S:
            raise error
        await asyncio.sleep(retry_delay_s(error))


def _check_length(client: GameClient, played: PlayedMatch) -> None:
    if played.moves >= MAX_MOVES:
        raise MatchDidNotEnd(f"{client.game} match {played.match_id} still running after {MAX_MOVES} moves")


async def _play_seat_on_stream(
    client: GameClient,
    played: PlayedMatch,
    seat: int | None,
    token: str | None,
    rng: random.Random,
    until: float | None,
) -> None:
    """One seat on a PlayMatch stream: the same decisions as ``_play_seat``, each move sent
    on the stream and answered there. A stream cut by a transient failure is opened again
    after the last event received, and a move it left unanswered sent again with its
    request id (answered once however often it is sent)."""
    assert token is not None
    cursor = _Cursor(played)
    acted_at = -1  # the version this seat last moved to
    decision: tuple[int, list[Any]] | None = None
    in_flight: tuple[Any, int, str] | None = None  # move, expected version, request id
    sent_at = 0.0
    while True:
        call = await retried(
            lambda: client.play(played.match_id, token, after_version=cursor.version, after_seq=cursor.seq)
        )

        async def send_next(call: Any = call) -> None:
            """The move in flight again (its answer was lost with a cut), else the next one."""
            nonlocal decision, in_flight, sent_at
            if in_flight is None:
                if decision is None:
                    return
                _check_length(client, played)
                version, moves = decision
                decision, sent_at = None, time.perf_counter()
                in_flight = (rng.choice(moves), version, uuid.uuid4().hex)
            move, version, request_id = in_flight
            await client.send_move(call, move, expected_version=version, request_id=request_id)

        try:
            await send_next()
            async for response in call:
                cursor.heard()
                ended = False
                for event in response.events:
                    kind = event.WhichOneof("event")
                    cursor.saw(event, kind)
                    ended = ended or kind == "match_ended"
                    if kind == "prompt" and event.version > acted_at:
                        decision = (event.version, list(event.prompt.moves))
                answer = response.WhichOneof("answer")
                if answer == "committed":
                    played.move_latencies_s.append(time.perf_counter() - sent_at)
                    played.moves += 1
                    acted_at = response.committed.version
                    next_moves = list(response.committed.next_moves)
                    decision = (acted_at, next_moves) if next_moves else None
                    in_flight = None
                elif answer == "refused":
                    if response.refused.code == grpc.StatusCode.UNAVAILABLE.value[0] and in_flight:
                        await asyncio.sleep(0.2)  # the store failed over: the same move again
                        await send_next()
                        continue
                    if response.refused.code != grpc.StatusCode.ABORTED.value[0]:
                        raise MoveRefused(f"{client.game} {played.match_id}: {response.refused}")
                    in_flight = None  # another seat moved first: this seat's next prompt follows
                if ended:
                    return
                if decision is None or in_flight is not None:
                    continue
                if until is not None and time.monotonic() >= until:
                    return
                await send_next()
            return
        except grpc.aio.AioRpcError as error:
            await cursor.after_cut(error)
        finally:
            call.cancel()


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """``["max_rounds=2", "bid_for_solo=true"]`` -> ``{"max_rounds": 2, "bid_for_solo": True}``."""
    options: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"an option is name=value, not {pair!r}")
        lowered = text.lower()
        if lowered in ("true", "false"):
            options[name] = lowered == "true"
        elif text.lstrip("-").isdigit():
            options[name] = int(text)
        else:
            options[name] = text
    return options
