"""Mori played to the end on the table alone (cards from the hand, dice from the aid, dice
claimed from the mat), at a desktop's and a phone's size."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser

from tests.web.conftest import WebStack
from tests.web.table2_harness import VIEWPORTS, play_on_the_table
from tests.web.table_moves import mori_move


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=list(VIEWPORTS))
async def test_mori_on_the_table(quick_bots_stack: WebStack, browser: Browser, viewport: str) -> None:
    kinds = await play_on_the_table(quick_bots_stack, browser, "mori", 3, {}, VIEWPORTS[viewport], mori_move)
    assert {"playCard", "claimDie"} <= kinds, kinds
