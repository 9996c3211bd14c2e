"""The bench's browser: the calls ``clients.bot.play_match`` makes, as a browser makes them on
the gateway's web port: Connect with binary protobuf over httpx, HTTP/2 or HTTP/1.1, a
WatchMatch stream per seat and one POST per move. A Connect error comes back as the
``grpc.aio.AioRpcError`` the native client would raise, so the bot retries and counts
exactly as it does natively.
"""

from __future__ import annotations

import asyncio
import json
import struct
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import httpx
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient, game_modules
from services.catalog import rules_module

_END_STREAM = 0x02
_HEADERS = {"connect-protocol-version": "1", "connect-timeout-ms": "10000"}


def _error(status: dict[str, Any]) -> grpc.aio.AioRpcError:
    code = status.get("code", "unknown").upper()
    code = {"CANCELED": "CANCELLED"}.get(code, code)
    return grpc.aio.AioRpcError(
        grpc.StatusCode[code], grpc.aio.Metadata(), grpc.aio.Metadata(), status.get("message", "")
    )


class _Watch:
    """A WatchMatch stream: iterate it, ``cancel()`` it (as the native call object)."""

    def __init__(self, messages: AsyncIterator[Any]) -> None:
        self._messages = messages
        self._closing: asyncio.Task[None] | None = None

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._messages

    def cancel(self) -> None:
        self._closing = asyncio.ensure_future(self._messages.aclose())  # type: ignore[attr-defined]


class WebGameClient(GameClient):
    """``GameClient``'s calls on the web port (Connect, binary) at ``base_url``."""

    def __init__(self, http: httpx.AsyncClient, base_url: str, game: str) -> None:
        self.game = game
        self.info = rules_module(game).GAME
        self.pb2, _grpc = game_modules(game)
        self.http = http
        self.base = f"{base_url}/{self.info.full_service}/"
        self.timeout_s = 10.0

    async def _unary(self, method: str, request: Any, reply: Any, token: str | None = None) -> Any:
        headers = {**_HEADERS, "content-type": "application/proto"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        answer = await self.http.post(
            self.base + method, content=request.SerializeToString(), headers=headers
        )
        if answer.status_code != 200:
            raise _error(answer.json())
        return reply.FromString(answer.content)

    async def create(
        self, players: int, seed: int | None = None, options: Any = None, table: Any = None
    ) -> Any:
        request = self.pb2.CreateMatchRequest(players=players, seed=seed)
        if isinstance(table, common_pb2.TableOptions):
            request.table.CopyFrom(table)
        return await self._unary("CreateMatch", request, common_pb2.Match)

    async def join(self, match_id: str, name: str, request_id: str = "", session: str = "") -> Any:
        request = common_pb2.JoinMatchRequest(match_id=match_id, player_name=name, request_id=request_id)
        return await self._unary("JoinMatch", request, common_pb2.JoinMatchResponse)

    async def match(self, match_id: str) -> Any:
        return await self._unary("GetMatch", common_pb2.GetMatchRequest(match_id=match_id), common_pb2.Match)

    async def submit(
        self,
        match_id: str,
        token: str,
        move: Any,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> Any:
        request = self._move_request(move, expected_version, request_id or uuid.uuid4().hex, match_id)
        return await self._unary("SubmitMove", request, self.pb2.SubmitMoveResponse, token)

    def watch(
        self,
        match_id: str,
        token: str | None = None,
        after_version: int | None = None,
        after_seq: int = 0,
        timeout_s: float | None = None,
    ) -> Any:
        request = common_pb2.WatchMatchRequest(match_id=match_id, after_seq=after_seq)
        if after_version is not None:
            request.after_version = after_version
        return _Watch(self._stream("WatchMatch", request, self.pb2.MatchEvent, token))

    async def _stream(self, method: str, request: Any, reply: Any, token: str | None) -> AsyncIterator[Any]:
        headers = {"connect-protocol-version": "1", "content-type": "application/connect+proto"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        body = request.SerializeToString()
        envelope = struct.pack(">BI", 0, len(body)) + body
        async with self.http.stream("POST", self.base + method, content=envelope, headers=headers) as answer:
            if answer.status_code != 200:
                await answer.aread()
                raise _error(answer.json())
            buffer = bytearray()
            async for chunk in answer.aiter_raw():
                buffer.extend(chunk)
                while len(buffer) >= 5:
                    flags, length = struct.unpack_from(">BI", buffer)
                    if len(buffer) < 5 + length:
                        break
                    data = bytes(buffer[5 : 5 + length])
                    del buffer[: 5 + length]
                    if flags & _END_STREAM:
                        end = json.loads(data or b"{}")
                        if "error" in end:
                            raise _error(end["error"])
                        return
                    yield reply.FromString(data)
        raise _error({"code": "unavailable", "message": "the stream ended without its end message"})


def web_http(version: str) -> httpx.AsyncClient:
    """A browser's connections: ``version`` "HTTP/2" (one connection, every call a stream
    of it) or "HTTP/1.1" (a connection per call in flight, kept alive). A watch waits for
    the next move as long as it takes (the server's heartbeats keep it open)."""
    h2 = version == "HTTP/2"
    return httpx.AsyncClient(
        http1=not h2,
        http2=h2,
        timeout=httpx.Timeout(30.0, read=None),
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=8),
    )
