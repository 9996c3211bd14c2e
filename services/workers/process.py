"""A worker process: settings, logs, metrics, Redis, then its consumer group until stopped."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys

import httpx
import structlog

from services.runtime import logs, metrics
from services.runtime.redis_client import RedisStartupError, connect, wait_until_ready
from services.runtime.settings import SettingsError
from services.workers import notifier, ratings_worker
from services.workers.consumer import ActivityConsumer
from services.workers.ladders import Ladders
from services.workers.settings import WebhookSettings, WorkerSettings

KINDS = ("notifier", "ratings")

log = structlog.get_logger("worker")


async def run(kind: str, settings: WorkerSettings, webhook: WebhookSettings | None) -> None:
    redis = connect(settings.redis_url, settings.redis_password)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(redis.aclose)
        # A Redis still loading its data after a restart, or briefly away, is waited for.
        await wait_until_ready(redis, settings.redis_url)
        if kind == "notifier":
            assert webhook is not None
            limits = httpx.Limits(max_connections=webhook.concurrency)
            http = await stack.enter_async_context(httpx.AsyncClient(limits=limits))
            worker = notifier.Notifier(redis, webhook, http, settings.consumer)
            group = notifier.consumer_settings(
                settings.consumer, settings.claim_idle_ms, settings.claim_every_ms
            )
            consumer = ActivityConsumer(redis, settings.games, group, worker.handle)
        else:
            rater = ratings_worker.RatingsWorker(Ladders(redis))
            group = ratings_worker.consumer_settings(
                settings.consumer, settings.claim_idle_ms, settings.claim_every_ms
            )
            consumer = ActivityConsumer(redis, settings.games, group, rater.handle)
        running = asyncio.create_task(consumer.run())
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        log.info("worker_started", kind=kind, consumer=settings.consumer, games=settings.games)
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait([running, stopped], return_when=asyncio.FIRST_COMPLETED)
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        # What was being delivered finishes or stays pending for the next worker to claim.
        await consumer.drain()
        log.info("worker_stopped", kind=kind)


def cli(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in KINDS:
        sys.exit(f"usage: python -m services.workers {'|'.join(KINDS)}")
    kind = args[0]
    try:
        settings = WorkerSettings.from_env()
        webhook = WebhookSettings.from_env() if kind == "notifier" else None
    except SettingsError as error:
        sys.exit(f"mogames {kind}: bad settings: {error}")
    logs.configure(settings.log_level, service=kind)
    if settings.metrics_listen:
        metrics.serve(settings.metrics_listen)
    try:
        import uvloop

        uvloop.run(run(kind, settings, webhook))
    except KeyboardInterrupt:
        pass
    except RedisStartupError as error:
        sys.exit(f"mogames {kind}: cannot start: {error}")
