"""Every game's table at a phone's size (tests/web/harness.py's PHONE), mid-match: what a
player needs to play is on the screen at once, the page not scrolled. At each of the seat's
turns, before it moves:
- the hand, More's melds of both sides and every piece that makes a move (or starts one) on
  the table are inside the viewport, each on top where a finger lands (nothing drawn over
  it), with the page at its top: the page was not scrolled to reach them either;
- a piece may lie in a region that scrolls on its own, and is then reached by scrolling that
  region: the hand's row (sideways), each side's melds in More and Momiji's list of choices
  (downwards); such a region is itself inside the viewport, and More's two sides both show
  their title.
The seat plays with the strategies of ``make screenshots`` against server bots, which move
at once, and stops after a few turns: seconds a game."""

from __future__ import annotations

import random
from typing import Any

import pytest
from playwright.async_api import Browser

from tests.web.conftest import ARTIFACTS, WebStack
from tests.web.harness import PHONE, Tab, create_in_lobby, open_tab
from tests.web.screenshots import MATCHES

# The seat's turns checked: from the first to the last, then the tab leaves.
TURNS = 12
# Regions that scroll inside the page: the pieces in them are reached by scrolling them.
SCROLLING = "#board .zone.hand > .row, #board .more .side, #board .momiji .choices"

LAYOUT = """([scrolling]) => {
  const vw = innerWidth, vh = innerHeight;
  const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
    + [...e.classList].map((c) => '.' + c).join('') + (e.dataset.move ? ' ' + e.dataset.move : '');
  const inView = (r) => r.width > 0 && r.height > 0 && r.top >= -0.5 && r.left >= -0.5
    && r.bottom <= vh + 0.5 && r.right <= vw + 0.5;
  // On top where a finger lands: the element (or something of its own) answers at its middle.
  const onTop = (e, r) => {
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return Boolean(hit) && (hit === e || e.contains(hit));
  };
  const problems = [];
  const check = (e, what) => {
    const r = e.getBoundingClientRect();
    if (!inView(r)) problems.push(`${what} ${name(e)} at x ${Math.round(r.left)}..${Math.round(r.right)},`
      + ` y ${Math.round(r.top)}..${Math.round(r.bottom)}: not inside ${vw}x${vh}`);
    else if (!onTop(e, r)) {
      const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      problems.push(`${what} ${name(e)} is covered by ${hit ? name(hit) : 'nothing'}`);
    }
  };
  const board = document.querySelector('#board');
  const hand = board.querySelector('.zone.hand');
  if (hand) check(hand, 'the hand');
  const sides = [...board.querySelectorAll('.more .side')];
  for (const side of sides) {
    check(side, 'the melds of a side');
    check(side.querySelector('.label'), "a side's melds title");
  }
  const pieces = [...board.querySelectorAll('[data-testid=move]:not([disabled]), [data-testid=pick]')];
  for (const piece of pieces) {
    const region = piece.closest(scrolling);
    if (region) check(region, 'the scrolling region of a piece,');
    else check(piece, 'a piece that makes a move');
  }
  return {
    problems: [...new Set(problems)],
    pieces: pieces.length,
    melds: board.querySelectorAll('.more .meld').length,
    hand: hand ? hand.querySelectorAll('[data-private=hand]').length : 0,
  };
}"""


async def assert_in_reach(tab: Tab, game: str, turn: int) -> dict[str, Any]:
    page = tab.page
    scrolled = await page.evaluate("[scrollX, scrollY]")
    await page.evaluate("scrollTo(0, 0)")
    found = await page.evaluate(LAYOUT, [SCROLLING])
    if found["problems"] or scrolled != [0, 0]:
        await page.screenshot(path=ARTIFACTS / f"{game}-phone-layout.png")
    assert not found["problems"], f"{game} at the seat's turn {turn} on a phone:\n" + "\n".join(
        found["problems"]
    )
    assert scrolled == [0, 0], f"{game} at the seat's turn {turn}: the page was scrolled to {scrolled}"
    assert found["pieces"] > 0
    return dict(found)


@pytest.mark.parametrize("game", list(MATCHES))
async def test_a_phone_shows_the_whole_table_without_scrolling(
    quick_bots_stack: WebStack, browser: Browser, game: str
) -> None:
    match = MATCHES[game]()
    rng = random.Random(f"{game}-phone-layout")
    tab = await open_tab(browser, quick_bots_stack.url, "Ada", PHONE)
    await create_in_lobby(tab, match)
    await tab.page.wait_for_selector("section.table[data-status=IN_PROGRESS]")
    seen: list[dict[str, Any]] = []
    while len(seen) < TURNS and await tab.status() == "IN_PROGRESS":
        if not await tab.has_move():
            await tab.page.wait_for_timeout(30)
            continue
        seen.append(await assert_in_reach(tab, game, len(seen) + 1))
        before = await tab.version()
        await match.strategy(tab, rng)
        await tab.page.wait_for_function(
            "v => Number(document.querySelector('section.table')?.dataset.version) > v", arg=before
        )
    assert len(seen) == TURNS, f"{game}: the match ended after {len(seen)} of the seat's turns"
    assert all(s["hand"] for s in seen) or game == "morisi", seen
    if game == "more":
        # Mid-match: melds on the table, not only an empty table.
        assert max(s["melds"] for s in seen) >= 3, seen
    print(game, "on a phone:", [(s["pieces"], s["melds"]) for s in seen])
    await tab.page.context.close()
