"""End to end in headless Chromium: the page served by the gateway's web port creates a
match of each game in its lobby, a tab per seat plays it to the end by clicking legal
moves, one tab reloads mid-match and goes on, a refused move shows the server's rule and
changes nothing, a spectator sees no hidden card, the scores shown are GetMatch's, and no page
ever shows a wire name (an enum value, "seat N", an object printed as text)."""

from __future__ import annotations

import random
import re
import struct
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from playwright.async_api import Browser, Page, WebSocketRoute

from tests.web.conftest import ARTIFACTS, WebStack
from tests.web.harness import play_types, sent_kind
from tests.web.players import TIMEOUT_MS, Chooser, Tab, any_move, preferring

MAX_CLICKS = 1500
STALL_S = 60
# What the page must never show a person: an enum's wire name, a seat number, an object
# printed as text.
WIRE_TEXT = re.compile(r"\b[A-Z]{2,}_[A-Z_]+\b|seat \d|\[object")
# An enum value said with its type's name once more ("color color red", "suit suit clubs").
STUTTER = re.compile(r"\b(color|colour|suit|kind|side|terrain|phase|effect|type) \1\b")


async def assert_words_only(tab: Tab) -> None:
    shown = await tab.page.locator("body").inner_text()
    found = WIRE_TEXT.findall(shown)
    assert not found, f"{tab.name}'s page shows wire names {sorted(set(found))}"
    stutter = [m.group(0) for m in STUTTER.finditer(shown)]
    assert not stutter, f"{tab.name}'s page says {sorted(set(stutter))}"


@dataclass
class Setup:
    game: str
    players: int
    # Seats played by the server's bots (the last ones); the others by browser tabs.
    bots: int = 0
    # Lobby form inputs: option name -> value (checkbox: bool).
    options: dict[str, Any] = field(default_factory=dict)
    choose: Chooser = any_move


# Small matches: More ends after one round; the choosers end turns and rounds early.
SETUPS = [
    Setup("momiji", 2),
    Setup("mori", 3, bots=2),
    Setup(
        "more",
        3,
        bots=2,
        options={"max_rounds": 1},
        choose=preferring("discard", "draw", never=("takeBack",)),
    ),
    Setup(
        "morisi",
        2,
        bots=1,
        options={"layout": "hexagon"},
        choose=preferring("buildRoute", "endTurn", never=("undoStick",)),
    ),
    Setup("happy_mochi", 2, bots=1, choose=preferring("playDuo")),
]


async def open_tab(browser: Browser, url: str, name: str) -> Tab:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    await page.goto(url)
    await page.evaluate("name => localStorage.setItem('mogames.name', name)", name)
    return Tab(page, name)


async def create_in_lobby(tab: Tab, setup: Setup) -> None:
    await tab.page.reload()
    form = tab.page.locator(f"form.game[data-game={setup.game}]")
    await form.locator("[name=players]").fill(str(setup.players))
    await form.locator("[name=bots]").fill(str(setup.bots))
    for name, value in setup.options.items():
        box = form.locator(f"[data-option={name}]")
        if isinstance(value, bool):
            await box.set_checked(value)
        else:
            await box.fill(str(value))
    await form.locator("button.create").click()
    await tab.page.wait_for_selector("section.table")


class MoveTamper:
    """A page's PlayMatch WebSockets passed through Playwright, so that a test can pin its
    next move to a version the match is not at (expected_version): the server refuses it."""

    def __init__(self) -> None:
        self.stale_at: int | None = None

    async def install(self, page: Page) -> None:
        await page.route_web_socket("**/PlayMatch", self._route)

    def _route(self, socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()
        request_type = play_types(socket.url).PlayMatchRequest

        def from_page(message: str | bytes) -> None:
            if self.stale_at is not None and sent_kind(message) == "move":
                assert isinstance(message, bytes)
                request = request_type.FromString(message[6:])
                request.move.expected_version = self.stale_at
                body = request.SerializeToString()
                message = b"\x00" + struct.pack(">BI", 0, len(body)) + body
                self.stale_at = None
            server.send(message)

        socket.on_message(from_page)


async def refuse_once(active: Tab, tamper: MoveTamper) -> None:
    """The active tab's next move goes out pinned to a version the match is not at: the
    server refuses it (stale_version) and the page must say so and change nothing."""
    before = await active.version()
    # Far ahead: never the match's version, whoever else moves meanwhile (the pinned version
    # is checked before the turn and the rules: services/runtime/checks.py).
    tamper.stale_at = before + 1_000_000
    await active.click_move(0)
    error = active.page.locator("#error")
    assert await error.get_attribute("data-reason") == "stale_version"
    # The rule is said once, in words.
    assert "stale_version" not in await error.inner_text()
    assert await active.version() == before


@pytest.mark.parametrize("setup", SETUPS, ids=[s.game for s in SETUPS])
async def test_a_match_played_in_the_browser(
    quick_bots_stack: WebStack, browser: Browser, setup: Setup
) -> None:
    web_stack = quick_bots_stack
    rng = random.Random(setup.game)
    creator = await open_tab(browser, web_stack.url, "Ada")
    tampers = {creator.name: MoveTamper()}
    await tampers[creator.name].install(creator.page)
    await create_in_lobby(creator, setup)
    link = await creator.page.locator("#join-link").input_value()
    match_id = link.split("match=")[1]
    tabs = [creator]
    for n in range(1, setup.players - setup.bots):
        tab = await open_tab(browser, link, f"Player{n}")
        tampers[tab.name] = MoveTamper()
        await tampers[tab.name].install(tab.page)
        await tab.page.reload()
        await tab.page.locator("#join").click()
        await tab.page.wait_for_selector(f"#you[data-seat='{n}']")
        tabs.append(tab)
    for tab in tabs:
        await tab.page.wait_for_selector("section.table[data-status=IN_PROGRESS]")
    by_seat = {await tab.seat(): tab for tab in tabs}
    assert sorted(by_seat) == list(range(setup.players - setup.bots))

    clicks = 0
    refused = reloaded = shot = False
    last_progress, last_version = time.monotonic(), -1
    while await creator.status() == "IN_PROGRESS":
        assert clicks < MAX_CLICKS, f"{setup.game}: not over after {clicks} clicks"
        if (version := await creator.version()) != last_version:
            last_progress, last_version = time.monotonic(), version
        if time.monotonic() - last_progress > STALL_S:
            await creator.page.screenshot(path=ARTIFACTS / f"{setup.game}-stalled.png", full_page=True)
            served = await web_stack.cluster.client(setup.game).match(match_id)
            raise AssertionError(
                f"{setup.game}: no move for {STALL_S} s at version {version} on the page; the server "
                f"has version {served.version}, active seats {list(served.active_seats)}"
            )
        for tab in tabs:
            moves = await tab.moves()
            if not moves:
                continue
            if not refused and clicks >= 1:
                await refuse_once(tab, tampers[tab.name])
                refused = True
                continue
            await tab.click_move(setup.choose(moves, rng))
            clicks += 1
            await assert_words_only(tab)
            if clicks % 20 == 0:
                print(f"{setup.game}: {clicks} clicks, version {await tab.version()}", flush=True)
            break
        else:
            await creator.page.wait_for_timeout(50)
        if clicks == 2 and not reloaded:
            # The page keeps the seat's token: after a reload it is the same seat, playing on.
            await creator.page.reload()
            await creator.page.wait_for_selector("section.table[data-status]")
            assert await creator.seat() == 0
            reloaded = True
        if clicks == 3 and not shot:
            await screenshots(setup.game, tabs, await open_tab(browser, link, "Spectator"))
            shot = True

    # A spectator arriving at the end sees the whole match's result too.
    spectator = await open_tab(browser, link, "Late spectator")
    for tab in [*tabs, spectator]:
        await tab.page.wait_for_selector("#final")
        await assert_words_only(tab)
    await creator.page.screenshot(path=ARTIFACTS / f"{setup.game}-final.png", full_page=True)
    final = await web_stack.cluster.client(setup.game).match(match_id)
    assert final.status == 3  # FINISHED
    for tab in [*tabs, spectator]:
        assert await tab.scores() == list(final.scores)
    assert reloaded and shot and refused
    for tab in [*tabs, spectator]:
        await tab.page.context.close()


async def screenshots(game: str, tabs: list[Tab], spectator: Tab) -> None:
    """Each seat's table and the spectator's; the spectator's shows no private item."""
    for tab in tabs:
        await tab.page.screenshot(path=ARTIFACTS / f"{game}-seat{await tab.seat()}.png", full_page=True)
    await spectator.page.wait_for_selector("#you")
    assert "Spectating" in await spectator.page.locator("#you").inner_text()
    await spectator.page.wait_for_selector("#board")
    await spectator.page.screenshot(path=ARTIFACTS / f"{game}-spectator.png", full_page=True)
    assert await spectator.page.locator("[data-private]").count() == 0
    assert sum([await tab.page.locator("[data-private]").count() for tab in tabs]) > 0
    # Only while it matters: every open tab costs the server a watch and a refresh per move.
    await spectator.page.context.close()
