"""A test client for the web port that speaks each web protocol the way a browser library
would, over httpx: Connect with JSON, Connect with binary protobuf, and gRPC-Web.

Written from the protocol specifications, independently of the server's library, so the
tests check the wire format rather than one library against itself.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import httpx
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2

PROTOCOLS = ("connect-json", "connect-proto", "grpc-web")
_END_STREAM = 0x02
_TRAILERS = 0x80
# gRPC status numbers by Connect code name, to compare both protocols' errors alike.
_GRPC_CODES = {
    "0": "ok",
    "1": "canceled",
    "3": "invalid_argument",
    "4": "deadline_exceeded",
    "5": "not_found",
    "7": "permission_denied",
    "9": "failed_precondition",
    "10": "aborted",
    "12": "unimplemented",
    "13": "internal",
    "14": "unavailable",
    "16": "unauthenticated",
}


@dataclass
class WireError(Exception):
    code: str
    message: str
    # (type name, serialized message) of each rich detail.
    details: list[tuple[str, bytes]] = field(default_factory=list)
    # The answer's HTTP status (a Connect unary error has its own; the others are 200).
    http_status: int = 200

    @property
    def reason(self) -> str:
        for type_name, value in self.details:
            if type_name == "google.rpc.ErrorInfo":
                return error_details_pb2.ErrorInfo.FromString(value).reason
        return ""


def _envelope(data: bytes, flags: int = 0) -> bytes:
    return struct.pack(">BI", flags, len(data)) + data


def _frames(buffer: bytearray) -> list[tuple[int, bytes]]:
    """Complete frames at the head of ``buffer``, removed from it."""
    frames = []
    while len(buffer) >= 5:
        flags, length = struct.unpack(">BI", buffer[:5])
        if len(buffer) < 5 + length:
            break
        frames.append((flags, bytes(buffer[5 : 5 + length])))
        del buffer[: 5 + length]
    return frames


def _connect_error(data: dict[str, Any]) -> WireError:
    details = [(d["type"], base64.b64decode(d["value"] + "===")) for d in data.get("details", [])]
    return WireError(data["code"], data.get("message", ""), details)


def _grpc_error(trailers: dict[str, str]) -> WireError | None:
    status = trailers.get("grpc-status", "0")
    if status == "0":
        return None
    details = []
    if encoded := trailers.get("grpc-status-details-bin"):
        for any_detail in status_pb2.Status.FromString(base64.b64decode(encoded + "===")).details:
            details.append((any_detail.type_url.rsplit("/", 1)[-1], any_detail.value))
    return WireError(_GRPC_CODES.get(status, status), unquote(trailers.get("grpc-message", "")), details)


def _trailer_lines(data: bytes) -> dict[str, str]:
    lines = (line.split(":", 1) for line in data.decode().split("\r\n") if ":" in line)
    return {key.strip().lower(): value.strip() for key, value in lines}


class WebClient:
    def __init__(self, http: httpx.AsyncClient, base_url: str, protocol: str) -> None:
        self.http = http
        self.base_url = base_url
        self.protocol = protocol

    def _encode(self, message: Any) -> bytes:
        if self.protocol == "connect-json":
            return json_format.MessageToJson(message).encode()
        return message.SerializeToString()  # type: ignore[no-any-return]

    def _decode(self, data: bytes, message_class: Any) -> Any:
        if self.protocol == "connect-json":
            return json_format.Parse(data, message_class(), ignore_unknown_fields=True)
        return message_class.FromString(data)

    def _headers(self, token: str | None, stream: bool, timeout_ms: int | None) -> dict[str, str]:
        codec = "json" if self.protocol == "connect-json" else "proto"
        if self.protocol == "grpc-web":
            headers = {"content-type": "application/grpc-web+proto", "x-grpc-web": "1"}
            if timeout_ms is not None:
                headers["grpc-timeout"] = f"{timeout_ms}m"
        else:
            kind = f"application/connect+{codec}" if stream else f"application/{codec}"
            headers = {"content-type": kind, "connect-protocol-version": "1"}
            if timeout_ms is not None:
                headers["connect-timeout-ms"] = str(timeout_ms)
        if token:
            headers["authorization"] = f"Bearer {token}"
        return headers

    async def unary(
        self, path: str, request: Any, response_class: Any, token: str | None = None, timeout_ms: int = 10_000
    ) -> Any:
        grpc_web = self.protocol == "grpc-web"
        body = self._encode(request)
        reply = await self.http.post(
            self.base_url + path,
            content=_envelope(body) if grpc_web else body,
            headers=self._headers(token, stream=False, timeout_ms=timeout_ms),
        )
        if not grpc_web:
            if reply.status_code != 200:
                error = _connect_error(reply.json())
                error.http_status = reply.status_code
                raise error
            return self._decode(reply.content, response_class)
        if error := _grpc_error(dict(reply.headers)):  # a trailers-only answer
            raise error
        frames = _frames(bytearray(reply.content))
        if error := _grpc_error(_trailer_lines(frames[-1][1])):
            raise error
        return self._decode(frames[0][1], response_class)

    async def stream(
        self,
        path: str,
        request: Any,
        response_class: Any,
        token: str | None = None,
        timeout_ms: int | None = None,
    ) -> AsyncIterator[Any]:
        """The stream's messages; raises its error, if it ends with one, at the end."""
        body = _envelope(self._encode(request))
        headers = self._headers(token, stream=True, timeout_ms=timeout_ms)
        async with self.http.stream("POST", self.base_url + path, content=body, headers=headers) as reply:
            if self.protocol == "grpc-web" and (error := _grpc_error(dict(reply.headers))):
                raise error
            buffer = bytearray()
            async for chunk in reply.aiter_raw():
                buffer.extend(chunk)
                for flags, data in _frames(buffer):
                    if flags & _END_STREAM and self.protocol != "grpc-web":
                        if "error" in (end := json.loads(data or b"{}")):
                            raise _connect_error(end["error"])
                        return
                    if flags & _TRAILERS and self.protocol == "grpc-web":
                        if error := _grpc_error(_trailer_lines(data)):
                            raise error
                        return
                    yield self._decode(data, response_class)
