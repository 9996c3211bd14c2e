"""The table stays right: one watch per page after taking a seat, a waiting page that learns
every move from that watch without a request, a click anywhere on a Morisi tile, leaving that
really gives the seat up, a lobby that says what is wrong with a custom tiles list, and tap
targets a finger can hit on a phone (tests/web/test_table_gateway.py: a gateway frozen,
killed and restarted)."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Browser, Page, WebSocket

from tests.web.conftest import ARTIFACTS, WebStack
from tests.web.players import Tab
from tests.web.test_browser_games import Setup, create_in_lobby, open_tab


class OpenWatches:
    """The watches a page has open (WatchMatch requests and PlayMatch WebSockets), from
    Chromium's own network log, and every message its WebSockets send."""

    def __init__(self, page: Page) -> None:
        self.open: set[Any] = set()
        self.started = 0
        self.frames_sent = 0
        page.on("request", self._started)
        page.on("requestfinished", lambda request: self.open.discard(request))
        page.on("requestfailed", lambda request: self.open.discard(request))
        page.on("websocket", self._socket)

    def _socket(self, socket: WebSocket) -> None:
        self.open.add(socket)
        self.started += 1
        socket.on("framesent", lambda _: setattr(self, "frames_sent", self.frames_sent + 1))
        socket.on("close", lambda _: self.open.discard(socket))
        socket.on("socketerror", lambda _: self.open.discard(socket))

    def _started(self, request: Any) -> None:
        if request.url.endswith("/WatchMatch"):
            self.open.add(request)
            self.started += 1


async def version_above(tab: Tab, version: int) -> None:
    await tab.page.wait_for_function(
        "v => Number(document.querySelector('section.table')?.dataset.version) > v", arg=version
    )


async def test_taking_a_seat_by_link_waiting_without_requests_clicking_a_tile_and_leaving(
    quick_bots_stack: WebStack, browser: Browser
) -> None:
    creator = await open_tab(browser, quick_bots_stack.url, "Ada")
    creator_watches = OpenWatches(creator.page)
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

    # The waiting page learns the move from its watch alone: it sends no request, and no
    # message on its WebSocket.
    sent: list[str] = []
    waiter.page.on("request", lambda request: sent.append(request.url))
    waiter_watches = watches if waiter is joiner else creator_watches
    frames_before = waiter_watches.frames_sent
    # A pawn is placed by clicking the middle of a tile, where its label is drawn.
    before = await mover.version()
    hexes = mover.page.locator("svg.hexmap polygon.clickable")
    assert await hexes.count() > 0
    box = await hexes.first.bounding_box()
    assert box is not None
    await mover.page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    await version_above(mover, before)
    await version_above(waiter, before)
    assert sent == [], f"the waiting page sent {sent}"
    assert waiter_watches.frames_sent == frames_before, "the waiting page sent on its WebSocket"
    assert await waiter.page.locator("#error").count() == 0

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
