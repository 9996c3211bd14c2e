"""A whole match of one game played by hand on the web table, every human seat in its own tab.

What a match played through ``play_match`` checks, at the viewport it is given:
- every move is made by clicking the table (``#board``): the list of moves is hidden;
- each move costs its page exactly one request: one message on its WebSocket PlayMatch
  (test_web_fallback.py plays over Connect where WebSockets are refused); sent again only after the server
  answered it with an error, or its stream was cut before the answer, as the page does
  when its store is away); and a page that waits sends none: every request and every
  WebSocket message of every tab from the first table to the final summary is counted from
  Chromium's network log (a stream's opening, its headers and its watch, is not a request:
  see ``Tab``);
- the page never shows a wire name (``WIRE_TEXT``: an enum value, "seat N", "[object");
- axe-core finds no critical or serious violation on the first table, one mid-match and on
  the final summary;
- the match reaches the final summary (``#final``) in every tab, with the server's scores.

Using it for another game (Mori, More, Morisi): write the game's ``Strategy``, an async
function that makes ONE move of the tab's seat by clicking on the table, and call
``play_match`` from a test::

    from tests.web.harness import DESKTOP, PHONE, Match, click_any_move, play_match

    async def my_strategy(tab: Tab, rng: random.Random) -> None:
        # Select pieces, then the target: any number of clicks, one move in the end.
        await click_any_move(tab, rng, prefer=("buildRoute", "endTurn"), never=("undoStick",))

    @pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
    async def test_mygame(quick_bots_stack, browser, viewport):
        match = Match("mygame", players=2, strategy=my_strategy)
        await play_match(quick_bots_stack, browser, match, viewport)

The strategy is called only when the tab's seat has a move (``await tab.has_move()``); the
harness then waits for the move's outcome (a higher version, or a refusal) and checks the
requests. ``click_any_move`` clicks a random clickable piece of the table (the page marks
every piece that makes a legal move with ``data-testid=move`` and its move as JSON in
``data-move``); a game whose moves need several clicks (select cards, then where they go)
writes its own with ``tab.page`` and Playwright's locators, scoped to ``BOARD``; pieces
selected before a move carry ``data-testid=pick`` (the seat has something to do while
either is on the table).
``Match.options`` fills the lobby's game options (``{"max_rounds": 1}``); ``Match.bots``
seats server bots in the last seats (they move at once on ``quick_bots_stack``).
Screenshots of the start, the middle and the end go to ``artifacts/web/<game>-<size>-*.png``.
"""

from __future__ import annotations

import importlib
import json
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Browser, Page, Request, Response, WebSocket

from tests.web.conftest import ARTIFACTS, ROOT, WebStack
from tests.web.players import TIMEOUT_MS

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
# Pieces on the table that make a legal move of the tab's seat.
BOARD = "#board"
MOVE_ON_TABLE = f"{BOARD} [data-testid=move]:not([disabled])"
# Pieces that start a move of several clicks (a card picked for a meld, a stick's first
# tile): the page keeps them to itself until they make a move.
PICK_ON_TABLE = f"{BOARD} [data-testid=pick]"
# What the page must never show a person: an enum's wire name, a seat number, an object
# printed as text.
WIRE_TEXT = re.compile(r"\b[A-Z]{2,}_[A-Z_]+\b|seat \d|\[object")
AXE = ROOT / "clients" / "web" / "node_modules" / "axe-core" / "axe.min.js"
# The list of moves stays in the page as a fallback; the harness plays without it.
HIDE_MOVE_LIST = "#moves { display: none !important; }"
MAX_MOVES = 2000
STALL_S = 60


class Tab:
    """One seat's page, with every request it sends. A watch (a WatchMatch, or a WebSocket
    PlayMatch with its headers and watch messages) opened again once the previous one has
    ended (the server cut the stream: a replica's hand-over, a store timeout on a loaded
    machine) is a resume, counted apart in ``resumes``: it is not a read, and the page must
    make it. A second watch while one is open is a request like any other; so is every
    message a WebSocket sends after its watch ("WS move" for a move)."""

    def __init__(self, page: Page, name: str) -> None:
        self.page = page
        self.name = name
        self.requests: list[str] = []
        self.resumes = 0
        # SubmitMoves the server could not take (an error status, or no answer): the page
        # sends the same move again, and that try is part of the move.
        self.failed_moves = 0
        self.watches: set[Request] = set()
        self.sockets: set[WebSocket] = set()
        page.on("websocket", self._socket)
        page.on("request", self._sent)
        page.on("response", self._answered)
        page.on("requestfailed", lambda request: self._answered_with(request, 0))
        page.on("requestfinished", lambda request: self.watches.discard(request))
        page.on("requestfailed", lambda request: self.watches.discard(request))

    def _answered(self, response: Response) -> None:
        self._answered_with(response.request, response.status)

    def _answered_with(self, request: Request, status: int) -> None:
        if request.url.endswith("/SubmitMove") and not 200 <= status < 300:
            self.failed_moves += 1

    def _socket(self, socket: WebSocket) -> None:
        if not self.watches and not self.sockets:
            self.resumes += 1
        else:
            self.requests.append("WS " + socket.url.split("/", 3)[-1])
        self.sockets.add(socket)
        response_type = play_response_type(socket.url)
        opening = ["headers", "watch"]
        unanswered = [0]  # moves sent on this socket and not answered

        def sent(payload: str | bytes) -> None:
            kind = sent_kind(payload)
            if opening and kind == opening[0]:
                opening.pop(0)
                return
            if kind == "move":
                unanswered[0] += 1
            self.requests.append(f"WS {kind}")

        def received(payload: str | bytes) -> None:
            frame = payload.encode() if isinstance(payload, str) else payload
            if frame[:1] != b"\x00":  # the header or trailer frame
                return
            answer = response_type.FromString(frame[5:]).WhichOneof("answer")
            if answer:
                unanswered[0] -= 1
            if answer == "refused":  # the page sends it again if the server could not take it
                self.failed_moves += 1

        def closed(_: object = None) -> None:
            if socket in self.sockets:
                self.sockets.discard(socket)
                # A move cut off before its answer is sent again on the next stream.
                self.failed_moves += max(unanswered[0], 0)
                unanswered[0] = 0

        socket.on("framesent", sent)
        socket.on("framereceived", received)
        socket.on("close", closed)
        socket.on("socketerror", closed)

    def _sent(self, request: Request) -> None:
        if not request.url.startswith("http"):
            return
        if request.url.endswith("/WatchMatch"):
            resume = not self.watches and not self.sockets
            self.watches.add(request)
            if resume:
                self.resumes += 1
                return
        self.requests.append(request.method + " " + request.url.split("/", 3)[-1])

    async def attribute(self, name: str) -> str:
        return await self.page.get_attribute("section.table", name, timeout=TIMEOUT_MS) or ""

    async def status(self) -> str:
        return await self.attribute("data-status")

    async def version(self) -> int:
        return int(await self.attribute("data-version") or 0)

    async def seat(self) -> int:
        return int(await self.page.get_attribute("#you", "data-seat", timeout=TIMEOUT_MS) or -1)

    async def has_move(self) -> bool:
        return await self.page.locator(f"{MOVE_ON_TABLE}, {PICK_ON_TABLE}").count() > 0

    async def moves(self) -> list[dict[str, Any]]:
        """The moves the table offers, as the page's data-move JSON."""
        shown = await self.page.locator(MOVE_ON_TABLE).evaluate_all("b => b.map(e => e.dataset.move)")
        return [json.loads(m) for m in shown]


def play_types(url: str) -> Any:
    """The generated module of the service a WebSocket's URL names (.../<package>.<Service>/PlayMatch)."""
    package = url.split("/")[-2].rsplit(".", 1)[0]
    return importlib.import_module(f"{package}.{package.split('.')[1]}_pb2")


def play_response_type(url: str) -> Any:
    return play_types(url).PlayMatchResponse


def sent_kind(payload: str | bytes) -> str:
    """What a page's WebSocket message is: its "headers" (text lines), a PlayMatchRequest's
    "watch" or "move" (a byte 0, the 5-byte gRPC-Web prefix, then field 1 or 2), or "other"."""
    data = payload.encode() if isinstance(payload, str) else payload
    if data[:1] not in (b"\x00", b"\x01"):
        return "headers"
    return {0x0A: "watch", 0x12: "move"}.get(data[6] if len(data) > 6 else -1, "other")


# Makes one move of the tab's seat by clicking on the table.
Strategy = Callable[[Tab, random.Random], Awaitable[None]]


async def click_any_move(
    tab: Tab, rng: random.Random, prefer: tuple[str, ...] = (), never: tuple[str, ...] = ()
) -> None:
    """Clicks a random piece of the table that makes a move: of the first kind in ``prefer``
    on offer (JSON names, ``playDuo``), never one of ``never`` while another is on offer."""
    moves = await tab.moves()
    allowed = [i for i, m in enumerate(moves) if next(iter(m)) not in never] or list(range(len(moves)))
    chosen = next(
        (
            [i for i in allowed if kind in moves[i]]
            for kind in prefer
            if any(kind in moves[i] for i in allowed)
        ),
        allowed,
    )
    await tab.page.locator(MOVE_ON_TABLE).nth(rng.choice(chosen)).click()


@dataclass
class Match:
    game: str
    players: int
    strategy: Strategy = click_any_move
    # Seats played by the server's bots (the last ones); the others by tabs.
    bots: int = 0
    # Lobby form inputs: option name -> value (checkbox: bool).
    options: dict[str, Any] = field(default_factory=dict)
    seed: int = 1
    # The bots' level ("policy" answers at once); the lobby's default when empty.
    bot_level: str = ""


def size_name(viewport: dict[str, int]) -> str:
    return "phone" if viewport["width"] < 600 else "desktop"


async def open_tab(browser: Browser, url: str, name: str, viewport: dict[str, int], scale: float = 1) -> Tab:
    context = await browser.new_context(viewport=viewport, device_scale_factor=scale)  # type: ignore[arg-type]
    await context.add_init_script(
        "document.addEventListener('DOMContentLoaded', () => {"
        f" const s = document.createElement('style'); s.textContent = {json.dumps(HIDE_MOVE_LIST)};"
        " document.head.append(s); });"
        f"localStorage.setItem('mogames.name', {json.dumps(name)});"
    )
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    await page.goto(url)
    return Tab(page, name)


async def create_in_lobby(tab: Tab, match: Match) -> None:
    form = tab.page.locator(f"form.game[data-game={match.game}]")
    await form.locator("[name=players]").fill(str(match.players))
    await form.locator("[name=bots]").fill(str(match.bots))
    # The same deal every run: a match's length does not depend on luck.
    await form.locator("[name=seed]").fill(str(match.seed))
    if match.bot_level:
        await form.locator("[name=bot_level]").select_option(match.bot_level)
    for name, value in match.options.items():
        box = form.locator(f"[data-option={name}]")
        if isinstance(value, bool):
            await box.set_checked(value)
        else:
            await box.fill(str(value))
    await form.locator("button.create").click()
    await tab.page.wait_for_selector("section.table")


async def assert_words_only(tab: Tab) -> None:
    shown = await tab.page.locator("body").inner_text()
    found = WIRE_TEXT.findall(shown)
    assert not found, f"{tab.name}'s page shows wire names {sorted(set(found))}"


async def assert_accessible(tab: Tab, when: str) -> None:
    """axe-core's rules on the page as it is: no critical or serious violation."""
    if not await tab.page.evaluate("typeof window.axe !== 'undefined'"):
        await tab.page.add_script_tag(path=str(AXE))
    results = await tab.page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    bad = [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:4]}"
        for v in results["violations"]
        if v["impact"] in ("critical", "serious")
    ]
    assert not bad, f"axe-core on {tab.name}'s page ({when}):\n" + "\n".join(bad)


def is_move(request: str) -> bool:
    """A move: one message on the seat's WebSocket PlayMatch (where WebSockets pass, as here)."""
    return request == "WS move"


async def play_match(
    stack: WebStack,
    browser: Browser,
    match: Match,
    viewport: dict[str, int],
    shots: Callable[[str, Tab], Awaitable[None]] | None = None,
    scale: float = 1,
    audit: bool = True,
) -> list[Tab]:
    """Plays ``match`` to its final summary (see the module's docstring); returns the tabs,
    still open (closed by the caller or with the browser). ``shots(moment, tab)`` is called
    with "start", "middle" and "end" and the first seat's tab, for screenshots (pages drawn at
    ``scale`` device pixels per CSS pixel: below 1, smaller pictures). ``audit=False`` skips
    axe-core (for pictures only: every test keeps it)."""
    rng = random.Random(f"{match.game}-{match.seed}")
    size = size_name(viewport)
    creator = await open_tab(browser, stack.url, "Ada", viewport, scale)
    if audit:
        await assert_accessible(creator, "the lobby")
    await create_in_lobby(creator, match)
    link = await creator.page.locator("#join-link").input_value()
    match_id = link.split("match=")[1]
    tabs = [creator]
    for n in range(1, match.players - match.bots):
        tab = await open_tab(browser, link, ["Bea", "Cyd", "Dan", "Eve"][n - 1], viewport, scale)
        await tab.page.locator("#join").click()
        await tab.page.wait_for_selector(f"#you[data-seat='{n}']")
        tabs.append(tab)
    for tab in tabs:
        await tab.page.wait_for_selector("section.table[data-status=IN_PROGRESS]")
        await tab.page.wait_for_selector(f"{BOARD} > *")
    if audit:
        await assert_accessible(creator, "the first table")
    await assert_words_only(creator)
    if shots:
        await shots("start", creator)
    # From here on, every request of every tab is a move of its own.
    sent_before = [len(tab.requests) for tab in tabs]
    failed_before = [tab.failed_moves for tab in tabs]
    made = [0] * len(tabs)
    moves = 0
    last_progress, last_version = time.monotonic(), -1
    while await creator.status() == "IN_PROGRESS":
        assert moves < MAX_MOVES, f"{match.game}: not over after {moves} moves"
        version = await creator.version()
        if version != last_version:
            last_progress, last_version = time.monotonic(), version
        if time.monotonic() - last_progress > STALL_S:
            await creator.page.screenshot(path=ARTIFACTS / f"{match.game}-{size}-stalled.png", full_page=True)
            served = await stack.cluster.client(match.game).match(match_id)
            raise AssertionError(
                f"{match.game}: no move for {STALL_S} s at version {version} on the page; the server "
                f"has version {served.version}, active seats {list(served.active_seats)}"
            )
        for i, tab in enumerate(tabs):
            if not await tab.has_move():
                continue
            before = await tab.version()
            sent, failed = len(tab.requests), tab.failed_moves
            await match.strategy(tab, rng)
            # The page shows the move's outcome: a higher version, or the server's refusal.
            await tab.page.wait_for_function(
                "v => Number(document.querySelector('section.table')?.dataset.version) > v"
                " || document.querySelector('#error')",
                arg=before,
            )
            assert await tab.page.locator("#error").count() == 0, await tab.page.locator(
                "#error"
            ).inner_text()
            tries = tab.requests[sent:]
            assert all(is_move(r) for r in tries) and len(tries) == 1 + tab.failed_moves - failed, (
                f"{tab.name}'s move sent {tries}, {tab.failed_moves - failed} answered with an error"
            )
            made[i] += 1
            moves += 1
            await assert_words_only(tab)
            if moves == 6:
                if audit:
                    await assert_accessible(tab, "mid-match")
                if shots:
                    await shots("middle", creator)
            break
        else:
            await creator.page.wait_for_timeout(30)
    for tab in tabs:
        await tab.page.wait_for_selector("#final")
        await assert_words_only(tab)
    if audit:
        await assert_accessible(creator, "the final summary")
    if shots:
        await shots("end", creator)
    for tab, before, own, failed in zip(tabs, sent_before, made, failed_before, strict=True):
        sent = tab.requests[before:]
        assert len(sent) == own + tab.failed_moves - failed and all(is_move(r) for r in sent), (
            f"{tab.name} made {own} moves and sent {len(sent)} requests: "
            f"{sorted({r for r in sent if not is_move(r)})} besides its moves"
        )
        if tab.resumes > 1:
            print(f"{match.game}: {tab.name}'s watch was cut and resumed {tab.resumes - 1} time(s)")
    print(f"{match.game} at {size}: {moves} moves on the table to the final summary")
    final = await stack.cluster.client(match.game).match(match_id)
    assert final.status == 3  # FINISHED
    shown = await creator.page.locator("#seats li[data-seat]").evaluate_all(
        "items => items.map(e => e.dataset.score)"
    )
    assert [int(s) for s in shown] == list(final.scores)
    assert moves > 0
    return tabs
