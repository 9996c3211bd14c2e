"""Momiji played by hand on the web table, at a desktop's size and a phone's
(tests/web/harness.py): cards collected from the display and placed from the hand, goals,
and every other decision (reveal, discard for an acorn, powers, Koi Pond, pagoda, finishing)
as a choice drawn on the table."""

from __future__ import annotations

import random

import pytest
from playwright.async_api import Browser

from tests.web.conftest import WebStack
from tests.web.harness import DESKTOP, PHONE, Match, Tab, click_any_move, play_match


async def collector(tab: Tab, rng: random.Random) -> None:
    """Collect and place before anything else: matches stay short."""
    await click_any_move(tab, rng, prefer=("placeCard", "collect"))


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
async def test_momiji_played_on_the_table(
    quick_bots_stack: WebStack, browser: Browser, viewport: dict[str, int]
) -> None:
    tabs = await play_match(quick_bots_stack, browser, Match("momiji", 2, collector, bots=1), viewport)
    for tab in tabs:
        await tab.page.context.close()
