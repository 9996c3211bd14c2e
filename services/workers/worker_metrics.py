"""Prometheus figures of the notifier and ratings workers (served like every process's, on
``MOGAMES_METRICS_LISTEN``; see services.runtime.metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

NOTIFICATIONS = Counter(
    "mogames_notifications",
    "Webhook notifications by outcome: sent, failed (a try that failed), dead_lettered, "
    "quiet (inside the player's quiet hours), muted (the match's notify me off)",
    ["outcome"],
)
NOTIFY_DELAY_SECONDS = Histogram(
    "mogames_notification_delay_seconds",
    "From the commit to the webhook's answer of its notification",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
STREAM_LAG_SECONDS = Gauge(
    "mogames_stream_lag_seconds",
    "Age of the oldest activity entry a consumer group has not read yet (0: caught up)",
    ["game", "group"],
)
STREAM_PENDING = Gauge(
    "mogames_stream_pending",
    "Activity entries a consumer group read and has not acknowledged",
    ["game", "group"],
)
RATING_UPDATES = Counter(
    "mogames_rating_updates", "Matches whose players' ratings were updated, by ladder", ["ladder"]
)


def notification(outcome: str) -> None:
    NOTIFICATIONS.labels(outcome=outcome).inc()


def notification_delay(seconds: float) -> None:
    NOTIFY_DELAY_SECONDS.observe(seconds)


def stream_lag(game: str, group: str, seconds: float, pending: int) -> None:
    STREAM_LAG_SECONDS.labels(game=game, group=group).set(seconds)
    STREAM_PENDING.labels(game=game, group=group).set(pending)


def rating_update(ladder: str) -> None:
    RATING_UPDATES.labels(ladder=ladder).inc()
