"""What a match record keeps about its seats beyond their names: token generations and
rejoin nonces, bots, turn clocks and timeout counts (``MatchRecord.lifecycle``), ruled by
its table options (``MatchRecord.table``, the checked ``TableOptions`` as a dict).

Everything here changes only inside a match commit, so a revoked token, a seated bot and
a new deadline are atomic with the move or event that caused them. Pure functions over
the record: no Redis, no gRPC.

Times are Unix milliseconds. Turn deadlines and bot due times are on Redis's clock (the
caller passes ``TIME`` read from Redis), never a replica's own, so a replica whose clock
runs ahead cannot fire a deadline early.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from services.bots.levels import LEVELS as BOT_LEVELS
from services.runtime.auth import SeatGrant, issue_token
from services.runtime.by_identity import ByIdentity
from services.runtime.errors import InvalidArgument, Unauthenticated

DEFAULT_MAX_TIMEOUTS = 3
MAX_TURN_SECONDS = 7 * 24 * 3600
MAX_TIMEOUTS_LIMIT = 1000
POLICY_BOT = "SEAT_POLICY_BOT"
POLICY_ABANDON = "SEAT_POLICY_ABANDON"
# How long a JoinMatch retried with the same request id gets the first answer back: long
# enough for a client to retry a lost answer, short enough not to make a request id a key.
JOIN_RETRY_WINDOW_MS = 60_000


@dataclass(frozen=True)
class TableOptions:
    turn_seconds: int = 0
    bank_seconds: int = 0
    max_timeouts: int = DEFAULT_MAX_TIMEOUTS
    on_leave: str = POLICY_BOT
    on_timeouts: str = POLICY_BOT
    public: bool = False
    no_spectators: bool = False
    bot_seats: tuple[int, ...] = ()
    bot_level: str = "random"
    reconnect_grace_seconds: int = 0

    @classmethod
    def parse(cls, raw: dict[str, Any], players: int) -> TableOptions:
        """Checked options from the request's ``TableOptions`` (as a dict)."""
        turn = int(raw.get("turn_seconds") or 0)
        bank = int(raw.get("bank_seconds") or 0)
        for name, value in (("turn_seconds", turn), ("bank_seconds", bank)):
            if value > MAX_TURN_SECONDS:
                raise InvalidArgument(f"table.{name}: at most {MAX_TURN_SECONDS}", field=f"table.{name}")
        grace = int(raw.get("reconnect_grace_seconds") or 0)
        if grace > MAX_TURN_SECONDS:
            raise InvalidArgument(
                f"table.reconnect_grace_seconds: at most {MAX_TURN_SECONDS}",
                field="table.reconnect_grace_seconds",
            )
        if bank and not turn:
            raise InvalidArgument("table.bank_seconds: needs turn_seconds", field="table.bank_seconds")
        max_timeouts = int(raw.get("max_timeouts") or 0) or DEFAULT_MAX_TIMEOUTS
        if max_timeouts > MAX_TIMEOUTS_LIMIT:
            raise InvalidArgument(
                f"table.max_timeouts: at most {MAX_TIMEOUTS_LIMIT}", field="table.max_timeouts"
            )
        bot_seats = tuple(int(s) for s in raw.get("bot_seats") or ())
        if len(set(bot_seats)) != len(bot_seats) or any(s >= players for s in bot_seats):
            raise InvalidArgument(
                f"table.bot_seats: distinct seats below {players} required", field="table.bot_seats"
            )
        return cls(
            turn_seconds=turn,
            bank_seconds=bank,
            max_timeouts=max_timeouts,
            on_leave=_policy(raw.get("on_leave")),
            on_timeouts=_policy(raw.get("on_timeouts")),
            public=bool(raw.get("public")),
            no_spectators=bool(raw.get("no_spectators")),
            bot_seats=bot_seats,
            bot_level=bot_level(raw.get("bot_level") or "", "table.bot_level"),
            reconnect_grace_seconds=grace,
        )

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "bot_seats": list(self.bot_seats)}


def _policy(value: Any) -> str:
    return POLICY_ABANDON if value in (POLICY_ABANDON, 2) else POLICY_BOT


def bot_level(level: str, field: str) -> str:
    level = level or "random"
    if level not in BOT_LEVELS:
        raise InvalidArgument(f"{field}: one of {', '.join(BOT_LEVELS)}, not {level!r}", field=field)
    return level


def _join_key(request_id: str, client: str) -> str:
    """A join's retry key: the request id bound to the client that sent it (hashed, so the
    record keeps neither)."""
    return hashlib.sha256(f"{client}\0{request_id}".encode()).hexdigest()[:32]


def _fresh_seat(generation: int = 0) -> dict[str, Any]:
    # gen: token generation (a token of an older one is revoked); nonce: rejoin key salt,
    # "" while nobody holds the seat; start_ms/due_ms: the pending decision, 0 = none.
    return {
        "gen": generation,
        "exp_ms": 0,
        "nonce": "",
        "bot": "",
        "timeouts": 0,
        "bank_ms": 0,
        "start_ms": 0,
        "due_ms": 0,
    }


def new_lifecycle(options: TableOptions, players: int) -> dict[str, Any]:
    seats = [_fresh_seat() for _ in range(players)]
    for seat in seats:
        seat["bank_ms"] = options.bank_seconds * 1000
    return {"seats": seats, "joins": {}}


def seat_generation(lifecycle: dict[str, Any], seat: int) -> int | None:
    """The token generation a record's lifecycle holds for ``seat`` (None: none kept)."""
    seats = lifecycle.get("seats", ())
    return int(seats[seat]["gen"]) if seat < len(seats) else None


def _forget_streams(data: dict[str, Any]) -> None:
    """The seat changed hands: its open streams (of a revoked token) no longer count."""
    data.update(conn=0, gone_ms=0, grace_ms=0)


# TableOptions of the record tables read lately, by the table dict's identity (a record's
# table is set when the match is created and never changed in place): every call on a
# match reads its seats, so parsing its options once per decoded record matters.
_options_by_table: ByIdentity[TableOptions] = ByIdentity(4096)


def options_of(table: dict[str, Any]) -> TableOptions:
    kept = _options_by_table.get(table)
    if kept is not None:
        return kept
    if not table:
        return TableOptions()
    known = {k: v for k, v in table.items() if k in TableOptions.__dataclass_fields__}
    options = TableOptions(**{**known, "bot_seats": tuple(known.get("bot_seats", ()))})
    _options_by_table.put(table, options)
    return options


class Seats:
    """The seat facts of one record, read and changed in place before a commit."""

    def __init__(self, table: dict[str, Any], lifecycle: dict[str, Any], players: int, match_id: str) -> None:
        self.options = options_of(table)
        # Matches stored before this module existed have none: give them one in memory.
        if "seats" not in lifecycle:
            lifecycle.update(new_lifecycle(self.options, players))
        self.lifecycle = lifecycle
        self.seats: list[dict[str, Any]] = lifecycle["seats"]
        self.match_id = match_id

    # -- tokens and rejoin keys ---------------------------------------------------------

    def check_current(self, grant: SeatGrant) -> None:
        """Refuse a token whose generation was superseded (a rejoin, a leave, a bot)."""
        if grant.seat >= len(self.seats) or self.seats[grant.seat]["gen"] != grant.generation:
            raise Unauthenticated(
                "token_revoked: this seat token was revoked (the seat was rejoined with its rejoin"
                " key, or left)",
                reason="token_revoked",
            )

    def seat_player(self, seat: int, now_ms: int, ttl_s: int, player_id: str = "") -> None:
        """A player takes ``seat``: a new token generation and a new rejoin key; bound to
        ``player_id`` when a session came with the join ("" = anonymous)."""
        data = self.seats[seat]
        data["nonce"] = secrets.token_urlsafe(12)
        data["bot"] = ""
        if player_id:
            data["player"] = player_id
        self.renew_token(seat, now_ms, ttl_s)

    def seat_of_player(self, player_id: str) -> int | None:
        """The seat bound to ``player_id`` that the player still holds (not handed to a bot)."""
        for seat, data in enumerate(self.seats):
            if player_id and data.get("player") == player_id and data["nonce"]:
                return seat
        return None

    def players(self) -> list[str]:
        """The player id bound to each seat ("" for an anonymous or free seat); a seat handed
        to a bot keeps it (the match stays the player's, the decisions are the bot's)."""
        return [str(data.get("player", "")) for data in self.seats]

    def renew_token(self, seat: int, now_ms: int, ttl_s: int) -> None:
        data = self.seats[seat]
        data["gen"] += 1
        data["exp_ms"] = now_ms + ttl_s * 1000
        _forget_streams(data)

    def token(self, secret: bytes, seat: int) -> str:
        data = self.seats[seat]
        return issue_token(secret, self.match_id, seat, data["gen"], data["exp_ms"])

    def expires_ms(self, seat: int) -> int:
        return int(self.seats[seat]["exp_ms"])

    def rejoin_key(self, secret: bytes, seat: int) -> str:
        nonce = self.seats[seat]["nonce"]
        mac = hmac.new(secret, f"rejoin.{self.match_id}.{seat}.{nonce}".encode(), hashlib.sha256)
        return mac.hexdigest()

    def seat_of_rejoin_key(self, secret: bytes, key: str) -> int | None:
        found = None
        for seat, data in enumerate(self.seats):
            # Every seat is compared (in constant time) so timing does not tell which one matched.
            if data["nonce"] and hmac.compare_digest(self.rejoin_key(secret, seat), key):
                found = seat
        return found

    def remember_join(self, request_id: str, client: str, seat: int, now_ms: int) -> None:
        """Keep a join's answer for its retries: only the same client's, with the same request
        id, within ``JOIN_RETRY_WINDOW_MS``, and while the seat's token is the one it issued."""
        if not request_id:
            return
        joins = {
            key: entry
            for key, entry in self.lifecycle.get("joins", {}).items()
            if isinstance(entry, dict) and now_ms - entry["at_ms"] <= JOIN_RETRY_WINDOW_MS
        }
        joins[_join_key(request_id, client)] = {"seat": seat, "gen": self.seats[seat]["gen"], "at_ms": now_ms}
        self.lifecycle["joins"] = joins

    def joined_seat(self, request_id: str, client: str, now_ms: int) -> int | None:
        """The seat a retried join gets back: None unless the same client asked with the same
        request id moments ago and the seat has not changed hands since (a rejoin, a leave,
        a bot: each bumps its token generation). A request id is never a credential."""
        if not request_id:
            return None
        entry = self.lifecycle.get("joins", {}).get(_join_key(request_id, client))
        if not isinstance(entry, dict) or now_ms - entry["at_ms"] > JOIN_RETRY_WINDOW_MS:
            return None
        data = self.seats[entry["seat"]]
        if not data["nonce"] or data["gen"] != entry["gen"]:
            return None
        return int(entry["seat"])

    # -- leaving and bots --------------------------------------------------------------

    def free(self, seat: int) -> None:
        """The seat is empty again; every token and the rejoin key of its player stop working."""
        generation = self.seats[seat]["gen"] + 1
        self.seats[seat] = _fresh_seat(generation)
        self.seats[seat]["bank_ms"] = self.options.bank_seconds * 1000

    def revoke(self, seat: int) -> None:
        """The seat's player left a match that ends with it: every token and the rejoin key of
        that player stop working (the seat keeps its name in the match's facts)."""
        data = self.seats[seat]
        data.update(gen=data["gen"] + 1, nonce="", start_ms=0, due_ms=0)
        _forget_streams(data)

    def seat_bot(self, seat: int, level: str) -> None:
        """A server bot plays ``seat`` from now on; the player's token and key stop working."""
        data = self.seats[seat]
        data.update(gen=data["gen"] + 1, nonce="", bot=level, timeouts=0, start_ms=0, due_ms=0)
        _forget_streams(data)

    def bot(self, seat: int) -> str:
        return str(self.seats[seat]["bot"])

    def bots(self) -> list[str]:
        return [str(data["bot"]) for data in self.seats]

    # -- turn clocks -------------------------------------------------------------------

    @property
    def scheduled(self) -> bool:
        """Whether this match needs the scheduler for more than the idle reaper."""
        return (
            self.options.turn_seconds > 0
            or any(data["bot"] for data in self.seats)
            or any(data.get("grace_ms", 0) for data in self.seats)
        )

    def after_change(
        self, active: list[int], mover: int | None, now_ms: int, think_ms: int, timed_out: bool = False
    ) -> None:
        """Start, keep or stop each seat's decision clock after a commit that leaves
        ``active`` with a decision; ``mover`` just made one (itself or by timeout)."""
        turn_ms = self.options.turn_seconds * 1000
        for seat, data in enumerate(self.seats):
            pending = data["start_ms"] > 0
            if seat == mover:
                if timed_out:
                    data["bank_ms"] = 0
                    data["timeouts"] += 1
                else:
                    overrun = max(0, now_ms - data["start_ms"] - turn_ms) if pending and turn_ms else 0
                    data["bank_ms"] = max(0, data["bank_ms"] - overrun)
                    data["timeouts"] = 0
            if seat not in active:
                data["start_ms"] = data["due_ms"] = 0
            elif not pending or seat == mover:
                data["start_ms"] = now_ms
                if data["bot"]:
                    data["due_ms"] = now_ms + think_ms
                elif turn_ms:
                    data["due_ms"] = now_ms + turn_ms + data["bank_ms"]
                else:
                    data["due_ms"] = 0

    def due_seats(self, now_ms: int) -> list[int]:
        """Seats whose pending decision the server takes now (a bot's, or a timed-out one)."""
        return [s for s, data in enumerate(self.seats) if 0 < data["due_ms"] <= now_ms]

    def next_due_ms(self) -> int | None:
        dues = [data["due_ms"] for data in self.seats if data["due_ms"] > 0]
        dues += [data["grace_ms"] for data in self.seats if data.get("grace_ms", 0) > 0]
        return min(dues) if dues else None

    # -- presence ----------------------------------------------------------------------
    # conn: the player's streams open now (of the seat's current token generation);
    # gone_ms: when the last one closed (0 while one is open, or before the first);
    # grace_ms: when the reconnection grace of a disconnected seat runs out (0 = none).

    def connected(self, seat: int) -> bool:
        data = self.seats[seat]
        return data.get("conn", 0) > 0 and not data["bot"]

    def disconnected_since(self, seat: int) -> int:
        data = self.seats[seat]
        return 0 if self.connected(seat) or data["bot"] else int(data.get("gone_ms", 0))

    def stream_opened(self, seat: int) -> bool:
        """One more stream of the seat's player; True when it is the first (connected now)."""
        data = self.seats[seat]
        data["conn"] = data.get("conn", 0) + 1
        if data["conn"] > 1:
            return False
        data.update(gone_ms=0, grace_ms=0)
        return True

    def stream_closed(self, seat: int, now_ms: int, in_progress: bool) -> bool:
        """One stream of the seat's player closed; True when it was the last (disconnected
        now, and the reconnection grace of a match in progress starts)."""
        data = self.seats[seat]
        data["conn"] = max(0, data.get("conn", 0) - 1)
        if data["conn"]:
            return False
        grace_ms = self.options.reconnect_grace_seconds * 1000
        data.update(gone_ms=now_ms, grace_ms=now_ms + grace_ms if grace_ms and in_progress else 0)
        return True

    def graced_seats(self, now_ms: int) -> list[int]:
        """Player seats disconnected past their reconnection grace: on_leave applies."""
        return [
            seat
            for seat, data in enumerate(self.seats)
            if 0 < data.get("grace_ms", 0) <= now_ms and not data.get("conn", 0) and not data["bot"]
        ]

    def clocks(self) -> list[dict[str, int]]:
        """The turn clocks of seats with a pending decision (the ``SeatClock`` messages)."""
        if not self.options.turn_seconds:
            return []
        return [
            {"seat": seat, "deadline_unix_ms": data["due_ms"], "bank_ms": data["bank_ms"]}
            for seat, data in enumerate(self.seats)
            if data["due_ms"] > 0 and not data["bot"]
        ]

    def clock(self, seat: int) -> dict[str, int] | None:
        """The ``SeatClock`` of one seat's pending decision (``Prompt.clock``), if timed."""
        return next((c for c in self.clocks() if c["seat"] == seat), None)

    def timeouts(self, seat: int) -> int:
        return int(self.seats[seat]["timeouts"])
