"""The table stays right when the network does not: one watch per page after taking a seat,
a failed read retried until the page is back in sync, "reconnecting" while the gateway is
frozen or down and gone once it is back, a click anywhere on a Morisi tile, leaving that
really gives the seat up, a lobby that says what is wrong with a custom tiles list, and tap
targets a finger can hit on a phone."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

from playwright.async_api import Browser, Page, Route

from gateway.server import build as build_gateway
from gateway.web import WebServer, start_web
from services.runtime.settings import GatewaySettings
from tests.helpers import bounded
from tests.web.conftest import ARTIFACTS, PAGE, WebStack
from tests.web.players import TIMEOUT_MS, Tab
from tests.web.test_browser_games import Setup, create_in_lobby, open_tab

# "Reconnecting" must show within this long of the gateway going away, and the table be
# playing again within this long of its return.
NOTICE_S = 5


class OpenWatches:
    """The WatchMatch requests a page has open, from Chromium's own network log."""

    def __init__(self, page: Page) -> None:
        self.open: set[Any] = set()
        self.started = 0
        page.on("request", self._started)
        page.on("requestfinished", lambda request: self.open.discard(request))
        page.on("requestfailed", lambda request: self.open.discard(request))

    def _started(self, request: Any) -> None:
        if request.url.endswith("/WatchMatch"):
            self.open.add(request)
            self.started += 1


async def version_above(tab: Tab, version: int) -> None:
    await tab.page.wait_for_function(
        "v => Number(document.querySelector('section.table')?.dataset.version) > v", arg=version
    )


async def test_taking_a_seat_by_link_retrying_reads_clicking_a_tile_and_leaving(
    quick_bots_stack: WebStack, browser: Browser
) -> None:
    creator = await open_tab(browser, quick_bots_stack.url, "Ada")
    errors: list[str] = []
    creator.page.on("pageerror", lambda error: errors.append(str(error)))
    # Custom tiles that are not JSON: the lobby says so, and nothing is thrown.
    await creator.page.reload()
    form = creator.page.locator("form.game[data-game=morisi]")
    await form.locator("[data-option=custom_tiles]").fill("[{oops")
    await form.locator("button.create").click()
    await form.locator(".error", has_text="not valid JSON").wait_for()
    assert errors == []
    await create_in_lobby(creator, Setup("morisi", 2, options={"layout": "hexagon"}))

    link = await creator.page.locator("#join-link").input_value()
    match_id = link.split("match=")[1]
    joiner = await open_tab(browser, link, "Bea")
    await joiner.page.reload()
    watches = OpenWatches(joiner.page)
    await joiner.page.locator("#join").click()
    await joiner.page.wait_for_selector("section.table[data-status=IN_PROGRESS]")
    await creator.page.wait_for_selector("section.table[data-status=IN_PROGRESS]")
    # Long enough for a second watch loop to open its stream again after its pause.
    await joiner.page.wait_for_timeout(2500)
    assert len(watches.open) == 1, f"{len(watches.open)} watches open after taking a seat"

    tabs = {await tab.seat(): tab for tab in (creator, joiner)}
    served = await quick_bots_stack.cluster.client("morisi").match(match_id)
    mover, waiter = tabs[served.active_seats[0]], tabs[1 - served.active_seats[0]]

    # The waiting page's next reads fail twice (a gateway hiccup): it must read again.
    failures = 2

    async def fail_twice(route: Route) -> None:
        nonlocal failures
        if failures > 0:
            failures -= 1
            await route.abort()
        else:
            await route.continue_()

    await waiter.page.route("**/GetMatch", fail_twice)
    # A pawn is placed by clicking the middle of a tile, where its label is drawn.
    before = await mover.version()
    hexes = mover.page.locator("svg.hexmap polygon.clickable")
    assert await hexes.count() > 0
    box = await hexes.first.bounding_box()
    assert box is not None
    await mover.page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    await version_above(mover, before)
    await version_above(waiter, before)
    assert failures == 0, "the waiting page did not read the match after the move"
    await waiter.page.wait_for_selector("#reconnecting", state="detached")
    assert await waiter.page.locator("#error").count() == 0
    await waiter.page.unroute("**/GetMatch")

    # Each event once in the log of the page that took its seat by link.
    lines = await joiner.page.locator("#log li").all_inner_texts()
    assert lines and len(lines) == len(set(lines)), lines

    # Leaving gives the seat up on the server (a server bot takes it, the table's default).
    leaver_seat = await joiner.seat()
    await joiner.page.locator("#leave").click()
    notice = await joiner.page.locator("#notice").inner_text()
    assert "bot plays your seat" in notice, notice
    left = await quick_bots_stack.cluster.client("morisi").match(match_id)
    assert left.seats[leaver_seat].bot
    assert await joiner.page.locator("#leave").count() == 0
    assert errors == []
    for tab in (creator, joiner):
        await tab.page.context.close()


@contextlib.asynccontextmanager
async def restartable_web(stack: WebStack, redis_url: str) -> AsyncIterator[Any]:
    """A gateway with a web port in front of ``stack``'s replicas whose web port can be
    stopped and started again on the same address."""
    settings = GatewaySettings(
        listen="127.0.0.1:0",
        backends={game: tuple(addresses) for game, addresses in stack.cluster.replicas_addresses.items()},
        shutdown_grace_s=0,
        log_level="warning",
        redis_url=redis_url,
        web_listen="127.0.0.1:0",
        web_root=str(PAGE),
    )
    gateway, _checker, pools, port = await build_gateway(settings)
    await gateway.start()
    web = await start_web(settings, pools, port)
    assert web is not None
    pinned = dataclasses.replace(settings, web_listen=f"127.0.0.1:{web.port}")

    class Handle:
        server: WebServer | None = web
        url = f"http://127.0.0.1:{web.port}"

        async def kill(self) -> None:
            assert self.server is not None
            await self.server.stop()
            self.server = None

        async def start(self) -> None:
            self.server = await start_web(pinned, pools, port)

    handle = Handle()
    try:
        yield handle
    finally:
        if handle.server is not None:
            await bounded(handle.server.stop(), "stopping the web port")
        await bounded(gateway.stop(None), "stopping the web port's gateway")
        for pool in pools:
            await bounded(pool.close(), "closing a replica pool")


PHONE = {"width": 390, "height": 844}
TAP_PX = 44


async def on_a_phone(page: Page) -> None:
    """At a phone's size every move is a tap target of at least 44 px each way, the cards
    that can be played are marked without a hover, and the hand is in view on one row."""
    await page.set_viewport_size(PHONE)
    sizes = await page.locator("[data-testid=move]:not([disabled])").evaluate_all(
        "els => els.filter(e => e.offsetParent).map(e => [e.getBoundingClientRect().width,"
        " e.getBoundingClientRect().height, e.className])"
    )
    assert sizes
    small = [(w, h, name) for w, h, name in sizes if w < TAP_PX or h < TAP_PX]
    assert not small, f"tap targets under {TAP_PX} px: {small}"
    marks = await page.locator("button.move.card:not([disabled])").evaluate_all(
        "els => els.map(e => getComputedStyle(e).outlineStyle)"
    )
    assert marks and all(mark != "none" for mark in marks), marks
    # The hand is on screen without scrolling, its cards on one row.
    cards = await page.locator("[data-private=hand]").evaluate_all(
        "els => els.map(e => [e.getBoundingClientRect().top, e.getBoundingClientRect().bottom])"
    )
    assert cards
    assert all(top >= 0 and bottom <= PHONE["height"] for top, bottom in cards), cards
    assert len({round(top) for top, _bottom in cards}) == 1, cards
    await page.screenshot(path=ARTIFACTS / "phone.png")
    await page.set_viewport_size({"width": 1280, "height": 900})


async def test_reconnecting_while_the_gateway_is_frozen_or_down(
    quick_bots_stack: WebStack, browser: Browser, redis_url: str
) -> None:
    async with restartable_web(quick_bots_stack, redis_url) as web:
        tab = await open_tab(browser, web.url, "Ada")
        await create_in_lobby(tab, Setup("happy_mochi", 2, bots=1))
        await tab.page.wait_for_selector("section.table[data-status=IN_PROGRESS]")
        await tab.page.wait_for_selector("#moves [data-testid=move]:not([disabled])")
        await on_a_phone(tab.page)

        # Frozen: every request from the page hangs unanswered.
        thawed = asyncio.Event()

        async def hang(route: Route) -> None:
            await thawed.wait()
            with contextlib.suppress(Exception):
                await route.continue_()

        await tab.page.route("**/*", hang)
        await tab.page.wait_for_selector("#reconnecting", timeout=NOTICE_S * 1000)
        thawed.set()
        await tab.page.unroute("**/*")
        await tab.page.wait_for_selector("#reconnecting", state="detached", timeout=NOTICE_S * 1000)

        # Down, then back on the same address.
        await web.kill()
        await tab.page.wait_for_selector("#reconnecting", timeout=NOTICE_S * 1000)
        await web.start()
        await tab.page.wait_for_selector("#reconnecting", state="detached", timeout=NOTICE_S * 1000)
        assert await tab.page.locator("#error").count() == 0
        before = await tab.version()
        await tab.page.locator("#moves [data-testid=move]:not([disabled])").first.click(timeout=TIMEOUT_MS)
        await version_above(tab, before)
        assert await tab.page.locator("#error").count() == 0
        await tab.page.context.close()
