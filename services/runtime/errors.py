"""Every error a client can get, and the one place that maps errors to gRPC status codes.

Refusals carry rich details (``grpc-status-details-bin``): an ``ErrorInfo`` whose
``reason`` is the rule id (``follow_suit``, ``stale_version``), and for malformed input a
``BadRequest`` naming the field.
"""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status
from mogames.common.v1 import common_pb2
from redis.exceptions import ClusterDownError, SlotNotCoveredError, TryAgainError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from services.engine import BadOptions, MalformedMove, MoveError, RuleViolation

DOMAIN = "mogames"


class ServiceError(Exception):
    code = grpc.StatusCode.INTERNAL
    reason = "internal"

    def __init__(self, message: str, reason: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or self.reason
        self.field = field


class InvalidArgument(ServiceError):
    code = grpc.StatusCode.INVALID_ARGUMENT
    reason = "invalid_argument"


class NotFound(ServiceError):
    code = grpc.StatusCode.NOT_FOUND
    reason = "match_not_found"


class FailedPrecondition(ServiceError):
    code = grpc.StatusCode.FAILED_PRECONDITION
    reason = "failed_precondition"


class Aborted(ServiceError):
    code = grpc.StatusCode.ABORTED
    reason = "stale_version"


class Unauthenticated(ServiceError):
    code = grpc.StatusCode.UNAUTHENTICATED
    reason = "unauthenticated"


class SeatRevoked(Unauthenticated):
    """An open WatchMatch or PlayMatch whose token was revoked ends with this, at once."""

    reason = "token_revoked"

    def __init__(self) -> None:
        super().__init__(
            "token_revoked: this seat's token was revoked while the stream was open (the seat was"
            " rejoined with its rejoin key, left, or handed to a bot); nothing more of the seat is sent"
        )


class PermissionDenied(ServiceError):
    code = grpc.StatusCode.PERMISSION_DENIED
    reason = "permission_denied"


class Unavailable(ServiceError):
    """Retry later (with the same request id): the client gets a RetryInfo saying when."""

    code = grpc.StatusCode.UNAVAILABLE
    reason = "store_unavailable"

    def __init__(self, message: str, reason: str | None = None, retry_after_s: float = 1.0) -> None:
        super().__init__(message, reason=reason)
        self.retry_after_s = retry_after_s


class Unimplemented(ServiceError):
    """An RPC of the contract this server does not serve yet."""

    code = grpc.StatusCode.UNIMPLEMENTED
    reason = "unimplemented"


class ResourceExhausted(ServiceError):
    """A client went over a limit; ``retry_after_s`` goes to the client as a RetryInfo."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED
    reason = "rate_limited"

    def __init__(self, message: str, retry_after_s: float, reason: str | None = None) -> None:
        super().__init__(message, reason=reason)
        self.retry_after_s = retry_after_s


# Messages and log lines may quote client input: never more than this of it.
MAX_ECHO_CHARS = 300


def clip(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def invalid_request(message_type: str) -> InvalidArgument:
    return InvalidArgument(f"request: not a valid {message_type} message", reason="undecodable_request")


def to_service_error(error: Exception) -> ServiceError | None:
    """The client-facing form of a known error; None for a bug (INTERNAL)."""
    if isinstance(error, ServiceError):
        return error
    if isinstance(error, (MalformedMove, BadOptions)):
        return InvalidArgument(str(error), reason="invalid_argument", field=error.rule)
    if isinstance(error, RuleViolation):
        return FailedPrecondition(str(error), reason=error.rule)
    if isinstance(error, MoveError):
        return InvalidArgument(str(error), field=error.rule)
    # The cluster ones: a failover in progress, a slot without a master for a moment.
    store_down = (ClusterDownError, SlotNotCoveredError, TryAgainError)
    if isinstance(error, (RedisConnectionError, RedisTimeoutError, *store_down)) or _lost_connection(error):
        # A commit is one script, applied whole or not at all: retrying the same request_id is
        # safe whichever happened.
        return Unavailable("match store unavailable, retry with the same request_id")
    if isinstance(error, grpc.aio.AioRpcError):
        return _from_backend(error)
    return None


def _lost_connection(error: Exception) -> bool:
    """A write on a connection closed under it: during a Redis Cluster failover redis-py's
    cluster client closes a failed node's connections, also under a command still using
    one, and the event loop (uvloop, asyncio alike) refuses the write with this
    RuntimeError."""
    return isinstance(error, RuntimeError) and str(error).startswith("unable to perform operation on")


def stream_cut(error: grpc.aio.AioRpcError) -> bool:
    """gRPC's own client-side status for a stream the server ended while this side was
    still writing to it (the server's status is lost): a cut, not a refusal."""
    return error.code() == grpc.StatusCode.INTERNAL and error.details() == "Internal error from Core"


def resume_elsewhere(message: str) -> Unavailable:
    """A stream cut by its replica (stopping, or gone): open it again, after the last event
    received; it resumes on another replica."""
    return Unavailable(message, "stream_cut", RESUME_AFTER_S)


# How soon a client whose stream was cut should open it again.
RESUME_AFTER_S = 0.1


def no_replica(service: str) -> Unavailable:
    """A game's call that no replica can take now: retry it later."""
    return Unavailable(f"{service}: no replica is reachable, retry later", reason="no_replica")


def unreached(service: str, error: grpc.aio.AioRpcError) -> Unavailable | None:
    """``no_replica`` for a call the gateway forwarded that failed before its replica answered
    anything, else None. Such a failure is gRPC's own UNAVAILABLE, without the rich details
    every status of ours carries: the replica went down after it was chosen (or its first
    connection failed), and the client is told so as when none was up to choose."""
    if error.code() != grpc.StatusCode.UNAVAILABLE:
        return None
    if any(key == "grpc-status-details-bin" for key, _value in error.trailing_metadata() or ()):
        return None
    return no_replica(service)


def relayed_failure(service: str, error: grpc.aio.AioRpcError, answered: bool) -> Unavailable | None:
    """What a gateway tells its client of a call it forwarded to ``service`` that failed not
    with the replica's own status: the stream the replica ended while it was written to (its
    shutdown: open it again and resume, never an internal error), or, before the replica
    ``answered`` anything, a replica never reached (``unreached``). None: the replica's status
    goes to the client as it is."""
    if stream_cut(error):
        return resume_elsewhere("the replica ended the stream: open it again to resume")
    return None if answered else unreached(service, error)


# A call the gateway made to a game service on a client's behalf (the lobby's): a replica
# down, slow or out of time is the client's cue to retry, never an internal error.
_BACKEND_RETRY = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
_BACKEND_REFUSALS = {
    cls.code: cls
    for cls in (InvalidArgument, NotFound, FailedPrecondition, Aborted, Unauthenticated, PermissionDenied)
}


def _from_backend(error: grpc.aio.AioRpcError) -> ServiceError | None:
    if stream_cut(error):
        return resume_elsewhere("the game service ended the call (it may be stopping): retry")
    code = error.code()
    details = clip(error.details() or "")
    reason, retry_after_s = _backend_details(error)
    if code in _BACKEND_RETRY:
        message = f"game service unavailable ({code.name}: {details}), retry"
        return Unavailable(message, "backend_unavailable", retry_after_s or 1.0)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return ResourceExhausted(details, retry_after_s or 1.0, reason or None)
    refusal = _BACKEND_REFUSALS.get(code)
    return None if refusal is None else refusal(details, reason or None)


def _backend_details(error: grpc.aio.AioRpcError) -> tuple[str, float]:
    """The reason and retry delay a backend's rich details carry ('' and 0 when none)."""
    reason, retry_after_s = "", 0.0
    for key, value in error.trailing_metadata() or ():
        if key != "grpc-status-details-bin" or not isinstance(value, bytes):
            continue
        for detail in status_pb2.Status.FromString(value).details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason = info.reason
            elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                retry = error_details_pb2.RetryInfo()
                detail.Unpack(retry)
                retry_after_s = retry.retry_delay.ToMilliseconds() / 1000
    return reason, retry_after_s


def to_status(error: ServiceError) -> grpc.Status:
    message = clip(error.message)
    details: list[Message] = [error_details_pb2.ErrorInfo(reason=error.reason, domain=DOMAIN)]
    if error.field:
        violation = error_details_pb2.BadRequest.FieldViolation(field=clip(error.field), description=message)
        details.append(error_details_pb2.BadRequest(field_violations=[violation]))
    if isinstance(error, (ResourceExhausted, Unavailable)):
        delay = duration_pb2.Duration()
        delay.FromMilliseconds(max(1, round(error.retry_after_s * 1000)))
        details.append(error_details_pb2.RetryInfo(retry_delay=delay))
    packed = []
    for detail in details:
        any_detail = any_pb2.Any()
        any_detail.Pack(detail)
        packed.append(any_detail)
    status = status_pb2.Status(code=getattr(code_pb2, error.code.name), message=message, details=packed)
    return rpc_status.to_status(status)


def to_refusal(error: ServiceError) -> common_pb2.MoveRefused:
    """A refused move on PlayMatch, answered on the stream: SubmitMove's status, in-band."""
    return common_pb2.MoveRefused(
        code=error.code.value[0],
        message=clip(error.message),
        reason=error.reason,
        field=clip(error.field or ""),
    )
