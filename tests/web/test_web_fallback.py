"""A page whose WebSocket is refused (a proxy that does not pass upgrades, a gateway
restarting) plays over Connect: its seat's watch is a WatchMatch and each move one
SubmitMove, and a waiting page sends nothing. It tries the WebSocket again after a pause,
longer at each refusal in a row, and once upgrades pass again it plays on the WebSocket.
The upgrade is refused in Chromium itself (Playwright's route_web_socket closes it before it
opens, or passes it to the gateway); the gateway and replicas are the real ones."""

from __future__ import annotations

import asyncio
import itertools
import time

from playwright.async_api import Browser, Request, WebSocketRoute

from tests.web.conftest import WebStack
from tests.web.harness import Match, Tab, create_in_lobby, open_tab
from tests.web.test_browser_table import version_above
from tests.web.test_table_gateway import MOVE, playing

MOVES = 3
# The page's first pause before it tries a refused WebSocket again (play_socket.ts's
# SOCKET_RETRY_MS), less the timers' slack; the pauses after it are longer.
FIRST_PAUSE_S = 5 - 0.5
# Refused again during the first part (on a loaded machine), the page may be in a longer
# pause: the longest is 60 s.
BACK_WITHIN_S = 70


class Upgrades:
    """Each WebSocket the page opens, when, and whether it was let through to the gateway."""

    def __init__(self) -> None:
        self.passing = False
        self.knocks: list[tuple[float, bool]] = []

    async def route(self, socket: WebSocketRoute) -> None:
        self.knocks.append((time.monotonic(), self.passing))
        if self.passing:
            socket.connect_to_server()
        else:
            await socket.close()

    @property
    def refused(self) -> int:
        return sum(not passed for _when, passed in self.knocks)

    @property
    def passed(self) -> int:
        return sum(passed for _when, passed in self.knocks)


async def move(tab: Tab, sent: list[str]) -> None:
    await tab.page.wait_for_selector(MOVE)
    del sent[:]
    before = await tab.version()
    await tab.page.locator(MOVE).first.click()
    await version_above(tab, before)
    assert await tab.page.locator("#error").count() == 0


async def test_a_refused_websocket_falls_back_to_connect_and_is_tried_again_later(
    quick_bots_stack: WebStack, browser: Browser
) -> None:
    tab = await open_tab(browser, quick_bots_stack.url, "Ada", {"width": 1280, "height": 800})
    upgrades = Upgrades()
    await tab.page.route_web_socket("**/PlayMatch", upgrades.route)
    sent: list[str] = []

    def request(sent_request: Request) -> None:
        sent.append(sent_request.url.rsplit("/", 1)[-1])

    tab.page.on("request", request)
    await create_in_lobby(tab, Match("happy_mochi", 2, bots=1))
    await playing(tab.page)
    assert upgrades.refused, "the page did not try its WebSocket"
    assert "WatchMatch" in sent, sent
    for _ in range(MOVES):
        knocks = len(upgrades.knocks)
        await move(tab, sent)
        if len(upgrades.knocks) == knocks:
            # The move is one SubmitMove; the table comes on the watch (no read).
            assert sent == ["SubmitMove"], sent
        else:  # the WebSocket tried again meanwhile, refused: the watch opened again
            assert sent.count("SubmitMove") == 1, sent

    # Upgrades pass again: the page's next try opens its WebSocket, and it plays on it.
    upgrades.passing = True
    deadline = time.monotonic() + BACK_WITHIN_S
    while not upgrades.passed:
        assert time.monotonic() < deadline, f"no WebSocket tried within {BACK_WITHIN_S} s: {upgrades.knocks}"
        await asyncio.sleep(0.2)
    for _ in range(MOVES):
        await move(tab, sent)
        # The move went on the WebSocket: no call over HTTP, neither a move nor a watch.
        assert sent == [], sent
    assert upgrades.passed == 1, upgrades.knocks
    # Each try came after a pause: the page does not knock on a refused WebSocket in a loop.
    times = [when for when, _passed in upgrades.knocks]
    pauses = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert pauses and min(pauses) >= FIRST_PAUSE_S, pauses
    await tab.page.context.close()
