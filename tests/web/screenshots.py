"""``make screenshots``: every game played on the web table by tests/web/harness.py, at a
desktop's size and a phone's, with a picture of the first table, one mid-game and the final
summary in docs/screenshots/<game>-<size>-<moment>.png (drawn at reduced scale: small files).
Not part of ``make test`` (its name is no test module's), and without axe-core (the tests run
it); run it after the tables change."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from playwright.async_api import Browser

from tests.web.conftest import ROOT, WebStack
from tests.web.harness import DESKTOP, PHONE, Match, Tab, click_any_move, play_match, size_name
from tests.web.table_moves import more_move, mori_move, morisi_move

SHOTS = ROOT / "docs" / "screenshots"
# Device pixels per CSS pixel of the pictures, per size.
SCALES = {"desktop": 0.5, "phone": 0.6}


async def mori(tab: Tab, rng: random.Random) -> None:
    await mori_move(tab.page, rng)


async def more(tab: Tab, rng: random.Random) -> None:
    await more_move(tab.page, rng)


def morisi() -> object:
    plan: dict[str, int] = {}

    async def move(tab: Tab, rng: random.Random) -> None:
        await morisi_move(tab.page, rng, plan)

    return move


async def happy_mochi(tab: Tab, rng: random.Random) -> None:
    await click_any_move(tab, rng, prefer=("playDuo",))


async def momiji(tab: Tab, rng: random.Random) -> None:
    await click_any_move(tab, rng, prefer=("placeCard", "collect"))


MATCHES = {
    "happy_mochi": lambda: Match("happy_mochi", 2, happy_mochi, bots=1, bot_level="policy", seed=2),
    "momiji": lambda: Match("momiji", 2, momiji, bots=1, bot_level="policy"),
    "mori": lambda: Match("mori", 3, mori, bots=2, bot_level="policy"),
    "more": lambda: Match("more", 3, more, bots=2, bot_level="policy", options={"max_rounds": 1}),
    "morisi": lambda: Match("morisi", 2, morisi(), bots=1, bot_level="policy", options={"layout": "hexagon"}),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("game", list(MATCHES))
async def test_screenshots(
    quick_bots_stack: WebStack, browser: Browser, game: str, viewport: dict[str, int]
) -> None:
    size = size_name(viewport)
    SHOTS.mkdir(parents=True, exist_ok=True)

    async def shoot(moment: str, tab: Tab) -> None:
        path: Path = SHOTS / f"{game}-{size}-{moment}.png"
        await tab.page.screenshot(path=path)

    tabs = await play_match(
        quick_bots_stack, browser, MATCHES[game](), viewport, shots=shoot, scale=SCALES[size], audit=False
    )
    for tab in tabs:
        await tab.page.context.close()
