"""Happy Mochi played by hand on the web table, at a desktop's size and a phone's
(tests/web/harness.py): Duos, draws, placing the drawn card, naming who draws, flipping the
value card and passing are all clicks on the table."""

from __future__ import annotations

import random

import pytest
from playwright.async_api import Browser

from tests.web.conftest import WebStack
from tests.web.harness import DESKTOP, PHONE, Match, Tab, click_any_move, play_match

# A deal that ends in about sixty moves (Happy Mochi's length depends on the deal: 59 to 383
# moves over seeds 1 to 5).
SHORT_DEAL = 2


async def hurried(tab: Tab, rng: random.Random) -> None:
    """A Duo when there is one: matches stay short."""
    await click_any_move(tab, rng, prefer=("playDuo",))


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
async def test_happy_mochi_played_on_the_table(
    quick_bots_stack: WebStack, browser: Browser, viewport: dict[str, int]
) -> None:
    tabs = await play_match(
        quick_bots_stack, browser, Match("happy_mochi", 2, hurried, seed=SHORT_DEAL), viewport
    )
    for tab in tabs:
        await tab.page.context.close()
