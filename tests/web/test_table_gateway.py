"""The table when its gateway fails, with a real gateway process: frozen (SIGSTOP), the page
says "reconnecting" within 5 s, and no more once thawed; frozen again, then killed and started
again on the same ports, the page is playing again within 5 s of the restart with no error
left. A watch (the seat's WebSocket
PlayMatch) ended because the seat's token was revoked (the seat rejoined elsewhere) is not
tried again, over a WebSocket or Connect: the page says so."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from playwright.async_api import Browser, Page

from deploy.redis_server import free_port, wait_for_port
from tests.web.conftest import PAGE, WebStack
from tests.web.harness import Match, create_in_lobby, open_tab
from tests.web.test_browser_table import on_a_phone, version_above

# "Reconnecting" must show within this long of the gateway freezing or going away, and the
# table be playing again within this long of its restart.
NOTICE_MS = 5000
MOVE = "#board [data-testid=move]:not([disabled])"


class GatewayProcess:
    """``python -m gateway`` in front of ``stack``'s replicas, stopped and started on the
    same ports."""

    def __init__(self, stack: WebStack, redis_url: str) -> None:
        web = free_port()
        clean = {k: v for k, v in os.environ.items() if not k.startswith("MOGAMES_")}
        self.env = {
            **clean,
            **{
                f"MOGAMES_BACKENDS_{game.upper()}": ",".join(addresses)
                for game, addresses in stack.cluster.replicas_addresses.items()
            },
            "MOGAMES_REDIS_URL": redis_url,
            "MOGAMES_GATEWAY_LISTEN": f"127.0.0.1:{free_port()}",
            "MOGAMES_WEB_LISTEN": f"127.0.0.1:{web}",
            "MOGAMES_WEB_ROOT": str(PAGE),
            "MOGAMES_LOG_LEVEL": "warning",
            "MOGAMES_SHUTDOWN_GRACE_S": "0",
        }
        self.port = web
        self.url = f"http://127.0.0.1:{web}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "gateway"], env=self.env)
        wait_for_port(self.port, timeout_s=60)

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=30)
        self.process = None

    def signal(self, number: int) -> None:
        assert self.process is not None
        self.process.send_signal(number)


@contextlib.contextmanager
def gateway_process(stack: WebStack, redis_url: str) -> Iterator[GatewayProcess]:
    gateway = GatewayProcess(stack, redis_url)
    gateway.start()
    try:
        yield gateway
    finally:
        if gateway.process is not None:
            gateway.signal(signal.SIGCONT)
            gateway.kill()


async def playing(page: Page) -> None:
    await page.wait_for_selector("section.table[data-status=IN_PROGRESS]")
    await page.wait_for_selector(MOVE)


@pytest.mark.alone
async def test_a_frozen_then_killed_gateway(
    quick_bots_stack: WebStack, browser: Browser, redis_url: str
) -> None:
    with gateway_process(quick_bots_stack, redis_url) as gateway:
        tab = await open_tab(browser, gateway.url, "Ada", {"width": 1280, "height": 800})
        await create_in_lobby(tab, Match("happy_mochi", 2, bots=1))
        await playing(tab.page)
        await on_a_phone(tab.page)
        assert await tab.page.locator("#reconnecting").count() == 0

        # Frozen: the process stops answering, its connections stay open.
        gateway.signal(signal.SIGSTOP)
        await tab.page.wait_for_selector("#reconnecting", timeout=NOTICE_MS)
        # Thawed: the same stream speaks again.
        gateway.signal(signal.SIGCONT)
        await tab.page.wait_for_selector("#reconnecting", state="detached")
        await playing(tab.page)
        # Frozen again, then killed as it is and started again on the same ports.
        gateway.signal(signal.SIGSTOP)
        await tab.page.wait_for_selector("#reconnecting", timeout=NOTICE_MS)
        gateway.kill()
        gateway.start()
        await tab.page.wait_for_selector("#reconnecting", state="detached", timeout=NOTICE_MS)
        await tab.page.wait_for_selector(MOVE, timeout=NOTICE_MS)
        assert await tab.page.locator("#error").count() == 0
        before = await tab.version()
        await tab.page.locator(MOVE).first.click()
        await version_above(tab, before)
        assert await tab.page.locator("#error").count() == 0
        await tab.page.context.close()


async def test_a_watch_ended_by_a_revoked_token_is_not_tried_again(
    quick_bots_stack: WebStack, browser: Browser
) -> None:
    tab = await open_tab(browser, quick_bots_stack.url, "Ada", {"width": 1280, "height": 800})
    await create_in_lobby(tab, Match("happy_mochi", 2, bots=1))
    await playing(tab.page)
    match_id = (await tab.page.locator("#join-link").input_value()).split("match=")[1]
    held = json.loads(await tab.page.evaluate("localStorage.getItem('mogames.seats')"))[match_id]
    watches: list[str] = []
    tab.page.on(
        "request", lambda request: watches.append(request.url) if "WatchMatch" in request.url else None
    )
    tab.page.on("websocket", lambda socket: watches.append(socket.url))
    # The seat taken back elsewhere with its rejoin key: this page's token is revoked.
    await quick_bots_stack.cluster.client("happy_mochi").rejoin(match_id, held["rejoinKey"])
    notice = tab.page.locator("#notice")
    await notice.wait_for()
    assert "taken over" in await notice.inner_text()
    assert await tab.page.locator(MOVE).count() == 0
    # Longer than the page's longest pause between two tries of a watch.
    await tab.page.wait_for_timeout(3000)
    assert watches == [], f"the page watched again after its token was revoked: {watches}"
    await tab.page.context.close()
