"""More played by hand on the web table at a desktop's size and a phone's
(tests/web/harness.py), one round: drawing from the draw pile, taking the discard pile,
laying picked cards as a meld, adding a picked card to a meld's end, taking the turn back and
dropping a picked card on the discard pile are all clicks on the table; the other seats are
server bots."""

from __future__ import annotations

import random

import pytest
from playwright.async_api import Browser

from tests.web.conftest import WebStack
from tests.web.harness import DESKTOP, PHONE, Match, Tab, play_match
from tests.web.table_moves import kinds_clicked, more_move, screenshots


async def strategy(tab: Tab, rng: random.Random) -> None:
    await more_move(tab.page, rng)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
async def test_more_played_on_the_table(
    quick_bots_stack: WebStack, browser: Browser, viewport: dict[str, int]
) -> None:
    match = Match("more", 3, strategy, bots=2, bot_level="policy", options={"max_rounds": 1})
    tabs = await play_match(quick_bots_stack, browser, match, viewport, screenshots("more", viewport))
    kinds = await kinds_clicked(tabs[0].page)
    assert {"draw", "layMeld", "discard"} <= kinds, kinds
    for tab in tabs:
        await tab.page.context.close()
