"""The RPCs of every game, translated between protobuf and ``MatchService``.

One generic servicer serves every game: the game's generated ``add_<Service>Servicer_to_server``
binds these methods by name. Errors are mapped to status codes by the interceptor.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import grpc
import structlog
from google.protobuf.message import Message
from mogames.common.v1 import common_pb2

from services.runtime.auth import SeatGrant, bearer_token, player_of_session, session_token
from services.runtime.codec import Codec, to_dict
from services.runtime.errors import InvalidArgument, clip, to_refusal, to_service_error
from services.runtime.history import StoredEvent
from services.runtime.lifecycle import Lifecycle
from services.runtime.limits import client_id
from services.runtime.matches import Joined, MatchFacts, MatchService
from services.runtime.play import Cursor, PlayOutbox, Table
from services.runtime.presence import Presence
from services.runtime.record import MatchRecord
from services.runtime.tasks import cancel_until_done

log = structlog.get_logger("rpc")

# A WatchMatch asked with_table sends a heartbeat this often when quiet: the page that asked
# says "reconnecting" soon after they stop (docs/protocol.md).
TABLE_HEARTBEAT_S = 2.0


def match_message(facts: MatchFacts) -> common_pb2.Match:
    # Facts kept before presence existed (a players summary) have none: not connected.
    connected = facts.connected or [False] * len(facts.seats)
    since = facts.disconnected_since or [0] * len(facts.seats)
    return common_pb2.Match(
        match_id=facts.match_id,
        game=facts.game,
        players=facts.players,
        status=facts.status,  # type: ignore[arg-type]
        version=facts.version,
        seats=[
            common_pb2.Seat(
                seat=i,
                player_name=name or "",
                taken=name is not None,
                bot=bool(bot),
                bot_level=bot,
                connected=is_connected,
                disconnected_since_unix_ms=since_ms,
            )
            for i, (name, bot, is_connected, since_ms) in enumerate(
                zip(facts.seats, facts.bots, connected, since, strict=True)
            )
        ],
        scores=facts.scores,
        winners=facts.winners,
        active_seats=facts.active_seats,
        clocks=[common_pb2.SeatClock(**clock) for clock in facts.clocks],
        table=common_pb2.TableOptions(**facts.table),
    )


def joined_message(joined: Joined) -> common_pb2.JoinMatchResponse:
    return common_pb2.JoinMatchResponse(
        seat=joined.seat,
        token=joined.token,
        match=match_message(joined.facts),
        rejoin_key=joined.rejoin_key,
        token_expires_unix_ms=joined.token_expires_ms,
    )


def _token(context: grpc.aio.ServicerContext) -> str | None:
    return bearer_token(context.invocation_metadata())


def _player(context: grpc.aio.ServicerContext, service: MatchService) -> str:
    """The player id of the call's ``mogames-session`` ("" without one); a bad or expired
    session is refused rather than ignored, so a client never plays unbound unknowingly."""
    token = session_token(context.invocation_metadata())
    if token is None:
        return ""
    player_id = player_of_session(service.settings.token_secret, token, service.now_ms())
    structlog.contextvars.bind_contextvars(player_id=player_id)
    return player_id


def _bind(**values: Any) -> None:
    structlog.contextvars.bind_contextvars(**values)


def _when_call_ends(callback: Callable[[], None]) -> None:
    """``callback()`` once the call being handled ends, however it ends (grpc.aio runs each
    call in a task of its own, and cancels it when the client goes away or its deadline
    passes). Not ``context.add_done_callback``: grpc keeps that callback bound to the context
    in the call's own state, which the context refers to, so every call using it became a
    reference cycle, its memory held until a full collection (rare on a quiet server, and
    slow on a large heap). A task drops its callbacks once it has run them."""
    task = asyncio.current_task()
    assert task is not None, "called from a call's handler"
    task.add_done_callback(lambda _: callback())


class GameServicer:
    def __init__(self, service: MatchService, codec: Codec, presence: Presence | None = None) -> None:
        self.service = service
        self.presence = presence or Presence(service)
        self.lifecycle = Lifecycle(service)
        self.codec = codec
        self._closing: set[asyncio.Future[None]] = set()
        # The Match message of the last table made, by (match id, rev): see table_message.
        self._last_match: tuple[tuple[str, int], common_pb2.Match] | None = None

    def _end_with_call(self, events: AsyncGenerator[Any, None], ahead: _Lookahead | None = None) -> None:
        """End ``events`` (and so its watch subscription) when the call ends, however it ends:
        a client gone away may leave the generator parked at a yield that is never resumed.
        A next event asked for ahead (``ahead``) is given up first: the generator cannot be
        closed while a task of its own waits in it."""

        async def end() -> None:
            if ahead is not None:
                await ahead.cancel()
            await events.aclose()

        def close() -> None:
            closing = asyncio.ensure_future(end())
            self._closing.add(closing)  # the loop keeps only a weak reference to a task
            closing.add_done_callback(self._closing.discard)

        _when_call_ends(close)

    def _client(self, context: grpc.aio.ServicerContext) -> str:
        """Who is calling, as the budgets name them (a gateway forwards its client's name)."""
        limits = self.service.settings.limits
        return client_id(context.invocation_metadata(), context.peer(), limits, not limits.trusted_proxies)

    def add_to_server(self, server: grpc.aio.Server) -> None:
        getattr(self.codec.pb2_grpc, f"add_{self.codec.game.service}Servicer_to_server")(self, server)

    async def CreateMatch(self, request: Any, context: grpc.aio.ServicerContext) -> common_pb2.Match:
        _player(context, self.service)
        seed = request.seed if request.HasField("seed") else None
        table = to_dict(request.table)
        facts = await self.lifecycle.create_match(request.players, seed, self.codec.options(request), table)
        return match_message(facts)

    async def JoinMatch(
        self, request: common_pb2.JoinMatchRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.JoinMatchResponse:
        _bind(match_id=request.match_id, request_id=request.request_id)
        player_id = _player(context, self.service)
        joined = await self.service.join_match(
            request.match_id, request.player_name, request.request_id, player_id, self._client(context)
        )
        return joined_message(joined)

    async def GetMatch(
        self, request: common_pb2.GetMatchRequest, context: grpc.aio.ServicerContext
    ) -> Message:
        _bind(match_id=request.match_id)
        return match_message(await self.service.get_match(request.match_id))

    async def GetView(self, request: common_pb2.GetViewRequest, context: grpc.aio.ServicerContext) -> Message:
        _bind(match_id=request.match_id)
        body, version, seat, active = await self.service.get_view(request.match_id, _token(context))
        return self.codec.view(body, version, seat, active)

    async def ListLegalMoves(
        self, request: common_pb2.ListLegalMovesRequest, context: grpc.aio.ServicerContext
    ) -> Message:
        _bind(match_id=request.match_id)
        moves, version = await self.service.legal_moves(request.match_id, _token(context))
        return self.codec.pb2.ListLegalMovesResponse(
            moves=[self.codec.move_out(m) for m in moves], version=version
        )

    async def SubmitMove(self, request: Any, context: grpc.aio.ServicerContext) -> Message:
        _bind(match_id=request.match_id, request_id=request.request_id)
        return await self._submit(request, _token(context))

    async def _submit(self, request: Any, token: str | None) -> Any:
        expected = request.expected_version if request.HasField("expected_version") else None
        result = await self.service.submit_move(
            request.match_id, token, self.codec.move_in(request.move), expected, request.request_id
        )
        return self.codec.pb2.SubmitMoveResponse(
            version=result.version,
            events=[self.codec.event(e) for e in result.events],
            active_seats=result.active_seats,
            status=result.status,  # type: ignore[arg-type]
            next_moves=[self.codec.move_out(m) for m in result.next_moves],
        )

    async def WatchMatch(
        self, request: common_pb2.WatchMatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Message]:
        _bind(match_id=request.match_id)
        after_version = request.after_version if request.HasField("after_version") else None
        token = _token(context)
        tables = _StreamTables(self, request.match_id, token) if request.with_table else None
        events = self.service.watch(
            request.match_id, token, after_version, request.after_seq, tables.settled if tables else None
        )
        ahead = _Lookahead(events)
        self._end_with_call(events, ahead)
        # The seat's presence (a token that is not the seat's current one counts for nothing).
        stream = self.presence.stream(request.match_id, token)
        try:
            if tables is not None:
                async for message in self._with_tables(tables, ahead):
                    yield message
            else:
                async for event in events:
                    yield self.codec.event(event)
        finally:
            stream.close()

    async def _with_tables(self, tables: _StreamTables, ahead: _Lookahead) -> AsyncIterator[Message]:
        """The watch's events with the caller's table first and after each commit's events,
        and a heartbeat every ``TABLE_HEARTBEAT_S`` when quiet (a page tells a frozen gateway
        from a quiet match by them, without asking anything). A commit hands its events and
        prompts to the watch at once, so the next one not being there after a turn of the
        loop means the commit's batch is over: the table goes then, the one built from the
        record the watch was handed with them if it was."""
        self._check_tables("with_table")
        table = await tables.read()
        last_version: int = table.version  # type: ignore[attr-defined]
        last = (0, 0)  # the furthest event sent
        yield table
        try:
            while True:
                coming = ahead.next()
                done, _ = await asyncio.wait({coming}, timeout=TABLE_HEARTBEAT_S)
                if not done:
                    yield self.codec.event(self.service.heartbeat(last_version))
                    continue
                event = ahead.take()
                if event is None:
                    return
                last_version = max(last_version, event.version)
                yield self.codec.event(event)
                if "heartbeat" in event.body:
                    continue
                last = max(last, (event.version, event.seq))
                ahead.next()
                await asyncio.sleep(0)
                if not ahead.ready() or ahead.ended():
                    yield await tables.after(tables.take(), last)
        finally:
            await ahead.cancel()

    def _check_tables(self, field: str) -> None:
        """A watch asked ``field`` (with_table) of a game whose contract has no table."""
        if not hasattr(self.codec.pb2, "TableUpdate"):
            raise InvalidArgument(f"{field}: this game's contract has no MatchEvent.table", field=field)

    def table_message(self, record: MatchRecord, grant: SeatGrant | None) -> Message:
        """The table (MatchEvent.table) of ``grant``'s seat (None: a spectator's) in ``record``
        as stored (its rev), its state decoded at most once (a record a scheduler just
        committed is not in the cache)."""
        state = self.service.state_of(record)
        body, version, seat, active = self.service.view_of(record, grant, state)
        match = self._last_match
        if match is None or match[0] != (record.match_id, record.rev):
            # The Match part is the same for every seat: the hub hands a commit's record to
            # the match's watchers one after the other, and the last one made serves them.
            match = self._last_match = (
                (record.match_id, record.rev),
                match_message(self.service.facts(record, state)),
            )
        # Filled in place: each message passed to a constructor would be copied once more.
        event = self.codec.pb2.MatchEvent(version=version)
        event.table.view.CopyFrom(self.codec.view(body, version, seat, active))
        event.table.match.CopyFrom(match[1])
        return event

    async def PlayMatch(
        self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Message]:
        """WatchMatch and SubmitMove on one stream (services/runtime/play.py)."""
        first = await anext(requests, None)
        if first is None or first.WhichOneof("kind") != "watch":
            raise InvalidArgument("PlayMatchRequest.watch: the first message names the match", field="watch")
        watch, token = first.watch, _token(context)
        _bind(match_id=watch.match_id)
        if watch.with_table:
            self._check_tables("watch.with_table")
        after_version = watch.after_version if watch.HasField("after_version") else None
        # A page that asked for the table tells a frozen gateway by the heartbeats, as on WatchMatch.
        heartbeat_s = TABLE_HEARTBEAT_S if watch.with_table else self.service.settings.heartbeat_s
        outbox = PlayOutbox(heartbeat_s, self.service.heartbeat)
        tables = _StreamTables(self, watch.match_id, token, outbox.table) if watch.with_table else None
        detach = await self.service.attach_watch(
            watch.match_id, token, after_version, watch.after_seq, outbox, tables.settled if tables else None
        )
        stream = self.presence.stream(watch.match_id, token)
        moves = asyncio.create_task(self._play_moves(requests, watch.match_id, token, outbox))

        def release() -> None:
            # The watch and the moves end with the call, however it ends: a client gone away
            # may leave this generator parked at a yield that is never resumed.
            detach()
            stream.close()
            moves.cancel()

        _when_call_ends(release)
        try:
            if tables is not None:
                yield self.codec.pb2.PlayMatchResponse(events=[await tables.read()])
            async for batch, answer, table in outbox.batches():
                response = self.codec.pb2.PlayMatchResponse(events=[self.codec.event(e) for e in batch])
                # A batch holds whole commits (the hub hands a commit's events over at once):
                # the table after them, in the same message as the move's answer.
                if tables is not None:
                    sent = [(e.version, e.seq) for e in batch if "heartbeat" not in e.body]
                    if sent:
                        response.events.append(await tables.after(table, max(sent)))
                if answer is not None:
                    getattr(response, answer[0]).CopyFrom(answer[1])
                yield response
        finally:
            detach()
            stream.close()
            await cancel_until_done([moves])

    async def _play_moves(
        self, requests: AsyncIterator[Any], match_id: str, token: str | None, outbox: PlayOutbox
    ) -> None:
        """Each move in turn, answered on the stream; a refused one changes nothing and the
        stream goes on. A request that is not a move of this match ends the stream."""
        try:
            async for request in requests:
                if request.WhichOneof("kind") != "move":
                    raise InvalidArgument(
                        "PlayMatchRequest.move: only the first message is a watch", field="move"
                    )
                move = request.move
                if move.match_id and move.match_id != match_id:
                    raise InvalidArgument(
                        f"PlayMatchRequest.move.match_id: this stream plays {match_id!r}",
                        field="move.match_id",
                    )
                move.match_id = match_id
                _bind(request_id=move.request_id)
                outbox.moving()
                try:
                    answer = await self._submit(move, token)
                except Exception as error:
                    refused = to_service_error(error)
                    if refused is None:
                        raise
                    log.info(
                        "move_refused",
                        code=refused.code.name,
                        reason=refused.reason,
                        error=clip(refused.message),
                    )
                    outbox.refused(to_refusal(refused))
                else:
                    last = answer.events[-1] if answer.events else None
                    outbox.committed(answer, (last.version, last.seq) if last else (answer.version, 0))
        except Exception as error:
            outbox.failed(error)

    async def LeaveMatch(
        self, request: common_pb2.LeaveMatchRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Match:
        _bind(match_id=request.match_id)
        return match_message(await self.lifecycle.leave(request.match_id, _token(context)))

    async def RejoinMatch(
        self, request: common_pb2.RejoinMatchRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.JoinMatchResponse:
        _bind(match_id=request.match_id)
        return joined_message(await self.lifecycle.rejoin(request.match_id, request.rejoin_key))

    async def AddBot(
        self, request: common_pb2.AddBotRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Match:
        _bind(match_id=request.match_id)
        _player(context, self.service)
        seat = request.seat if request.HasField("seat") else None
        return match_message(await self.lifecycle.add_bot(request.match_id, seat, request.level))


class _StreamTables:
    """A watch's tables (with_table): built from the record the watch hub hands over with
    each read or commit it delivered (the one this replica just committed, or read with
    another replica's events), so a commit costs no read of the match; read only when none
    came with a batch's events. Never one older than the last one sent. Each table built goes
    to ``queue`` (PlayMatch's outbox, which sends it with its events), or is kept until
    ``take`` (WatchMatch takes it once the events before it are sent)."""

    def __init__(
        self,
        servicer: GameServicer,
        match_id: str,
        token: str | None,
        queue: Callable[[Table], None] | None = None,
    ) -> None:
        self._servicer = servicer
        self._match_id = match_id
        self._token = token
        self._queue = queue or self._keep
        self._kept: Table | None = None
        self._rev = -1  # the rev of the newest table sent or queued

    def _keep(self, table: Table) -> None:
        self._kept = table

    def take(self) -> Table | None:
        table, self._kept = self._kept, None
        return table

    def settled(self, record: MatchRecord, grant: SeatGrant | None) -> None:
        """watch_hub.Settled: built at once, while the record is as the hub handed it."""
        if record.rev < self._rev:
            return
        if grant is not None and grant.expires_ms <= self._servicer.service.now_ms():
            return  # the read refuses the expired token, as every table did before
        try:
            table = self._servicer.table_message(record, grant)
        except Exception:  # the hub's read or the commit calling this goes on; the stream reads
            log.exception("table_not_built")
            return
        self._rev = record.rev
        self._queue((record.rev, (record.version, record.event_seq), table))

    async def after(self, table: Table | None, last: Cursor) -> Message:
        """The table to send after events up to ``last``: ``table``, built with them, if it
        holds them all and no table sent since is newer; else one read now."""
        if table is not None and table[0] >= self._rev and table[1] >= last:
            return table[2]
        return await self.read()

    async def read(self) -> Message:
        grant, record = await self._servicer.service.admit(self._match_id, self._token)
        self._rev = max(self._rev, record.rev)
        return self._servicer.table_message(record, grant)


class _Lookahead:
    """A watch's next event asked for ahead, in a task of its own: whether it is already
    there tells a commit's batch from the next one, and waiting for it can time out without
    cancelling the watch itself."""

    def __init__(self, events: AsyncGenerator[StoredEvent, None]) -> None:
        self.events = events
        self.task: asyncio.Future[StoredEvent] | None = None

    def next(self) -> asyncio.Future[StoredEvent]:
        if self.task is None:
            self.task = asyncio.ensure_future(anext(self.events))
        return self.task

    def ready(self) -> bool:
        return self.task is not None and self.task.done()

    def ended(self) -> bool:
        """The watch has nothing more (its last event was the match's end)."""
        return self.ready() and isinstance(self.task.exception(), StopAsyncIteration)  # type: ignore[union-attr]

    def take(self) -> StoredEvent | None:
        """The event asked for (done), None at the watch's end; its error is raised."""
        task, self.task = self.task, None
        assert task is not None and task.done()
        try:
            return task.result()
        except StopAsyncIteration:
            return None

    async def cancel(self) -> None:
        task, self.task = self.task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})
