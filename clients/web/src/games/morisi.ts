// Morisi: a hex map of coloured lands and cities; pawns walk, sticks make routes, houses count.
// Every decision is made on the map and its controls: click a tile to place or move the
// pawn (or predict a city); lay a stick by clicking a city or a tile of your network, then
// the neighbouring land to pay with (or drag from one to the other); build, undo or end the
// turn with the buttons under the map (ending a turn with sticks laid asks first).
import { h } from "../dom.js";
import type { Json } from "../render.js";
import { listWords } from "../words.js";
import { choiceButton, LocalChoice } from "./choice.js";
import { findMove, list, num, obj, pill, seatName, short, zone, type Obj } from "./parts.js";
import { cityLetters, describeMorisiEvent, tileWords } from "./morisi_words.js";
import { hexMap, stickKey, SEAT_COLOURS, SEAT_COLOUR_NAMES, TERRAIN, type TileMark } from "./morisi_map.js";
import type { GameRenderer, LegalMove, TableContext } from "./types.js";
import "./morisi.css";

const COLOURS = ["yellow", "orange", "red", "green", "blue"];
const PHASES: Record<string, string> = {
  predict: "predict the three biggest cities",
  place: "place the pawns",
  move: "move the pawn",
  build: "lay sticks, then build the route or end the turn",
  over: "the game is over",
};

// The stick being laid: its first tile (a city or a tile of the seat's network).
const local: { anchor?: number; confirmEnd: boolean; version: string } = { confirmEnd: false, version: "" };

function play(ctx: TableContext, move: LegalMove): void {
  local.anchor = undefined;
  local.confirmEnd = false;
  ctx.moveButton(move, []).click();
}

function stickCost(ctx: TableContext, a: number, b: number): number {
  const [low, high] = a < b ? [a, b] : [b, a];
  return 1 + list(ctx.view.sticks).map(obj).filter((s) => num(s.a) === low && num(s.b) === high && num(s.seat) !== ctx.seat).length;
}

/** What each tile does when clicked now. */
function tileMarks(ctx: TableContext, letters: Map<number, string>): Map<number, TileMark> {
  const v = ctx.view;
  const marks = new Map<number, TileMark>();
  const say = (index: number) => tileWords(v, letters, index);
  for (const m of ctx.moves) {
    const [kind, body] = Object.entries(m.json)[0] ?? ["", null];
    const fields = obj(body);
    if (kind === "placePawn" || kind === "movePawn") {
      const tile = num(fields.tile);
      marks.set(tile, { kind: "move", label: `${kind === "placePawn" ? "place" : "move"} your pawn on ${say(tile)}`, onPick: () => play(ctx, m), move: JSON.stringify(m.json) });
    } else if (kind === "predict") {
      const city = num(list(fields.cities)[0]);
      const rank = list(list(v.predictions).map(obj).find((p) => num(p.seat) === ctx.seat)?.cities).length + 1;
      marks.set(city, { kind: "move", label: `predict ${say(city)} as number ${rank}`, onPick: () => play(ctx, m), move: JSON.stringify(m.json) });
    }
  }
  const sticks = ctx.moves.filter((m) => "layStick" in m.json).map((m) => ({ move: m, anchor: num(obj(m.json.layStick).anchor), paid: num(obj(m.json.layStick).paid) }));
  if (local.anchor !== undefined && !sticks.some((s) => s.anchor === local.anchor)) local.anchor = undefined;
  for (const s of sticks) {
    if (!marks.has(s.anchor)) {
      marks.set(s.anchor, {
        kind: "anchor",
        label: `start a stick at ${say(s.anchor)}`,
        onPick: () => {
          local.anchor = local.anchor === s.anchor ? undefined : s.anchor;
          table.redraw();
        },
      });
    }
  }
  if (local.anchor !== undefined) {
    const anchor = local.anchor;
    marks.set(anchor, { kind: "chosen", label: `${say(anchor)}: the stick starts here (click again to let go)`, onPick: () => ((local.anchor = undefined), table.redraw()) });
    for (const s of sticks.filter((s) => s.anchor === anchor)) {
      const cost = stickCost(ctx, s.anchor, s.paid);
      const colour = short(obj(list(v.tiles)[s.paid]).terrain, "TERRAIN_");
      marks.set(s.paid, { kind: "pay", note: `${cost}`, label: `lay a stick from ${say(anchor)} to ${say(s.paid)}, paying ${cost} ${colour} block${cost > 1 ? "s" : ""}`, onPick: () => play(ctx, s.move), move: JSON.stringify(s.move.json) });
    }
  }
  return marks;
}

// The sticks and pawns at the last version drawn, and what the last move changed: lit on
// the map, so that a player sees what just happened.
const lastMove = { version: "", sticks: new Set<string>(), pawns: new Map<number, number>(), fresh: { tiles: new Set<number>(), sticks: new Set<string>() } };

function noteLastMove(v: Obj): void {
  const version = String(v.version ?? "");
  if (version === lastMove.version) return;
  const turnSeat = num(v.turnSeat);
  const sticks = new Set([
    ...list(v.sticks).map(obj).map((s) => stickKey(num(s.seat), num(s.a), num(s.b))),
    ...list(v.pending).map(obj).map((p) => stickKey(turnSeat, num(p.anchor), num(p.paid))),
  ]);
  const pawns = new Map(list(v.players).map(obj).filter((p) => p.pawnPlaced).map((p) => [num(p.seat), num(p.pawnTile)]));
  const known = lastMove.version !== "";
  lastMove.fresh = {
    tiles: new Set(known ? [...pawns].filter(([seat, tile]) => lastMove.pawns.get(seat) !== tile).map(([, tile]) => tile) : []),
    sticks: new Set(known ? [...sticks].filter((key) => !lastMove.sticks.has(key)) : []),
  };
  lastMove.sticks = sticks;
  lastMove.pawns = pawns;
  lastMove.version = version;
}

/** Lays the stick dragged from one tile to a neighbour, when the rules allow it. */
function dragStick(ctx: TableContext, from: number, to: number): boolean {
  const move = findMove(ctx, "layStick", (f) => num(f.anchor) === from && num(f.paid) === to);
  if (move) play(ctx, move);
  return Boolean(move);
}

function controls(ctx: TableContext): HTMLElement | null {
  const v = ctx.view;
  if (!ctx.moves.some((m) => "endTurn" in m.json)) return null;
  const pending = list(v.pending).map(obj);
  const build = findMove(ctx, "buildRoute");
  const undo = findMove(ctx, "undoStick");
  const end = findMove(ctx, "endTurn")!;
  const items: (HTMLElement | string | null)[] = [];
  const paid = COLOURS.map((colour) => [colour, pending.filter((p) => short(obj(list(v.tiles)[num(p.paid)]).terrain, "TERRAIN_") === colour).reduce((sum, p) => sum + num(p.cost), 0)] as const).filter(([, n]) => n);
  items.push(
    h("span", { class: "hint" }, pending.length ? `Laid this turn: ${pending.length} stick${pending.length > 1 ? "s" : ""}, paid ${listWords(paid.map(([c, n]) => `${n} ${c}`))}.` : "Click a dashed tile (a city or your network) to start a stick, then the land to pay with; or drag between them."),
  );
  const named = (button: HTMLElement, focus: string) => ((button.dataset.focus = focus), button);
  if (build) items.push(named(ctx.moveButton(build, ["Build the route (ends the turn)"], "build"), "build"));
  else if (pending.length) items.push(h("span", { class: "hint" }, "Not a route yet: the sticks must join into one route whose ends are cities or your network, adding houses."));
  if (undo) items.push(named(ctx.moveButton(undo, ["Undo the last stick"], "undo"), "undo"));
  if (!pending.length) items.push(named(ctx.moveButton(end, ["End the turn without building"], "end"), "end"));
  else if (!local.confirmEnd) items.push(choiceButton([`End the turn…`], { focus: "end-ask", onPick: () => ((local.confirmEnd = true), table.redraw("end")) }));
  else {
    items.push(
      h(
        "span",
        { class: "confirm", role: "alert" },
        `End the turn without building? The ${pending.length} stick${pending.length > 1 ? "s" : ""} laid go back and their blocks return. `,
        named(ctx.moveButton(end, ["Yes, end the turn"], "end"), "end"),
        choiceButton(["No, keep building"], { focus: "end-keep", onPick: () => ((local.confirmEnd = false), table.redraw("end-ask")) }),
      ),
    );
  }
  return h("div", { class: "row actions", id: "morisi-actions" }, ...items);
}

function players(ctx: TableContext): HTMLElement {
  const v = ctx.view;
  return h(
    "div",
    { class: "zone" },
    h("div", { class: "label" }, "players"),
    list(v.players).map((p) => {
      const info = obj(p);
      const seat = num(info.seat);
      const swatch = h("span", { class: "swatch", title: `${SEAT_COLOUR_NAMES[seat]} houses and sticks` });
      swatch.style.background = SEAT_COLOURS[seat] ?? "#000";
      return h(
        "div",
        { class: `player${num(v.turnSeat) === seat && short(v.phase, "PHASE_") !== "over" ? " turn" : ""}`, "data-seat": seat },
        swatch,
        h("strong", {}, seatName(ctx, seat)),
        pill(`${SEAT_COLOUR_NAMES[seat]}`),
        pill(`score ${num(info.score)}`),
        pill(`${num(info.blockCount)} blocks`),
        pill(`houses: ${num(info.housePoints)} placed, ${num(info.housesLeft)} left`),
        pill(`${num(info.sticks)} sticks`),
        pill(`${num(info.cities)} cities`),
        v.predictionVariant ? pill(`${num(info.predicted)} of 3 predicted`) : null,
      );
    }),
  );
}

function predictions(ctx: TableContext, letters: Map<number, string>): HTMLElement | null {
  const shown = list(ctx.view.predictions).map(obj).filter((p) => list(p.cities).length);
  if (!shown.length) return null;
  return zone("predictions", ...shown.map((p) => pill(`${seatName(ctx, num(p.seat))}: ${list(p.cities).map((c, i) => `${i + 1}. ${letters.get(num(c)) ?? "?"}`).join(" ")}`)));
}

function gameOver(ctx: TableContext, letters: Map<number, string>): HTMLElement | null {
  const v = ctx.view;
  if (short(v.phase, "PHASE_") !== "over") return null;
  const reason = short(v.endReason, "END_REASON_") === "houses_exhausted" ? "a player placed their last house" : "a colour's last block left the map";
  const scoring = list(v.scoringCities).map((c) => letters.get(num(c)) ?? "?");
  return h(
    "div",
    { class: "zone summary", id: "morisi-summary" },
    h("div", { class: "label" }, `The game ended: ${reason}.`),
    h("p", {}, `Scoring cities: ${scoring.length ? listWords(scoring) : "none"}. Each city with a house of yours is worth 4, plus your houses in the scoring cities.`),
    h("p", {}, list(v.players).map((p) => `${seatName(ctx, num(obj(p).seat))}: ${num(obj(p).score)} (${num(obj(p).cities)} cities, ${num(obj(p).housePoints)} house points)`).join(" · ")),
  );
}

function drawTable(ctx: TableContext): HTMLElement {
  const v = ctx.view;
  shown = v;
  const version = `${ctx.view.version}:${list(v.pending).length}`;
  if (version !== local.version) {
    local.version = version;
    local.confirmEnd = false;
  }
  noteLastMove(v);
  const letters = cityLetters(v);
  const phase = short(v.phase, "PHASE_");
  const mine = list(v.myBlocks);
  const map = h("div", { class: "board-map", "data-scroll": "map", tabindex: 0, role: "group", "aria-label": "the map" }, hexMap({ view: v, letters, marks: tileMarks(ctx, letters), onDrag: (from, to) => dragStick(ctx, from, to), fresh: lastMove.fresh }));
  return h(
    "div",
    { class: "morisi" },
    h(
      "div",
      { class: "row" },
      pill(PHASES[phase] ?? phase),
      phase !== "over" ? pill(`turn: ${seatName(ctx, num(v.turnSeat))}`) : null,
      pill(`turns played: ${num(v.turn)}`),
      pill(`house supply ${num(v.houseSupply)} each`),
    ),
    map,
    controls(ctx),
    ctx.seat !== null && mine.length
      ? h(
          "div",
          { class: "zone blocks" },
          h("div", { class: "label" }, "your blocks"),
          h("div", { class: "row" }, ...mine.map((n, i) => h("span", { class: "pill block", "data-private": "blocks" }, h("span", { class: "swatch", style: `background:${TERRAIN[COLOURS[i]]}` }), ` ${COLOURS[i]} ${num(n)}`))),
        )
      : null,
    players(ctx),
    predictions(ctx, letters),
    gameOver(ctx, letters),
  );
}

const table = new LocalChoice(drawTable);

// The view last drawn: the fallback list of moves names tiles as the map shows them.
let shown: Obj = {};

function describeMove(move: Obj): string | undefined {
  const [kind, body] = Object.entries(move)[0] ?? ["", null];
  const fields = obj(body);
  const letters = cityLetters(shown);
  const tile = (index: Json | undefined) => tileWords(shown, letters, num(index));
  switch (kind) {
    case "predict":
      return `predict ${listWords(list(fields.cities).map(tile))}`;
    case "placePawn":
      return `place your pawn on ${tile(fields.tile)}`;
    case "movePawn":
      return `move your pawn to ${tile(fields.tile)}`;
    case "layStick":
      return `lay a stick from ${tile(fields.anchor)} to ${tile(fields.paid)}, paying ${short(obj(list(shown.tiles)[num(fields.paid)]).terrain, "TERRAIN_")}`;
    case "undoStick":
      return "undo the last stick";
    case "buildRoute":
      return "build the route (ends the turn)";
    case "endTurn":
      return "end the turn";
  }
  return undefined;
}

export const morisi: GameRenderer = {
  describeMove,
  draw: (ctx) => table.draw(ctx),
  describeEvent: (kind, body, names, view) => describeMorisiEvent(kind, body, names, view),
};
