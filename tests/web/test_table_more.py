"""More played to the end on the table alone (draw pile, discard pile, picked cards laid as
melds or added to a meld's end, take back), at a desktop's and a phone's size."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser

from tests.web.conftest import WebStack
from tests.web.table2_harness import VIEWPORTS, play_on_the_table
from tests.web.table_moves import more_move


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=list(VIEWPORTS))
async def test_more_on_the_table(quick_bots_stack: WebStack, browser: Browser, viewport: str) -> None:
    kinds = await play_on_the_table(
        quick_bots_stack, browser, "more", 3, {"max_rounds": 1}, VIEWPORTS[viewport], more_move
    )
    assert {"draw", "discard"} <= kinds, kinds
