// Morisi: a hex map of coloured lands and cities; pawns walk, sticks make routes, houses count.
import { h, svg } from "../dom.js";
import { findMove, list, num, obj, pill, seatName, short, zone, type Obj } from "./parts.js";
import type { GameRenderer, TableContext } from "./types.js";

const TERRAIN: Record<string, string> = {
  city: "#e9e2cf",
  yellow: "#e8c547",
  orange: "#e8892e",
  red: "#c9413a",
  green: "#4f9a4c",
  blue: "#3f78c0",
};
const SEATS = ["#ffffff", "#1d2330", "#b23aa8", "#12a5a5"];
const SIZE = 26;

function centre(tile: Obj): [number, number] {
  const q = num(tile.q);
  const r = num(tile.r);
  return [SIZE * Math.sqrt(3) * (q + r / 2), SIZE * 1.5 * r];
}

function hexPoints(x: number, y: number): string {
  return Array.from({ length: 6 }, (_, i) => {
    const angle = (Math.PI / 3) * i + Math.PI / 6;
    return `${(x + SIZE * Math.cos(angle)).toFixed(1)},${(y + SIZE * Math.sin(angle)).toFixed(1)}`;
  }).join(" ");
}

function board(ctx: TableContext): SVGElement {
  const v = ctx.view;
  const tiles = list(v.tiles).map(obj);
  const at = new Map(tiles.map((t) => [num(t.index), centre(t)]));
  const xs = [...at.values()].map(([x]) => x);
  const ys = [...at.values()].map(([, y]) => y);
  const pad = SIZE * 1.2;
  const [minX, maxX, minY, maxY] = [Math.min(...xs) - pad, Math.max(...xs) + pad, Math.min(...ys) - pad, Math.max(...ys) + pad];
  const houses = new Map(list(v.cities).map((c) => [num(obj(c).city), list(obj(c).points).map(num)]));
  const layer: SVGElement[] = [];
  for (const tile of tiles) {
    const [x, y] = at.get(num(tile.index))!;
    const terrain = short(tile.terrain, "TERRAIN_");
    const move = findMove(ctx, "placePawn", (f) => num(f.tile) === num(tile.index)) ?? findMove(ctx, "movePawn", (f) => num(f.tile) === num(tile.index));
    const hex = svg("polygon", { points: hexPoints(x, y), fill: TERRAIN[terrain] ?? "#999", stroke: move ? "#ffd34d" : "#2b3a2f", "stroke-width": move ? 4 : 1.5, class: move ? "hex clickable" : "hex" });
    if (move) {
      hex.addEventListener("click", () => ctx.moveButton(move, []).click());
      hex.append(svg("title", {}, document.createTextNode(`move here (tile ${num(tile.index)})`)));
    }
    layer.push(hex);
    if (tile.circled || terrain === "city") layer.push(svg("circle", { cx: x, cy: y, r: SIZE * 0.55, fill: "none", stroke: "#6b4a2b", "stroke-width": 2, "pointer-events": "none" }));
    const label = terrain === "city" ? `⌂${(houses.get(num(tile.index)) ?? []).reduce((a, b) => a + b, 0)}` : num(tile.blocks) ? `▪${num(tile.blocks)}` : "";
    if (label) layer.push(svg("text", { x, y: y + 4, "text-anchor": "middle", "font-size": 11, fill: "#1d2330", "pointer-events": "none" }, document.createTextNode(label)));
  }
  for (const s of list(v.sticks).map(obj)) {
    const a = at.get(num(s.a));
    const b = at.get(num(s.b));
    if (a && b) layer.push(svg("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], stroke: SEATS[num(s.seat)] ?? "#000", "stroke-width": 5, "stroke-linecap": "round", opacity: 0.85, "pointer-events": "none" }));
  }
  for (const p of list(v.players).map(obj)) {
    const spot = p.pawnPlaced ? at.get(num(p.pawnTile)) : undefined;
    if (spot) layer.push(svg("circle", { cx: spot[0] + 8, cy: spot[1] - 8, r: 8, fill: SEATS[num(p.seat)] ?? "#000", stroke: "#000", "stroke-width": 1.5, "pointer-events": "none" }));
  }
  return svg("svg", { viewBox: `${minX} ${minY} ${maxX - minX} ${maxY - minY}`, width: Math.min(760, maxX - minX), class: "hexmap" }, ...layer);
}

export const morisi: GameRenderer = {
  draw(ctx) {
    const v = ctx.view;
    const colours = ["yellow", "orange", "red", "green", "blue"];
    const players = list(v.players).map((p) => {
      const info = obj(p);
      const swatch = h("span", { class: "swatch" });
      swatch.style.background = SEATS[num(info.seat)] ?? "#000";
      return h("div", { class: "player" }, swatch, h("strong", {}, seatName(ctx, num(info.seat))), pill(`score ${num(info.score)}`), pill(`${num(info.blockCount)} blocks`), pill(`${num(info.housesLeft)} houses left`), pill(`${num(info.sticks)} sticks`), pill(`${num(info.cities)} cities`));
    });
    const mine = list(v.myBlocks);
    return h(
      "div",
      { class: "morisi" },
      h("div", { class: "row" }, pill(short(v.phase, "PHASE_").replaceAll("_", " ")), pill(`turn: ${seatName(ctx, num(v.turnSeat))}`), pill(`turn ${num(v.turn)}`), pill(`map: ${String(v.layout ?? "")}`)),
      h("div", { class: "board-map" }, board(ctx)),
      list(v.pending).length ? zone("sticks laid this turn", ...list(v.pending).map((s) => pill(`at ${num(obj(s).anchor)}, paid ${num(obj(s).paid)}/${num(obj(s).cost)}`))) : null,
      h("div", { class: "zone" }, h("div", { class: "label" }, "players"), ...players),
      ctx.seat !== null && mine.length
        ? zone("your blocks", ...mine.map((n, i) => h("span", { class: "pill", "data-private": "blocks", style: `background:${TERRAIN[colours[i]]};color:#1d2330` }, `${colours[i]} ${num(n)}`)))
        : null,
    );
  },
};
