"""Morisi played by hand on the web table at a desktop's size and a phone's
(tests/web/harness.py): placing and moving the pawn on the map, laying sticks from a city to
the land paid with (clicked or dragged), building the route, undoing a stick and ending the
turn (confirmed when sticks would go back) are all clicks on the table; the other seat is a
server bot."""

from __future__ import annotations

import random

import pytest
from playwright.async_api import Browser

from tests.web.conftest import WebStack
from tests.web.harness import DESKTOP, PHONE, Match, Tab, play_match
from tests.web.table_moves import kinds_clicked, morisi_move, screenshots


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
async def test_morisi_played_on_the_table(
    quick_bots_stack: WebStack, browser: Browser, viewport: dict[str, int]
) -> None:
    plan: dict[str, int] = {}

    async def strategy(tab: Tab, rng: random.Random) -> None:
        await morisi_move(tab.page, rng, plan)

    match = Match("morisi", 2, strategy, bots=1, bot_level="policy", options={"layout": "hexagon"})
    tabs = await play_match(quick_bots_stack, browser, match, viewport, screenshots("morisi", viewport))
    kinds = await kinds_clicked(tabs[0].page)
    assert {"placePawn", "movePawn", "layStick", "endTurn"} <= kinds, kinds
    for tab in tabs:
        await tab.page.context.close()
