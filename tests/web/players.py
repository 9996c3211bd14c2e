"""Players that use the page as a person would: a browser tab per seat, clicking moves."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from playwright.async_api import Page

MOVE = "#moves [data-testid=move]:not([disabled])"
TIMEOUT_MS = 15_000

# Chooses which legal move to click (moves as the page's data-move JSON); keeps random
# play short where a game lets a player undo or dither.
Chooser = Callable[[list[dict[str, Any]], random.Random], int]


def any_move(moves: list[dict[str, Any]], rng: random.Random) -> int:
    return rng.randrange(len(moves))


def preferring(*kinds: str, never: tuple[str, ...] = ()) -> Chooser:
    """A random move of the first kind in ``kinds`` (JSON names: ``buildRoute``) on offer
    (else any), never one of ``never`` while something else is: a player in a hurry, so
    that matches stay short."""

    def choose(moves: list[dict[str, Any]], rng: random.Random) -> int:
        allowed = [i for i, m in enumerate(moves) if next(iter(m)) not in never] or list(range(len(moves)))
        for kind in kinds:
            offered = [i for i in allowed if kind in moves[i]]
            if offered:
                return rng.choice(offered)
        return rng.choice(allowed)

    return choose


@dataclass
class Tab:
    page: Page
    name: str

    async def attribute(self, name: str) -> str:
        return await self.page.get_attribute("section.table", name, timeout=TIMEOUT_MS) or ""

    async def status(self) -> str:
        return await self.attribute("data-status")

    async def version(self) -> int:
        return int(await self.attribute("data-version") or 0)

    async def moves(self) -> list[dict[str, Any]]:
        shown = await self.page.locator(MOVE).evaluate_all("b => b.map(e => e.dataset.move)")
        return [json.loads(m) for m in shown]

    async def click_move(self, index: int) -> None:
        before = await self.version()
        await self.page.locator(MOVE).nth(index).click(timeout=TIMEOUT_MS)
        # The page shows the move's outcome: a higher version, or the server's refusal.
        await self.page.wait_for_function(
            "v => Number(document.querySelector('section.table')?.dataset.version) > v"
            " || document.querySelector('#error')",
            arg=before,
            timeout=TIMEOUT_MS,
        )

    async def scores(self) -> list[int]:
        shown = await self.page.locator("#seats li[data-seat]").evaluate_all(
            "items => items.map(e => e.dataset.score)"
        )
        return [int(s) for s in shown]

    async def seat(self) -> int:
        return int(await self.page.get_attribute("#you", "data-seat", timeout=TIMEOUT_MS) or -1)
