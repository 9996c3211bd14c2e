"""A gateway with its web port on, in front of the session's cluster of game replicas."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import async_playwright

from deploy.tools import chromium_executable
from gateway.server import build as build_gateway
from gateway.web import WebServer, start_web
from services.runtime.settings import GatewaySettings
from tests.conftest import Cluster, running_services
from tests.helpers import bounded

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "clients" / "web" / "dist"
# A second origin allowed to call the web port (CORS); any other is refused.
ALLOWED_ORIGIN = "http://allowed.example:5173"


@dataclass
class WebStack:
    url: str
    cluster: Cluster


@contextlib.asynccontextmanager
async def web_gateway(cluster: Cluster, redis_url: str) -> AsyncIterator[WebStack]:
    """A gateway with its web port on, in front of ``cluster``'s replicas."""
    settings = GatewaySettings(
        listen="127.0.0.1:0",
        backends={game: tuple(addresses) for game, addresses in cluster.replicas_addresses.items()},
        shutdown_grace_s=1,
        log_level="warning",
        redis_url=redis_url,
        web_listen="127.0.0.1:0",
        web_origins=(ALLOWED_ORIGIN,),
        web_root=str(PAGE),
    )
    async with serving_web(settings) as web:
        yield WebStack(f"http://127.0.0.1:{web.port}", cluster)


@contextlib.asynccontextmanager
async def serving_web(settings: GatewaySettings) -> AsyncIterator[WebServer]:
    """A gateway built from ``settings``, with its web port on, stopped afterwards."""
    async with serving_gateway(settings) as (_port, web):
        yield web


@contextlib.asynccontextmanager
async def serving_gateway(settings: GatewaySettings) -> AsyncIterator[tuple[int, WebServer]]:
    """``serving_web``, with the gateway's native port beside its web port."""
    gateway, _checker, pools, port = await build_gateway(settings)
    await gateway.start()
    web = await start_web(settings, pools, port)
    assert web is not None
    try:
        yield port, web
    finally:
        await bounded(web.stop(), "stopping the web port")
        await bounded(gateway.stop(None), "stopping the web port's gateway")
        for pool in pools:
            await bounded(pool.close(), "closing a replica pool")


@pytest.fixture(scope="session")
async def web_stack(cluster: Cluster, redis_url: str) -> AsyncIterator[WebStack]:
    async with web_gateway(cluster, redis_url) as stack:
        yield stack


@pytest.fixture(scope="session")
async def quick_bots_stack(redis_url: str) -> AsyncIterator[WebStack]:
    """The web port in front of replicas whose server bots move at once: the browser tests
    play whole matches against them."""
    async with (
        running_services(redis_url, bot_think_ms=0, scheduler_tick_ms=20) as cluster,
        web_gateway(cluster, redis_url) as stack,
    ):
        yield stack


ARTIFACTS = ROOT / "artifacts" / "web"


def chromium_path() -> str:
    path = chromium_executable()
    assert path, "no chromium: install Debian's package (apt-get install -y chromium); make test says so"
    return path


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Any]:
    assert (PAGE / "index.html").exists(), "the web page is not built: run `make web` (make test does)"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
        yield launched
        await launched.close()
