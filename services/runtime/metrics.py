"""Prometheus metrics of every process, served on ``MOGAMES_METRICS_LISTEN`` (off when empty).

The runtime updates its own figures through the small functions below, so no other module
needs to know prometheus_client's types.
"""

from __future__ import annotations

from collections import Counter as Tally
from typing import Any

import prometheus_client
from prometheus_client import Counter, Gauge, Histogram

# Latency buckets from 0.5 ms to 10 s: a move is a few ms, a replica outage seconds.
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

RPCS = Counter("mogames_rpcs", "RPCs answered, by method and status code", ["method", "code"])
RPC_SECONDS = Histogram("mogames_rpc_seconds", "Time to answer a unary RPC", ["method"], buckets=_BUCKETS)
MOVES_COMMITTED = Counter(
    "mogames_moves_committed", "Moves committed: players', server bots' and timed-out seats'", ["game"]
)
COMMIT_CONFLICTS = Counter(
    "mogames_commit_conflicts", "Commits that lost a race for the match revision", ["game"]
)
COMMIT_RETRIES = Counter("mogames_commit_retries", "Commit attempts after a lost race", ["game"])
WATCHERS = Gauge("mogames_watchers", "Open WatchMatch streams on this process", ["service"])
WATCHED_MATCHES = Gauge(
    "mogames_watched_matches", "Matches with at least one open watch on this process", ["service"]
)
REDIS_SECONDS = Histogram(
    "mogames_redis_command_seconds", "Redis command (or pipeline) round trip", ["command"], buckets=_BUCKETS
)
BOT_DECISION_SECONDS = Histogram(
    "mogames_bot_decision_cpu_seconds",
    "CPU time of a searching bot's decision in its worker process",
    ["game", "level"],
    buckets=_BUCKETS,
)
STALLED_MATCHES = Gauge(
    "mogames_stalled_matches",
    "Live matches whose seat to move is watched here but got no prompt for MOGAMES_STALL_AFTER_S, "
    "with nothing due",
    ["game"],
)
ACTIVITY_SWEPT = Counter(
    "mogames_activity_swept",
    "Activity entries a scheduler's sweep delivered from a match's outbox: their committer died "
    "after its commit, before it told the players",
    ["game"],
)
BACKENDS_UP = Gauge(
    "mogames_gateway_backends_up", "Replicas answering SERVING, per game service", ["service"]
)


class MetricsPortError(RuntimeError):
    pass


def serve(listen: str) -> None:
    """Serve ``/metrics`` over HTTP on ``host:port`` from a background thread."""
    host, _, port = listen.rpartition(":")
    try:
        prometheus_client.start_http_server(int(port), addr=host.strip("[]"))
    except OSError as error:
        message = f"cannot listen on {listen} (MOGAMES_METRICS_LISTEN): {error.strerror}"
        raise MetricsPortError(message) from None


def move_committed(game: str) -> None:
    """Once per move in the match's history, whoever made it (SubmitMove or the scheduler)."""
    counter = _moves_committed.get(game)
    if counter is None:
        counter = _moves_committed[game] = MOVES_COMMITTED.labels(game=game)
    counter.inc()


# Label children by game: looked up once, not on every move.
_moves_committed: dict[str, Any] = {}


def bot_decided(game: str, level: str, cpu_s: float) -> None:
    BOT_DECISION_SECONDS.labels(game=game, level=level).observe(cpu_s)


def commit_conflict(game: str, retrying: bool) -> None:
    COMMIT_CONFLICTS.labels(game=game).inc()
    if retrying:
        COMMIT_RETRIES.labels(game=game).inc()


def activity_swept(game: str, entries: int) -> None:
    ACTIVITY_SWEPT.labels(game=game).inc(entries)


class WatchCount:
    """Open watches of one game service and the distinct matches they watch."""

    def __init__(self, service: str) -> None:
        self._watchers = WATCHERS.labels(service=service)
        self._matches = WATCHED_MATCHES.labels(service=service)
        self._per_match: Tally[str] = Tally()

    def opened(self, match_id: str) -> None:
        self._watchers.inc()
        self._per_match[match_id] += 1
        self._matches.set(len(self._per_match))

    def closed(self, match_id: str) -> None:
        self._watchers.dec()
        self._per_match[match_id] -= 1
        if self._per_match[match_id] <= 0:
            del self._per_match[match_id]
        self._matches.set(len(self._per_match))


_watch_counts: dict[str, WatchCount] = {}


def watch_count(service: str) -> WatchCount:
    count = _watch_counts.get(service)
    if count is None:
        count = _watch_counts[service] = WatchCount(service)
    return count


def redis_command_seconds(name: str, seconds: float) -> None:
    """A Redis command's time (services/runtime/redis_client.py times every client's)."""
    _redis_seconds(name).observe(seconds)


def _redis_seconds(name: str) -> Any:
    """REDIS_SECONDS for command ``name``: its label child, looked up once."""
    histogram = _redis_histograms.get(name)
    if histogram is None:
        histogram = _redis_histograms[name] = REDIS_SECONDS.labels(command=name)
    return histogram


_redis_histograms: dict[str, Any] = {}
