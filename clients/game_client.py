"""A generic client for any mogames game, using only the RPCs every game shares."""

from __future__ import annotations

import uuid
from types import ModuleType
from typing import Any

import grpc
from google.protobuf import json_format
from mogames.common.v1 import common_pb2

from services.catalog import rules_module
from services.runtime.auth import SESSION_METADATA
from services.runtime.codec import generated_modules, stub_class


def game_modules(game: str) -> tuple[ModuleType, ModuleType]:
    """The generated ``_pb2`` and ``_pb2_grpc`` modules of ``game`` (e.g. "happy_mochi")."""
    return generated_modules(rules_module(game).GAME)


def auth(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


def _watch_request(match_id: str, after_version: int | None, after_seq: int) -> common_pb2.WatchMatchRequest:
    request = common_pb2.WatchMatchRequest(match_id=match_id, after_seq=after_seq)
    if after_version is not None:
        request.after_version = after_version
    return request


class GameClient:
    def __init__(self, channel: grpc.aio.Channel, game: str, timeout_s: float = 10.0) -> None:
        self.game = game
        self.info = rules_module(game).GAME
        self.pb2 = game_modules(game)[0]
        self.stub = stub_class(self.info)(channel)
        self.timeout_s = timeout_s

    async def create(
        self,
        players: int,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        table: common_pb2.TableOptions | dict[str, Any] | None = None,
    ) -> common_pb2.Match:
        """A new match; ``options`` are the game's, ``table`` the platform's (TableOptions)."""
        request = self.pb2.CreateMatchRequest(players=players)
        if seed is not None:
            request.seed = seed
        if options:
            json_format.ParseDict(options, request.options)
        if isinstance(table, dict):
            json_format.ParseDict(table, request.table)
        elif table is not None:
            request.table.CopyFrom(table)
        return await self.stub.CreateMatch(request, timeout=self.timeout_s)

    async def join(
        self, match_id: str, name: str, request_id: str = "", session: str = ""
    ) -> common_pb2.JoinMatchResponse:
        """A seat; with a player's ``session`` (services/players) bound to that player."""
        request = common_pb2.JoinMatchRequest(match_id=match_id, player_name=name, request_id=request_id)
        metadata = ((SESSION_METADATA, session),) if session else None
        return await self.stub.JoinMatch(request, metadata=metadata, timeout=self.timeout_s)

    async def leave(self, match_id: str, token: str) -> common_pb2.Match:
        request = common_pb2.LeaveMatchRequest(match_id=match_id)
        return await self.stub.LeaveMatch(request, metadata=auth(token), timeout=self.timeout_s)

    async def rejoin(self, match_id: str, rejoin_key: str) -> common_pb2.JoinMatchResponse:
        request = common_pb2.RejoinMatchRequest(match_id=match_id, rejoin_key=rejoin_key)
        return await self.stub.RejoinMatch(request, timeout=self.timeout_s)

    async def add_bot(self, match_id: str, seat: int | None = None, level: str = "") -> common_pb2.Match:
        request = common_pb2.AddBotRequest(match_id=match_id, seat=seat, level=level)
        return await self.stub.AddBot(request, timeout=self.timeout_s)

    async def match(self, match_id: str) -> common_pb2.Match:
        return await self.stub.GetMatch(common_pb2.GetMatchRequest(match_id=match_id), timeout=self.timeout_s)

    async def view(self, match_id: str, token: str | None) -> Any:
        """The seat's view, or with no token a spectator's."""
        request = common_pb2.GetViewRequest(match_id=match_id)
        metadata = auth(token) if token else None
        return await self.stub.GetView(request, metadata=metadata, timeout=self.timeout_s)

    async def legal_moves(self, match_id: str, token: str) -> Any:
        request = common_pb2.ListLegalMovesRequest(match_id=match_id)
        return await self.stub.ListLegalMoves(request, metadata=auth(token), timeout=self.timeout_s)

    async def submit(
        self,
        match_id: str,
        token: str,
        move: Any,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> Any:
        request_id = request_id if request_id is not None else uuid.uuid4().hex
        request = self._move_request(move, expected_version, request_id, match_id)
        return await self.stub.SubmitMove(request, metadata=auth(token), timeout=self.timeout_s)

    def _move_request(
        self, move: Any, expected_version: int | None, request_id: str, match_id: str = ""
    ) -> Any:
        request = self.pb2.SubmitMoveRequest(match_id=match_id, request_id=request_id)
        request.move.CopyFrom(move)
        if expected_version is not None:
            request.expected_version = expected_version
        return request

    def watch(
        self,
        match_id: str,
        token: str | None = None,
        after_version: int | None = None,
        after_seq: int = 0,
        timeout_s: float | None = None,
    ) -> Any:
        """The match's stream (a call object: iterate it, ``cancel()`` it): the events after
        position (after_version, after_seq) in (version, seq) order; None = from the first
        join, (v, 0) = from the first event of version v (docs/protocol.md, "The cursor")."""
        request = _watch_request(match_id, after_version, after_seq)
        return self.stub.WatchMatch(request, metadata=auth(token) if token else None, timeout=timeout_s)

    async def play(
        self, match_id: str, token: str, after_version: int | None = None, after_seq: int = 0
    ) -> Any:
        """A PlayMatch stream for the seat of ``token``, its watch asked already: iterate
        it for ``PlayMatchResponse``s, ``send_move`` on it, ``cancel()`` it."""
        call = self.stub.PlayMatch(metadata=auth(token))
        await call.write(self.pb2.PlayMatchRequest(watch=_watch_request(match_id, after_version, after_seq)))
        return call

    async def send_move(
        self, call: Any, move: Any, expected_version: int | None = None, request_id: str = ""
    ) -> None:
        """A move on a ``play`` stream; its answer comes on the stream."""
        await call.write(
            self.pb2.PlayMatchRequest(move=self._move_request(move, expected_version, request_id))
        )
