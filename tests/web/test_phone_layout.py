"""Every game's table at a phone's size (tests/web/harness.py's PHONE), mid-match: what a
player needs to play is on the screen at once, the page not scrolled. At each of the seat's
turns, before it moves:
- the board, the hand, More's melds of both sides and every piece that makes a move (or
  starts one) on the table are inside the viewport, each on top where a finger lands (nothing drawn over
  it), with the page at its top: the page was not scrolled to reach them either;
- a piece may lie in a region that scrolls on its own, and is then reached by scrolling that
  region: the hand's row (sideways), each side's melds in More and Momiji's list of choices
  (downwards); such a region is itself inside the viewport, and More's two sides both show
  their title.
In More, the same again with a card of the hand picked (the melds' "+" ends shown). The seat
plays with the strategies of ``make screenshots`` against server bots, which move at once,
and stops after a dozen turns (More: until a picked card had a meld's end to go to): seconds
a game."""

from __future__ import annotations

import random
from typing import Any

import pytest
from playwright.async_api import Browser

from tests.web.conftest import ARTIFACTS, WebStack
from tests.web.harness import PHONE, Match, Tab, create_in_lobby, open_tab
from tests.web.screenshots import MATCHES, more

# The seat's turns checked, then the tab leaves; in More more of them, until a picked card
# has had a meld's "+" end to go to (the seat's side has a meld).
TURNS = 12
MORE_TURNS = 40
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
  check(board, 'the board');
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
    slots: board.querySelectorAll('.more .meld button.move.slot').length,
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


async def more_with_a_card_picked(tab: Tab, turn: int) -> int:
    """More's table with one card of the hand picked (one that fits a meld's end if any):
    the melds grow their "+" ends, the discard pile and the actions change; the same checks,
    then the pick is let go. Returns how many "+" ends were shown."""
    hand = tab.page.locator("#board .hand button.pick.card")
    if not await hand.count():
        return 0
    addable = tab.page.locator("#board .hand button.pick.card.addable")
    await (addable.first if await addable.count() else hand.first).click()
    found = await assert_in_reach(tab, "more", turn)
    await tab.page.locator("#board button.pick.quiet").click()
    return int(found["slots"])


async def move(tab: Tab, match: Match, rng: random.Random) -> None:
    """One move of the seat by its strategy, once the page shows what came of it."""
    before = await tab.version()
    await match.strategy(tab, rng)
    await tab.page.wait_for_function(
        "v => Number(document.querySelector('section.table')?.dataset.version) > v", arg=before
    )


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

    def checked_enough() -> bool:
        if game == "more":
            return len(seen) >= MORE_TURNS or (len(seen) >= TURNS and any(s["slots"] for s in seen))
        return len(seen) >= TURNS

    while not checked_enough() and await tab.status() == "IN_PROGRESS":
        if not await tab.has_move():
            await tab.page.wait_for_timeout(30)
            continue
        seen.append(await assert_in_reach(tab, game, len(seen) + 1))
        if game == "more":
            seen[-1]["slots"] = await more_with_a_card_picked(tab, len(seen))
        await move(tab, match, rng)
    assert len(seen) >= TURNS, f"{game}: the match ended after {len(seen)} of the seat's turns"
    assert all(s["hand"] for s in seen) or game == "morisi", seen
    if game == "more":
        # Mid-match: melds on the table, and a picked card's places at their ends.
        assert max(s["melds"] for s in seen) >= 3, seen
        assert max(s["slots"] for s in seen) > 0, seen
    print(game, "on a phone:", [(s["pieces"], s["melds"], s["slots"]) for s in seen])
    await tab.page.context.close()


async def test_more_on_a_phone_in_its_second_round(quick_bots_stack: WebStack, browser: Browser) -> None:
    """From More's second round on, the first round's scores are on the table too: folded on
    a phone (one line that opens them), the melds keep their room."""
    match = Match("more", 3, more, bots=2, bot_level="policy", options={"max_rounds": 2})
    rng = random.Random("more-second-round")
    tab = await open_tab(browser, quick_bots_stack.url, "Ada", PHONE)
    await create_in_lobby(tab, match)
    await tab.page.wait_for_selector("section.table[data-status=IN_PROGRESS]")
    scores = tab.page.locator("#round-summary")
    turns = 0
    while turns < TURNS // 2:
        assert await tab.status() == "IN_PROGRESS", "More's match ended in its first round"
        if not await tab.has_move():
            await tab.page.wait_for_timeout(30)
            continue
        if await scores.count():
            turns += 1
            await assert_in_reach(tab, "more", turns)
            await more_with_a_card_picked(tab, turns)
            assert not await scores.evaluate("e => e.open"), "the last round's scores are open on a phone"
        await move(tab, match, rng)
    # Opened by the player, the scores are there to read, and stay open across the next draw.
    await scores.locator("summary").click()
    await tab.page.locator("#round-summary .scores table").wait_for()
    assert await tab.page.locator("#round-summary[open]").count() == 1
    await tab.page.context.close()
