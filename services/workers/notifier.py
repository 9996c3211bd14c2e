"""The notifier worker: every bound seat a notice concerns gets one webhook call.

The call is an HTTP POST of a JSON body to the operator's URL with:
- ``Mogames-Signature: sha256=<hex>``: HMAC-SHA256 of the exact body bytes with the secret;
- ``Idempotency-Key``: ``<match_id>:<version>:<notice>:<player_id>``, the same on every
  retry and every redelivery, so a receiver drops duplicates by it.
A try fails on a connection error, a timeout or an answer other than 2xx; it is tried again
after a wait that doubles from the first backoff up to the longest, with jitter. After
``max_tries`` failures, or at once on a 4xx other than 408 and 429 (the receiver refuses
it), the notification is written to the dead-letter stream.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import random
import time
from typing import Any

import httpx
import structlog

from services.runtime import keys
from services.runtime.redis_client import RedisClient
from services.workers import notify_settings, worker_metrics
from services.workers.activity import ActivityEntry
from services.workers.consumer import ConsumerSettings
from services.workers.settings import WebhookSettings

log = structlog.get_logger("notifier")

GROUP = "notifier"
SIGNATURE_HEADER = "Mogames-Signature"
KEY_HEADER = "Idempotency-Key"
DEAD_LETTERS_KEPT = 100_000
# Entries one worker holds at once, being delivered or waiting for their next try: a
# receiver that is down holds them in backoff without stopping the entries behind them
# from being tried (the calls at once are bounded apart, by the settings' concurrency).
ENTRIES_AT_ONCE = 1000


def signature(secret: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def body_of(entry: ActivityEntry, seat: int, player: str) -> bytes:
    return json.dumps(
        {
            "id": entry.notice_key(player),
            "notice": entry.notice,
            "game": entry.game,
            "match_id": entry.match_id,
            "version": entry.version,
            "player_id": player,
            "seat": seat,
            "at_ms": entry.at_ms,
            "deadline_ms": entry.deadlines.get(seat, 0),
            "status": entry.status,
            "scores": entry.scores,
            "winners": entry.winners,
        },
        separators=(",", ":"),
    ).encode()


def backoff_s(settings: WebhookSettings, failed_tries: int) -> float:
    """The wait after the ``failed_tries``-th failure: doubling, capped, with jitter (half to all)."""
    full = min(settings.first_backoff_ms * 2 ** (failed_tries - 1), settings.max_backoff_ms) / 1000
    return full * random.uniform(0.5, 1.0)


def is_refused(status: int) -> bool:
    """The receiver will never take it: no point trying again."""
    return 400 <= status < 500 and status not in (408, 429)


class Notifier:
    def __init__(
        self, redis: RedisClient, settings: WebhookSettings, http: httpx.AsyncClient, consumer: str
    ) -> None:
        self.redis = redis
        self.settings = settings
        self.http = http
        self.consumer = consumer
        self._calls = asyncio.Semaphore(settings.concurrency)

    async def handle(self, entry: ActivityEntry) -> None:
        calls = []
        for seat in entry.seats:
            player = entry.player_of(seat)
            if not player:
                continue
            held_back = await notify_settings.holds_back(self.redis, player, entry.match_id, time.time())
            if held_back:
                worker_metrics.notification(held_back)
                continue
            calls.append(self.deliver(entry, seat, player))
        await asyncio.gather(*calls)

    async def deliver(self, entry: ActivityEntry, seat: int, player: str) -> None:
        body = body_of(entry, seat, player)
        key = entry.notice_key(player)
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: signature(self.settings.secret, body),
            KEY_HEADER: key,
        }
        error = ""
        for tries in range(1, self.settings.max_tries + 1):
            try:
                async with self._calls:
                    answer = await self.http.post(
                        self.settings.url,
                        content=body,
                        headers=headers,
                        timeout=self.settings.timeout_ms / 1000,
                    )
                if 200 <= answer.status_code < 300:
                    worker_metrics.notification("sent")
                    worker_metrics.notification_delay(max(time.time() - entry.at_ms / 1000, 0.0))
                    return
                error = f"HTTP {answer.status_code}"
                if is_refused(answer.status_code):
                    worker_metrics.notification("failed")
                    break
            except httpx.HTTPError as failure:
                error = repr(failure)
            worker_metrics.notification("failed")
            if tries < self.settings.max_tries:
                log.info("notification_retry", key=key, tries=tries, error=error)
                await self._hold(entry)
                await asyncio.sleep(backoff_s(self.settings, tries))
        await self._dead_letter(entry, key, body, tries, error)

    async def _hold(self, entry: ActivityEntry) -> None:
        """Reset the entry's idle time: while this worker is still trying, nobody claims it."""
        await self.redis.xclaim(
            keys.activity(entry.game), GROUP, self.consumer, 0, [entry.entry_id], justid=True
        )

    async def _dead_letter(self, entry: ActivityEntry, key: str, body: bytes, tries: int, error: str) -> None:
        fields: dict[Any, Any] = {
            "key": key,
            "body": body,
            "tries": tries,
            "error": error,
            "game": entry.game,
        }
        await self.redis.xadd(keys.notify_dead_letters(), fields, maxlen=DEAD_LETTERS_KEPT, approximate=True)
        worker_metrics.notification("dead_lettered")
        log.warning("notification_dead_lettered", key=key, tries=tries, error=error)


def consumer_settings(consumer: str, claim_idle_ms: int, claim_every_ms: int) -> ConsumerSettings:
    return ConsumerSettings(
        group=GROUP,
        consumer=consumer,
        concurrency=ENTRIES_AT_ONCE,
        claim_idle_ms=claim_idle_ms,
        claim_every_s=claim_every_ms / 1000,
    )
