"""How a person makes one move of Mori, More or Morisi on the table itself (cards, dice,
piles, melds, hexes and the table's own controls), never with the list of legal moves.

Each function makes exactly one move (one request): it may first pick cards or a stick's
first tile, which the page keeps to itself and sends nothing for."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

from playwright.async_api import Locator, Page

from tests.web.conftest import ARTIFACTS
from tests.web.harness import AXE, Tab, size_name

LIVE = ":not([disabled])"
BOARD = "#board"
# Keeps the kind of every move clicked on the page (its data-move), for the tests to check
# that each kind of decision was made on the table.
RECORD_KINDS = """() => {
  if (window.movesClicked) return;
  window.movesClicked = new Set();
  addEventListener("click", (event) => {
    const piece = event.target.closest && event.target.closest("[data-move]");
    if (piece) window.movesClicked.add(Object.keys(JSON.parse(piece.dataset.move))[0]);
  }, true);
}"""


def screenshots(game: str, viewport: dict[str, int]) -> Callable[[str, Tab], Awaitable[None]]:
    """The harness's start, middle and end of a match, to artifacts/web/<game>-<size>-<moment>.png."""

    async def shoot(moment: str, tab: Tab) -> None:
        await tab.page.screenshot(path=ARTIFACTS / f"{game}-{size_name(viewport)}-{moment}.png")

    return shoot


TAP_PX = 44


async def audit_once(page: Page, state: str) -> None:
    """axe-core on a state of the table only a move of several clicks shows (cards picked, a
    stick's first tile chosen, the end-of-turn question), the first time the page is in it:
    no critical or serious violation."""
    if await page.evaluate("s => (window.audited = window.audited || new Set()).has(s)", state):
        return
    await page.evaluate("s => window.audited.add(s)", state)
    if not await page.evaluate("typeof window.axe !== 'undefined'"):
        await page.add_script_tag(path=str(AXE))
    results = await page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    bad = [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:4]}"
        for v in results["violations"]
        if v["impact"] in ("critical", "serious")
    ]
    assert not bad, f"axe-core with {state}:\n" + "\n".join(bad)


async def recording(page: Page) -> None:
    """Starts (once per page) keeping the kinds of moves clicked; on a phone, checks first that
    every piece to tap is at least 44 px each way."""
    await page.evaluate(RECORD_KINDS)
    viewport = page.viewport_size
    if viewport and viewport["width"] < 600:
        sizes = await page.locator(
            f"{BOARD} [data-testid=move]:not([disabled]), {BOARD} [data-testid=pick]"
        ).evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect();"
            " return [Math.round(r.width), Math.round(r.height), e.getAttribute('class')]; })"
        )
        assert sizes, "the strategy was called with nothing to tap"
        small = [size for size in sizes if size[0] < TAP_PX or size[1] < TAP_PX]
        assert not small, f"tap targets under {TAP_PX} px on a phone: {small}"


async def kinds_clicked(page: Page) -> set[str]:
    return set(await page.evaluate("[...(window.movesClicked || [])]"))


async def _press_or_click(piece: Locator, rng: random.Random) -> None:
    """Now and then by keyboard (focus, Enter), as a person without a mouse plays."""
    if rng.random() < 0.25:
        await piece.focus()
        await piece.press("Enter")
    else:
        await piece.click()


async def _click_any(page: Page, selector: str, rng: random.Random) -> bool:
    found = page.locator(selector)
    count = await found.count()
    if not count:
        return False
    await _press_or_click(found.nth(rng.randrange(count)), rng)
    return True


async def mori_move(page: Page, rng: random.Random) -> None:
    """A card from the hand, a die from the aid, or a die claimed from the mat."""
    await recording(page)
    assert await _click_any(page, f"{BOARD} [data-testid=move]{LIVE}", rng), "no Mori move on the table"


async def _pick(page: Page, selector: str, rng: random.Random) -> bool:
    return await _click_any(page, f"{BOARD} .hand button.pick.card{selector}", rng)


async def more_move(page: Page, rng: random.Random) -> None:
    """Draw (or now and then take the discard pile), lay a meld of picked cards, add a picked
    card to a meld's end, take the turn back, or drop a picked card on the discard pile."""
    await recording(page)
    board = page.locator(BOARD)
    take = board.locator(f".piles button.move.card:not(.pile):not(.drop){LIVE}")
    if await take.count() and rng.random() < 0.3:
        await take.click()
        return
    if await _click_any(page, f"{BOARD} .piles button.move.pile{LIVE}", rng):
        return
    if await _click_any(page, f"{BOARD} button.move.bid{LIVE}", rng):
        return
    clear = board.locator("button.pick.quiet")
    if await clear.count():
        await clear.click()
    must_meld_top = await board.locator(".hand button.pick.card.top").count() > 0
    if must_meld_top:
        await board.locator(".hand button.pick.card.top").click()
        if await _meld_picked(page, rng) or await _add_picked(page, rng):
            return
        await board.locator(f"button.move.take-back{LIVE}").click()
        return
    if await board.locator(".hand button.pick.card.meldable").count() and rng.random() < 0.8:
        await _pick(page, ".meldable", rng)
        if await _meld_picked(page, rng):
            return
        await board.locator("button.pick.quiet").click()
    if await board.locator(".hand button.pick.card.addable").count() and rng.random() < 0.8:
        await _pick(page, ".addable", rng)
        if await _add_picked(page, rng):
            return
        await board.locator("button.pick.quiet").click()
    await _pick(page, ":not(.top)", rng)
    drop = board.locator(f".piles button.move.drop{LIVE}")
    if await drop.count():
        await drop.click()
        return
    # The only card that cannot go is a taken pile's top card still to meld: take it all back.
    await board.locator(f"button.move.take-back{LIVE}").click()


async def _meld_picked(page: Page, rng: random.Random) -> bool:
    """Picks partners of the picked cards until they make a meld, then lays it."""
    board = page.locator(BOARD)
    for _ in range(3):
        lay = board.locator(f"button.move.lay{LIVE}")
        if await lay.count():
            await audit_once(page, "cards picked for a meld")
            await lay.click()
            return True
        if not await _pick(page, ".meldable[aria-pressed=false]", rng):
            return False
    return False


async def _add_picked(page: Page, rng: random.Random) -> bool:
    return await _click_any(page, f"{BOARD} .meld button.move.slot{LIVE}", rng)


async def _tiles(page: Page) -> list[dict[str, Any]]:
    return list(
        await page.locator(f"{BOARD} svg.hexmap polygon").evaluate_all(
            "ps => ps.map(p => ({tile: +p.dataset.tile, q: +p.dataset.q, r: +p.dataset.r,"
            " terrain: p.dataset.terrain, blocks: +p.dataset.blocks, kind: p.getAttribute('class')}))"
        )
    )


def _neighbours(a: dict[str, Any], b: dict[str, Any]) -> bool:
    dq, dr = b["q"] - a["q"], b["r"] - a["r"]
    return (dq, dr) in {(1, 0), (1, -1), (0, -1), (-1, 0), (-1, 1), (0, 1)}


def _hex(page: Page, index: int) -> Locator:
    return page.locator(f"{BOARD} svg.hexmap polygon[data-tile='{index}']")


async def morisi_move(page: Page, rng: random.Random, plan: dict[str, int]) -> None:
    """Place or move the pawn on a highlighted tile; in the build phase join two cities
    through one land tile (city, land, city: a route adding houses), building it when the
    table offers to; otherwise undo the stick or end the turn (confirming it)."""
    await recording(page)
    board = page.locator(BOARD)
    tiles = await _tiles(page)
    targets = [t for t in tiles if "move" in (t["kind"] or "").split()]
    if targets:
        # Towards the blocks of the scarcest colour on the map: its last block ends the game.
        left = {t["terrain"]: 0 for t in tiles if t["blocks"]}
        for t in tiles:
            if t["blocks"]:
                left[t["terrain"]] += t["blocks"]
        best = sorted(targets, key=lambda t: (not t["blocks"], left.get(t["terrain"], 99), rng.random()))[0]
        await _press_or_click(_hex(page, best["tile"]), rng)
        return
    build = board.locator(f"button.move.build{LIVE}")
    if await build.count():
        await build.click()
        return
    pending = await page.locator(f"{BOARD} svg.hexmap line[stroke-dasharray]").count()
    if pending == 0:
        plan.clear()
        blocks = dict(
            (colour, int(n))
            for colour, n in (
                shown.split() for shown in await board.locator(".blocks .pill.block").all_inner_texts()
            )
        )
        cities = [t for t in tiles if t["terrain"] == "city"]
        routes = [
            (city, land, other)
            for city in cities
            if "anchor" in (city["kind"] or "")
            for land in tiles
            if land["terrain"] != "city" and blocks.get(land["terrain"], 0) >= 2 and _neighbours(city, land)
            for other in cities
            if other is not city and _neighbours(other, land)
        ]
        rng.shuffle(routes)
        for city, land, other in routes[:3]:
            await _hex(page, city["tile"]).click()
            pay = page.locator(f"{BOARD} svg.hexmap polygon.pay[data-tile='{land['tile']}']")
            if await pay.count():
                await audit_once(page, "a stick's first tile chosen")
                plan.update(second=other["tile"], land=land["tile"])
                if rng.random() < 0.7:
                    await pay.click()
                else:
                    # Let the city go and drag from it to the land paid with instead.
                    await _hex(page, city["tile"]).click()
                    await _hex(page, city["tile"]).drag_to(_hex(page, land["tile"]))
                return
            await _hex(page, city["tile"]).click()
    elif "second" in plan:
        second, paid = plan.pop("second"), plan["land"]
        if "anchor" in (next(t for t in tiles if t["tile"] == second)["kind"] or ""):
            await _hex(page, second).click()
            pay = page.locator(f"{BOARD} svg.hexmap polygon.pay[data-tile='{paid}']")
            if await pay.count():
                await pay.click()
                return
            await _hex(page, second).click()
    undo = board.locator(f"button.move.undo{LIVE}")
    if pending and await undo.count() and rng.random() < 0.5:
        await undo.click()
        return
    ask = board.locator("#morisi-actions button.pick")
    if await ask.count() and rng.random() < 0.5:
        # By keyboard: the question moves the focus to its "yes", which Enter presses.
        await ask.first.press("Enter")
        await audit_once(page, "the end-of-turn question")
        await page.keyboard.press("Enter")
        return
    if await ask.count():
        await ask.first.click()
    await board.locator(f"button.move.end{LIVE}").click()
