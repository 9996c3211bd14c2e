"""One pub/sub connection per process wakes every WatchMatch it serves.

Every commit PUBLISHes a tiny notification on its match's channel (``keys.notify``, inside
the commit script). The hub holds ONE pub/sub connection: it SUBSCRIBEs a match's channel
when the match gets its first watcher here and UNSUBSCRIBEs when the last one leaves. On a
notification it reads that match's history once (from the lowest cursor of its watchers)
and hands each watcher what lies past its own cursor. So an event costs one read
per watched match, whatever the number of watchers, and quiet watchers cost nothing.

The stored history stays the source of truth: a (re)subscription confirmation also triggers a read,
so a watcher that joins, or a connection that comes back, catches up from its cursor and
nothing committed meanwhile is lost. Every watcher has its own cursor, (version, seq) of
the last event it was given: no watcher's request changes what another receives.

A seat's watcher also gets a prompt (its legal moves) once per version at which it has a
decision, computed once per version for all watchers of the match on this replica. A watcher
may ask for the record itself (``settled``) after each read or commit that gave it anything,
to build from without reading the match again (a PlayMatch's table).

A seat's watcher holds the token generation it was opened with. Every read and every
commit handed over comes with the match as stored after it: once the seat's generation
there is another (a rejoin, a leave, a bot took the seat), the watcher is told it was
revoked and dropped before any event of that read or commit reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from redis.exceptions import ConnectionError as RedisConnectionError

from services.runtime import keys, redis_client
from services.runtime.history import StoredEvent
from services.runtime.record import KnownRecord, MatchRecord
from services.runtime.store import MatchStore
from services.runtime.tables import seat_generation
from services.runtime.tasks import cancel_until_done

log = structlog.get_logger("watch_hub")

RETRY_AFTER_ERROR_S = 1.0

# A stream position: (version, seq) of the last event a watcher was given.
Cursor = tuple[int, int]
# The prompt event body of each of the given seats that has a decision in a match as stored.
PromptMaker = Callable[[MatchRecord, Collection[int]], dict[int, dict[str, Any]]]


# Takes a watcher's events and prompts, in order, as the hub hands them over.
Deliver = Callable[[StoredEvent], None]
# Told once that the watcher's token was revoked; nothing more is delivered after it.
Revoked = Callable[[], None]
# Takes the match as stored after what a read or commit just gave the watcher, to read during
# the call only (a scheduler goes on changing the record it committed).
Settled = Callable[[MatchRecord], None]


@dataclass(eq=False)
class _Watcher:
    seat: int | None
    cursor: Cursor
    deliver: Deliver
    # The token generation a seat's watcher was admitted with, and what hears of its revocation.
    generation: int = 0
    revoked: Revoked | None = None
    # The last version this watcher was prompted at.
    prompted: int = -1
    settled: Settled | None = None
    # Given an event or prompt since it was last handed the record.
    unsettled: bool = False

    def give(self, event: StoredEvent) -> None:
        self.deliver(event)
        self.unsettled = True


@dataclass(eq=False)
class _Match:
    watchers: set[_Watcher] = field(default_factory=set)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    # A subscription confirmation arrived: a new watcher may read at once.
    subscribed: bool = False
    reader: asyncio.Task[None] | None = None
    # Reads wanted whatever the cursors: a new watcher, a (re)subscription, a failed read.
    must_read: bool = True
    # The furthest stream position a notification announced.
    notified: Cursor = (0, 0)
    # Prompts of the last record read (by rev), for the seats asked so far: computed once
    # however many watchers a seat has.
    prompts_rev: int = -1
    prompts: dict[int, dict[str, Any] | None] = field(default_factory=dict)
    # Commits of this replica on the match in flight (WatchHub.committing).
    committing: int = 0


class WatchHub:
    def __init__(
        self,
        store: MatchStore,
        make_prompts: PromptMaker,
        known: KnownRecord | None = None,
        remember: Callable[[MatchRecord], None] | None = None,
    ) -> None:
        self.store = store
        self._make_prompts = make_prompts
        # The replica's decoded records (services/runtime/state_cache.py): a read of a record
        # it holds decodes nothing, and one it decoded is kept there (this replica's next
        # move on the match then starts from it).
        self._known = known
        self._remember = remember
        self._matches: dict[str, _Match] = {}
        # Subscribe/unsubscribe commands, sent in order by one task.
        self._commands: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._pubsub: Any = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def watched_matches(self) -> int:
        """Matches with at least one watcher here (= channels subscribed)."""
        return len(self._matches)

    def is_watched(self, match_id: str) -> bool:
        """Whether ``match_id`` has a watcher here."""
        return match_id in self._matches

    def watchers(self) -> int:
        return sum(len(m.watchers) for m in self._matches.values())

    def prompted_seats(self) -> dict[str, dict[int, int]]:
        """match id -> each seat watched here -> the newest version one of its watchers
        was prompted at (-1: none yet)."""
        seats: dict[str, dict[int, int]] = {}
        for match_id, match in self._matches.items():
            for watcher in match.watchers:
                if watcher.seat is not None:
                    of_match = seats.setdefault(match_id, {})
                    of_match[watcher.seat] = max(of_match.get(watcher.seat, -1), watcher.prompted)
        return seats

    def attach(
        self,
        match_id: str,
        seat: int | None,
        after: Cursor,
        deliver: Deliver,
        generation: int = 0,
        revoked: Revoked | None = None,
        settled: Settled | None = None,
    ) -> Callable[[], None]:
        """A watcher of ``match_id``: ``deliver`` is called with each event and prompt (PlayMatch's
        outbox takes them so, with no task or queue of the watch's own between; WatchMatch's
        generator, watching._live, queues them),
        ``revoked`` once if the seat's token ``generation`` is revoked, ``settled`` with the
        record after each read or commit that gave it anything. Returns what detaches the
        watcher; until then it is called, also from reads."""
        watcher = _Watcher(seat, after, deliver, generation, revoked, settled=settled)
        match = self._matches.get(match_id)
        if match is None:
            match = self._matches[match_id] = _Match()
            match.reader = self._spawn(self._read_loop(match_id, match), f"watch-{match_id}")
            self._send("subscribe", match_id)
        match.watchers.add(watcher)
        match.must_read = True
        if match.subscribed:
            match.wake.set()

        def detach() -> None:
            match.watchers.discard(watcher)
            if not match.watchers and self._matches.get(match_id) is match:
                del self._matches[match_id]
                if match.reader is not None:
                    match.reader.cancel()
                self._send("unsubscribe", match_id)

        return detach

    async def close(self) -> None:
        """Stop every subscription and read (a replica shutting down, its server stopped), so
        that none is left pending when the event loop closes. A stream's generator that the
        loop finalises only on its way out still detaches: its unsubscribe is then dropped
        (the connection goes with the process) instead of starting a task that would be
        destroyed pending."""
        self._closed = True
        await cancel_until_done(list(self._tasks))

    # -- subscriptions ---------------------------------------------------------------

    def _spawn(self, coroutine: Any, name: str) -> asyncio.Task[None]:
        task = asyncio.create_task(coroutine, name=name)
        self._tasks.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(self._tasks.discard)
        return task

    def _send(self, verb: str, match_id: str) -> None:
        if self._closed:
            return
        if self._pubsub is None:
            # Its own connection, without the socket timeout of the store's (and on a
            # cluster, any node: PUBLISH reaches every node).
            self._pubsub = redis_client.pubsub(self.store.redis)
            self._commands = asyncio.Queue()
            self._spawn(self._command_loop(self._pubsub, self._commands), "watch-hub-commands")
        self._commands.put_nowait((verb, match_id))

    async def _command_loop(self, pubsub: Any, commands: asyncio.Queue[tuple[str, str]]) -> None:
        """Sends (un)subscriptions one at a time, in the order asked (so that a quick
        unsubscribe-then-subscribe of one match ends subscribed); gives the connection
        back when nothing is watched any more."""
        listener: asyncio.Task[None] | None = None
        try:
            while True:
                verb, match_id = await commands.get()
                await self._command(pubsub, verb, match_id)
                if listener is None:
                    listener = self._spawn(self._listen_loop(pubsub), "watch-hub-listener")
                if commands.empty() and not self._matches:
                    return
        finally:
            if self._pubsub is pubsub:
                self._pubsub = None
            if listener is not None:
                listener.cancel()
            with contextlib.suppress(Exception):
                await pubsub.aclose()

    async def _command(self, pubsub: Any, verb: str, match_id: str) -> None:
        channel = keys.notify(match_id)
        while True:
            try:
                if verb == "subscribe":
                    await pubsub.subscribe(channel)
                else:
                    await pubsub.unsubscribe(channel)
                return
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("watch_subscription_failed", verb=verb, match_id=match_id, error=str(error))
                # A lost connection drops its subscriptions: an unsubscribe is then moot, and
                # a subscribe for a match nobody watches any more too.
                if verb == "unsubscribe" or match_id not in self._matches:
                    return
                await asyncio.sleep(RETRY_AFTER_ERROR_S)

    async def _listen_loop(self, pubsub: Any) -> None:
        """Reads the notifications off the pub/sub connection by its ``read_response``:
        redis-py's get_message (a retry wrapper and a message dict per notification) costs a
        busy replica about a twentieth of its CPU, for one notification per move. redis-py
        still owns the connection: it sends the (un)subscriptions, and on a reconnect it
        subscribes to every channel again; confirmations go through its handle_message,
        which keeps its record of the channels subscribed."""
        while True:
            connection = pubsub.connection
            try:
                if connection is None or not connection.is_connected:
                    raise RedisConnectionError("the pub/sub connection is closed")
                # A read error closes the connection (redis-py's disconnect_on_error).
                reply = await connection.read_response(
                    disable_decoding=True, timeout=math.inf, push_request=True
                )
                await self._heard(pubsub, reply)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("watch_notifications_failed", error=str(error))
                await asyncio.sleep(RETRY_AFTER_ERROR_S)
                # Reconnected, redis-py subscribes to every channel again; each
                # confirmation then makes its match read its history.
                with contextlib.suppress(Exception):
                    if connection is not None:
                        await connection.disconnect()
                    await pubsub.connect()

    async def _heard(self, pubsub: Any, reply: Any) -> None:
        if not isinstance(reply, list) or len(reply) < 3:
            return
        kind = reply[0]
        if kind != b"message":
            if kind in (b"subscribe", b"unsubscribe"):
                await pubsub.handle_message(reply)  # redis-py's record of the channels
            if kind != b"subscribe":
                return
        match = self._matches.get(keys.match_of_notify(redis_client.text(reply[1])))
        if match is None:
            return
        if kind == b"subscribe":
            match.subscribed = match.must_read = True
        else:
            position = _position(reply[2])
            if position is None:
                match.must_read = True
            else:
                match.notified = max(match.notified, position)
        if _needs_read(match):
            match.wake.set()

    # -- reading ---------------------------------------------------------------------

    async def _read_loop(self, match_id: str, match: _Match) -> None:
        while True:
            await match.wake.wait()
            match.wake.clear()
            if not _needs_read(match):
                continue
            match.must_read = False
            try:
                await self._read(match_id, match)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("watch_read_failed", match_id=match_id)
                await asyncio.sleep(RETRY_AFTER_ERROR_S)
                match.must_read = True
                match.wake.set()

    async def _read(self, match_id: str, match: _Match) -> None:
        watchers = list(match.watchers)
        if not watchers:
            return
        lowest = min(w.cursor for w in watchers)
        # The record, in the same round trip, for the seats' revocations and prompts, and settled.
        with_record = any(w.seat is not None or w.settled is not None for w in watchers)
        events, record = await self.store.events_after(match_id, lowest, with_record, self._known)
        if record is not None and self._remember is not None:
            self._remember(record)
        if record is not None:
            watchers = _drop_revoked(match, record, watchers)
            newest = (record.version, record.event_seq)
            if events and (events[-1].version, events[-1].seq) > newest:
                # A read reaching back into the archive reads its last events after the
                # record: those wait for a read whose record is as new (its revocations and
                # prompts are theirs).
                events = [e for e in events if (e.version, e.seq) <= newest]
                match.must_read = True
                match.wake.set()
        for watcher in watchers:
            for event in events:
                position = (event.version, event.seq)
                if position > watcher.cursor:
                    watcher.cursor = position
                    if event.visible_to(watcher.seat):
                        watcher.give(event)
        if record is not None:
            self._prompt(match, record, watchers)
            _settle(watchers, record)

    def committing(self, match_id: str) -> _Committing:
        """Around a commit of this replica on ``match_id`` and its ``committed``: the commit's
        own notification, which can come first, does not make the watchers here read the
        history meanwhile (a read per move costs a busy replica about a tenth of its CPU). A
        notification still ahead of them when it ends (another replica's commit) does."""
        match = self._matches.get(match_id)
        return _Committing(match) if match is not None else _NOT_WATCHED

    def committed(self, previous: Cursor, events: list[StoredEvent], record: MatchRecord) -> None:
        """A commit of this replica: ``events`` (written right after stream position
        ``previous``) go straight to the watchers here that had everything up to it, with
        their prompts from ``record`` as committed; no stream read. Watchers behind get
        them from the read the commit's notification brings."""
        match = self._matches.get(record.match_id)
        if match is None or not events:
            return
        watchers = _drop_revoked(match, record, list(match.watchers))
        for watcher in watchers:
            if watcher.cursor != previous:
                continue
            for event in events:
                watcher.cursor = (event.version, event.seq)
                if event.visible_to(watcher.seat):
                    watcher.give(event)
        if any(w.seat is not None for w in watchers):
            self._prompt(match, record, watchers)
        _settle(watchers, record)

    def _prompt(self, match: _Match, record: MatchRecord, watchers: list[_Watcher]) -> None:
        """Prompt each seat's watcher that has every event of ``record`` and was not prompted
        at its version yet. One short of the record's last event gets its prompt on the read
        that brings that event (its commit's notification is on the way)."""
        latest = (record.version, record.event_seq)
        due = [
            (w, w.seat)
            for w in watchers
            if w.seat is not None and w.prompted < record.version and w.cursor >= latest
        ]
        if not due:
            return
        seats = {seat for _, seat in due}
        prompts: Mapping[int, dict[str, Any] | None]
        if record.rev < match.prompts_rev:
            # A read that reached Redis before a commit handed over here since (as the seat's
            # own connection event, committed while its new stream catches up): the watchers
            # it brought up to its record are prompted from it, as a read answered a moment
            # sooner would have prompted them, and the newer record's prompts stay kept.
            prompts = self._make_prompts(record, seats)
        else:
            if match.prompts_rev != record.rev:
                match.prompts_rev, match.prompts = record.rev, {}
            missing = seats - match.prompts.keys()
            if missing:
                made = self._make_prompts(record, missing)
                match.prompts.update({seat: made.get(seat) for seat in missing})
            prompts = match.prompts
        for watcher, seat in due:
            body = prompts.get(seat)
            if body is None:
                continue
            watcher.prompted = record.version
            watcher.give(StoredEvent(record.version, 0, (seat,), body))


class _Committing:
    __slots__ = ("match",)

    def __init__(self, match: _Match | None) -> None:
        self.match = match

    def __enter__(self) -> None:
        if self.match is not None:
            self.match.committing += 1

    def __exit__(self, *_: object) -> None:
        match = self.match
        if match is not None:
            match.committing -= 1
            if _needs_read(match):
                match.wake.set()


_NOT_WATCHED = _Committing(None)


def _settle(watchers: list[_Watcher], record: MatchRecord) -> None:
    """Hand ``record`` to each watcher that asked for it, was given something since, and
    has every event of it (one short of them gets it with the read that brings them)."""
    latest = (record.version, record.event_seq)
    for watcher in watchers:
        if watcher.unsettled and watcher.settled is not None and watcher.cursor >= latest:
            watcher.unsettled = False
            watcher.settled(record)


def _drop_revoked(match: _Match, record: MatchRecord, watchers: list[_Watcher]) -> list[_Watcher]:
    """``watchers`` but the seats' whose token generation ``record`` no longer holds: those
    are told so and leave the match (their streams end; detaching them later is harmless)."""
    kept = []
    for watcher in watchers:
        held = None if watcher.seat is None else seat_generation(record.lifecycle, watcher.seat)
        if held is not None and held != watcher.generation:
            match.watchers.discard(watcher)
            if watcher.revoked is not None:
                watcher.revoked()
                watcher.revoked = None
            continue
        kept.append(watcher)
    return kept


def _needs_read(match: _Match) -> bool:
    """Whether the match's watchers here need the history read: a new watcher or a
    (re)subscription, or a notification ahead of a watcher that no commit of this replica
    in flight will hand over. The replica's own commit, handed over already (``committed``)
    or about to be, needs none: a commit in flight looks again when it ends."""
    if match.must_read:
        return True
    return not match.committing and any(w.cursor < match.notified for w in match.watchers)


def _position(data: Any) -> Cursor | None:
    """The stream position a notification carries (``<version>-<seq>``), if it is one."""
    version, _, seq = redis_client.text(data).partition("-")
    if not (version.isdigit() and seq.isdigit()):
        return None
    return int(version), int(seq)
