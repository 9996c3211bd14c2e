"""The workers' settings, from MOGAMES_* environment variables (README's settings table)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from services.catalog import GAME_PACKAGES
from services.runtime.redis_client import RedisUrlError, check_url
from services.runtime.settings import LOG_LEVELS, SettingsError, is_loopback, secret


def _int(name: str, default: int, minimum: int) -> int:
    raw = os.environ.get(name, "")
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise SettingsError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_webhook_url(url: str) -> str:
    """HTTPS, or plain HTTP to a loopback host only (a receiver on this machine, tests)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname and is_loopback(f"{parts.hostname}:0"):
        return url
    raise SettingsError(f"MOGAMES_WEBHOOK_URL must be https:// (http:// only to loopback), got {url!r}")


@dataclass(frozen=True)
class WorkerSettings:
    redis_url: str
    redis_password: str | None
    games: list[str]
    # The consumer's name in its group: stable across restarts of one worker (a restarted
    # worker first finishes what it was handed), distinct between workers.
    consumer: str
    log_level: str = "info"
    metrics_listen: str = ""
    claim_idle_ms: int = 30_000
    claim_every_ms: int = 5_000

    @classmethod
    def from_env(cls) -> WorkerSettings:
        redis_url = os.environ.get("MOGAMES_REDIS_URL") or "redis://127.0.0.1:6379/0"
        try:
            check_url(redis_url)
        except RedisUrlError as error:
            raise SettingsError(f"MOGAMES_REDIS_URL {error}") from None
        games = [g for g in os.environ.get("MOGAMES_RUN_GAMES", "").split(",") if g] or list(GAME_PACKAGES)
        unknown = sorted(set(games) - set(GAME_PACKAGES))
        if unknown:
            raise SettingsError(f"MOGAMES_RUN_GAMES: unknown games {', '.join(unknown)}")
        level = (os.environ.get("MOGAMES_LOG_LEVEL") or "info").lower()
        if level not in LOG_LEVELS:
            raise SettingsError(f"MOGAMES_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
        return cls(
            redis_url=redis_url,
            redis_password=secret("MOGAMES_REDIS_PASSWORD") or None,
            games=games,
            consumer=os.environ.get("MOGAMES_WORKER_NAME") or socket.gethostname(),
            log_level=level,
            metrics_listen=os.environ.get("MOGAMES_METRICS_LISTEN", ""),
            claim_idle_ms=_int("MOGAMES_CLAIM_IDLE_MS", 30_000, minimum=10),
            claim_every_ms=_int("MOGAMES_CLAIM_EVERY_MS", 5_000, minimum=10),
        )


@dataclass(frozen=True)
class WebhookSettings:
    url: str
    secret: bytes
    # Tries of one notification before it goes to the dead-letter stream.
    max_tries: int = 8
    # The wait after the first failed try; doubled after each next one, up to max_backoff_ms.
    first_backoff_ms: int = 500
    max_backoff_ms: int = 30_000
    timeout_ms: int = 5_000
    # Webhook calls at once by one worker, and its connections to the webhook: more costs
    # more CPU a call in httpx's connection pool than it gains.
    concurrency: int = 16

    @classmethod
    def from_env(cls) -> WebhookSettings:
        url = check_webhook_url(os.environ.get("MOGAMES_WEBHOOK_URL", ""))
        key = secret("MOGAMES_WEBHOOK_SECRET")
        if len(key) < 16:
            raise SettingsError("MOGAMES_WEBHOOK_SECRET must be at least 16 characters")
        return cls(
            url=url,
            secret=key.encode(),
            max_tries=_int("MOGAMES_NOTIFY_MAX_TRIES", 8, minimum=1),
            first_backoff_ms=_int("MOGAMES_NOTIFY_FIRST_BACKOFF_MS", 500, minimum=1),
            max_backoff_ms=_int("MOGAMES_NOTIFY_MAX_BACKOFF_MS", 30_000, minimum=1),
            timeout_ms=_int("MOGAMES_NOTIFY_TIMEOUT_MS", 5_000, minimum=100),
            concurrency=_int("MOGAMES_NOTIFY_CONCURRENCY", 16, minimum=1),
        )
