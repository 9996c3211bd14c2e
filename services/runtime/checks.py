"""The order in which every operation on a match is checked, written once.

Every operation, a player's (join, move, leave, rejoin, add a bot, read, watch) or the
server's own (a timed-out seat's move, a bot's, a seat handed over, the idle reaper), is
decided on the match as stored by these checks, in this order; the first that fails answers:

1. the request is well formed, each field in its range (INVALID_ARGUMENT naming the field);
2. credentials: the seat token, missing, forged or expired (UNAUTHENTICATED; a match's token
   for another match: PERMISSION_DENIED), or the rejoin key (read with the match);
3. the match exists (NOT_FOUND);
4. the token is the seat's current one (UNAUTHENTICATED ``token_revoked`` once the seat was
   left, rejoined or handed to a bot), and a spectator is admitted to the match;
5. the version the caller pinned (``expected_version``, ABORTED), before anything the
   match's state would refuse: a client that pinned an old version must read again first;
6. the match's status allows the operation (FAILED_PRECONDITION ``match_not_started``,
   ``match_full`` or ``match_over``);
7. the seat: the one with a decision for a move (``not_your_turn``, or the engine's own rule
   when it names one), a free one for a join or a bot (``seat_taken``);
8. the move's legality (the engine's rule).

Then the change is made on a copy and committed by a compare-and-set on the match's revision;
when another write won the race, the operation is decided again from step 3. The server's
own operations (services/runtime/timers.py) carry no request and no credentials: they start
at step 3 and act only where steps 6 and 7 pass (the match live, a seat due).
"""

from __future__ import annotations

from typing import Any

from services.engine import MoveError, NotYourTurn, RuleViolation
from services.runtime.errors import Aborted, FailedPrecondition, InvalidArgument, NotFound
from services.runtime.outcomes import IN_PROGRESS, LIVE, WAITING

MAX_PLAYER_NAME = 64
MAX_REQUEST_ID = 128


# -- 1. well formed --------------------------------------------------------------------------


def match_id_given(match_id: str) -> None:
    if not match_id:
        raise InvalidArgument("match_id: required", field="match_id")


def request_id_in_range(request_id: str) -> None:
    if len(request_id) > MAX_REQUEST_ID:
        raise InvalidArgument(f"request_id: at most {MAX_REQUEST_ID} characters", field="request_id")


def player_name(name: str) -> str:
    """The name a seat is given, stripped; refused when empty or too long."""
    name = name.strip()
    if not name or len(name) > MAX_PLAYER_NAME:
        raise InvalidArgument(f"player_name: 1 to {MAX_PLAYER_NAME} characters required", field="player_name")
    return name


def move_given(move: dict[str, Any] | None) -> dict[str, Any]:
    if not move:
        raise InvalidArgument("move: no move kind set", field="move")
    return move


# -- 3. the match exists ----------------------------------------------------------------------


def unknown(match_id: str) -> NotFound:
    return NotFound(f"match_id: no match {match_id!r} (unknown or expired)")


# -- 5. the pinned version --------------------------------------------------------------------


def pinned_version(version: int, expected_version: int | None) -> None:
    if expected_version is not None and expected_version != version:
        raise Aborted(
            f"expected_version: match is at version {version}, not {expected_version}",
            field="expected_version",
        )


# -- 6. the status ----------------------------------------------------------------------------


def in_progress(status: str) -> None:
    """A move: the match has started and is not over."""
    if status == WAITING:
        raise FailedPrecondition("match_not_started: waiting for players to join", reason="match_not_started")
    if status != IN_PROGRESS:
        raise FailedPrecondition(f"match_over: match is {status}", reason="match_over")


def waiting(status: str) -> None:
    """A join or an added bot: the match still has free seats."""
    if status != WAITING:
        raise FailedPrecondition(f"match_full: match is {status}, no free seat", reason="match_full")


def live(status: str) -> None:
    """A leave, a rejoin, a seat taken again: the match is not over."""
    if status not in LIVE:
        raise FailedPrecondition(f"match_over: match is {status}", reason="match_over")


# -- 7. the seat ------------------------------------------------------------------------------


def deciding(state: Any, seat: int, move: dict[str, Any]) -> None:
    """``seat`` has a decision now; else why it may not make this move: the engine's own rule
    when it names one (a claim by a seat that did not win the trick), else ``not_your_turn``.
    Applying ``move`` to find that rule, it spoils ``state``: only a throwaway copy is passed
    to a seat that is not deciding, and it is never stored."""
    if seat in state.active_seats():
        return
    try:
        state.apply(seat, move)
    except RuleViolation as violation:
        raise violation from None
    except MoveError:
        pass
    raise NotYourTurn(seat)


def seat_in_range(seat: int, players: int) -> None:
    if seat >= players:
        raise InvalidArgument(f"seat: the match has seats 0 to {players - 1}", field="seat")


def seat_free(seats: list[str | None], seat: int) -> None:
    if seats[seat] is not None:
        raise FailedPrecondition(f"seat_taken: seat {seat} is taken", reason="seat_taken")
