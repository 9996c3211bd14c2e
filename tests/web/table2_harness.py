"""A match played by one browser seat on the table alone, the other seats server bots: the
move list hidden, one request per own move, words only on the page."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from playwright.async_api import Browser, Page, Request

from tests.web.conftest import ARTIFACTS, WebStack

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
WIRE_TEXT = re.compile(r"\b[A-Z]{2,}_[A-Z_]+\b|seat \d|\[object")
HIDE_MOVES = (
    "addEventListener('DOMContentLoaded', () => { const s = document.createElement('style');"
    " s.textContent = '#moves { display: none !important; }'; document.head.append(s); });"
    "addEventListener('click', e => { const m = e.target.closest && e.target.closest('[data-move]');"
    " if (m) window.lastMove = m.dataset.move; }, true);"
)
MAX_MOVES = 600
TIMEOUT_MS = 15_000

Mover = Callable[[Page, random.Random], Awaitable[None]]


async def play_on_the_table(
    stack: WebStack,
    browser: Browser,
    game: str,
    players: int,
    options: dict[str, Any],
    viewport: dict[str, int],
    move: Mover,
) -> set[str]:
    """Creates the match in the lobby with bots in every other seat, plays the browser seat's
    moves with ``move`` to the end, and returns the kinds of move it made."""
    context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    await context.add_init_script(HIDE_MOVES)
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(stack.url)
    await page.evaluate("localStorage.setItem('mogames.name', 'Ada')")
    await page.reload()
    form = page.locator(f"form.game[data-game={game}]")
    await form.locator("[name=players]").fill(str(players))
    await form.locator("[name=bots]").fill(str(players - 1))
    # Bots that answer at once: the test is about the browser seat.
    await form.locator("[name=bot_level]").select_option("policy")
    for name, value in options.items():
        await form.locator(f"[data-option={name}]").fill(str(value))
    await form.locator("button.create").click()
    await page.wait_for_selector("section.table[data-status=IN_PROGRESS]")
    assert not await page.locator("#moves").is_visible()

    submitted: list[str] = []

    def sent(request: Request) -> None:
        if request.url.endswith("/SubmitMove"):
            submitted.append(request.post_data or "")

    page.on("request", sent)
    rng = random.Random(f"{game}-{viewport['width']}")
    kinds: set[str] = set()
    made = 0
    started = time.monotonic()
    acting = 0.0
    while await page.get_attribute("section.table", "data-status") == "IN_PROGRESS":
        mine = page.locator("#seats li.mine.active")
        live = page.locator("#board [data-testid=move]:not([disabled]), #board [data-testid=pick]")
        if not await mine.count() or not await live.count():
            await page.wait_for_timeout(30)
            continue
        assert made < MAX_MOVES, f"{game}: not over after {made} moves"
        before = int(await page.get_attribute("section.table", "data-version") or 0)
        count = len(submitted)
        t0 = time.monotonic()
        await move(page, random.Random(rng.random()))
        await page.wait_for_function(
            "v => Number(document.querySelector('section.table')?.dataset.version) > v"
            " || document.querySelector('#error')",
            arg=before,
        )
        assert not await page.locator("#error").count(), await page.locator("#error").inner_text()
        assert len(submitted) == count + 1, f"{len(submitted) - count} requests for one move"
        kinds.add(next(iter(json.loads(await page.evaluate("window.lastMove")))))
        made += 1
        acting += time.monotonic() - t0
        shown = await page.locator("body").inner_text()
        assert not WIRE_TEXT.findall(shown), WIRE_TEXT.findall(shown)
    await page.wait_for_selector("#final")
    await page.screenshot(path=ARTIFACTS / f"table2-{game}-{viewport['width']}.png", full_page=True)
    took = time.monotonic() - started
    print(
        f"{game} at {viewport['width']} px: {made} moves in {took:.1f} s ({acting:.1f} s acting)",
        sorted(kinds),
    )
    assert not errors, errors
    await context.close()
    return kinds
