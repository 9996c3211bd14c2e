"""A page whose WebSocket is refused (a proxy that does not pass upgrades) plays over Connect:
its seat's watch is a WatchMatch and each move one SubmitMove, and a waiting page sends
nothing. The upgrade is refused in Chromium itself (Playwright's route_web_socket closes it
before it opens); the gateway and replicas are the real ones."""

from __future__ import annotations

from playwright.async_api import Browser, Request, WebSocketRoute

from tests.web.conftest import WebStack
from tests.web.harness import Match, create_in_lobby, open_tab
from tests.web.test_browser_table import version_above
from tests.web.test_table_gateway import MOVE, playing

MOVES = 3


async def test_a_refused_websocket_falls_back_to_connect(
    quick_bots_stack: WebStack, browser: Browser
) -> None:
    tab = await open_tab(browser, quick_bots_stack.url, "Ada", {"width": 1280, "height": 800})
    refused: list[str] = []

    async def refuse(socket: WebSocketRoute) -> None:
        refused.append(socket.url)
        await socket.close()

    await tab.page.route_web_socket("**/PlayMatch", refuse)
    sent: list[str] = []

    def request(sent_request: Request) -> None:
        sent.append(sent_request.url.rsplit("/", 1)[-1])

    tab.page.on("request", request)
    await create_in_lobby(tab, Match("happy_mochi", 2, bots=1))
    await playing(tab.page)
    assert refused, "the page did not try its WebSocket"
    assert "WatchMatch" in sent, sent
    for _ in range(MOVES):
        await tab.page.wait_for_selector(MOVE)
        del sent[:]
        before = await tab.version()
        await tab.page.locator(MOVE).first.click()
        await version_above(tab, before)
        assert await tab.page.locator("#error").count() == 0
        # The move is one SubmitMove; the table comes on the watch (no read).
        assert sent == ["SubmitMove"], sent
    # Tried once: the page does not knock on a refused WebSocket again.
    assert len(refused) == 1, refused
    await tab.page.context.close()
