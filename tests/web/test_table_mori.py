"""Mori played by hand on the web table at a desktop's size and a phone's
(tests/web/harness.py): cards from the hand, dice from the aid and dice claimed from the mat
are all clicks on the table; the other seats are server bots."""

from __future__ import annotations

import random

import pytest
from playwright.async_api import Browser

from tests.web.conftest import WebStack
from tests.web.harness import DESKTOP, PHONE, Match, Tab, play_match
from tests.web.table_moves import kinds_clicked, mori_move, screenshots


async def strategy(tab: Tab, rng: random.Random) -> None:
    await mori_move(tab.page, rng)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
async def test_mori_played_on_the_table(
    quick_bots_stack: WebStack, browser: Browser, viewport: dict[str, int]
) -> None:
    match = Match("mori", 3, strategy, bots=2, bot_level="policy")
    tabs = await play_match(quick_bots_stack, browser, match, viewport, screenshots("mori", viewport))
    kinds = await kinds_clicked(tabs[0].page)
    assert {"playCard", "claimDie"} <= kinds, kinds
    for tab in tabs:
        await tab.page.context.close()
