"""Morisi played to the end on the table alone (the pawn placed and moved on the map, sticks
laid from a city to the land paid with, routes built, sticks undone, turns ended with the
table's confirmation), at a desktop's and a phone's size."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, Page

from tests.web.conftest import WebStack
from tests.web.table2_harness import VIEWPORTS, play_on_the_table
from tests.web.table_moves import morisi_move


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=list(VIEWPORTS))
async def test_morisi_on_the_table(quick_bots_stack: WebStack, browser: Browser, viewport: str) -> None:
    plan: dict[str, int] = {}

    async def move(page: Page, rng: object) -> None:
        await morisi_move(page, rng, plan)  # type: ignore[arg-type]

    kinds = await play_on_the_table(
        quick_bots_stack, browser, "morisi", 2, {"layout": "hexagon"}, VIEWPORTS[viewport], move
    )
    assert {"placePawn", "movePawn", "layStick", "endTurn"} <= kinds, kinds
