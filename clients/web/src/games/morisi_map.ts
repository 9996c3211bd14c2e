// Morisi's hex map: lands with their blocks, cities with their letters and each player's
// houses in the player's colour, committed and pending sticks, pawns; tiles that make a
// legal move (or start a stick) are focusable buttons.
import { svg } from "../dom.js";
import { list, num, obj, short, type Obj } from "./parts.js";

export const TERRAIN: Record<string, string> = {
  city: "#e9e2cf",
  yellow: "#e8c547",
  orange: "#e8892e",
  red: "#c9413a",
  green: "#4f9a4c",
  blue: "#3f78c0",
};
// The rulebook's player colours.
export const SEAT_COLOURS = ["#f7f7f2", "#1d2330", "#8a8f98", "#8b5a2b"];
export const SEAT_COLOUR_NAMES = ["white", "black", "gray", "brown"];
// SVG units per hex radius; on screen a radius is never drawn under MIN_RADIUS_PX, so that a
// hex (√3 radii wide, 2 high) stays a 44 px tap target on a phone (the map scrolls instead).
const SIZE = 30;
const MIN_RADIUS_PX = 27;

export interface TileMark {
  // What clicking the tile does, said for screen readers and the tooltip.
  label: string;
  kind: "move" | "anchor" | "chosen" | "pay";
  // A short note drawn on the tile (a stick's cost).
  note?: string;
  onPick: () => void;
  // The legal move behind the tile, when one click makes it (for tests and the record).
  move?: string;
}

export interface MapInput {
  view: Obj;
  // Letters of the cities, by tile index.
  letters: Map<number, string>;
  marks: Map<number, TileMark>;
  // A stick dragged from one tile to another: laid if that is a legal move.
  onDrag: (from: number, to: number) => boolean;
  // What the last move changed: the tile a pawn went to, the sticks laid ("seat:a:b").
  fresh: { tiles: Set<number>; sticks: Set<string> };
}

export const stickKey = (seat: number, a: number, b: number) => `${seat}:${Math.min(a, b)}:${Math.max(a, b)}`;

function centre(tile: Obj): [number, number] {
  const q = num(tile.q);
  const r = num(tile.r);
  return [SIZE * Math.sqrt(3) * (q + r / 2), SIZE * 1.5 * r];
}

function hexPoints(x: number, y: number, size = SIZE): string {
  return Array.from({ length: 6 }, (_, i) => {
    const angle = (Math.PI / 3) * i + Math.PI / 6;
    return `${(x + size * Math.cos(angle)).toFixed(1)},${(y + size * Math.sin(angle)).toFixed(1)}`;
  }).join(" ");
}

const text = (x: number, y: number, content: string, attrs: Record<string, string | number> = {}) =>
  svg("text", { x, y, "text-anchor": "middle", "pointer-events": "none", class: "maptext", ...attrs }, document.createTextNode(content));

const MARK_STYLE: Record<TileMark["kind"], [string, number, string]> = {
  move: ["#ffd34d", 4, ""],
  anchor: ["#ffd34d", 3, "5 3"],
  chosen: ["#ffffff", 5, ""],
  pay: ["#ffd34d", 4, ""],
};

export function hexMap(input: MapInput): SVGElement {
  const v = input.view;
  const tiles = list(v.tiles).map(obj);
  const at = new Map(tiles.map((t) => [num(t.index), centre(t)]));
  const xs = [...at.values()].map(([x]) => x);
  const ys = [...at.values()].map(([, y]) => y);
  const pad = SIZE * 1.05;
  const [minX, maxX, minY, maxY] = [Math.min(...xs) - pad, Math.max(...xs) + pad, Math.min(...ys) - pad, Math.max(...ys) + pad];
  const houses = new Map(list(v.cities).map((c) => [num(obj(c).city), list(obj(c).points).map(num)]));
  const scoring = new Set(list(v.scoringCities).map(num));
  const ground: SVGElement[] = [];
  const labels: SVGElement[] = [];
  const sticks: SVGElement[] = [];
  const pawns: SVGElement[] = [];
  let dragFrom: number | undefined;
  let dragged = false;
  for (const tile of tiles) {
    const index = num(tile.index);
    const [x, y] = at.get(index)!;
    const terrain = short(tile.terrain, "TERRAIN_");
    const mark = input.marks.get(index);
    const [stroke, width, dash] = mark ? MARK_STYLE[mark.kind] : ["#2b3a2f", 1.5, ""];
    const hex = svg("polygon", { points: hexPoints(x, y, SIZE - 1), fill: TERRAIN[terrain] ?? "#999", stroke, "stroke-width": width, class: mark ? `hex clickable ${mark.kind}` : "hex", "data-tile": index, "data-q": num(tile.q), "data-r": num(tile.r), "data-terrain": terrain, "data-blocks": num(tile.blocks) });
    if (dash) hex.setAttribute("stroke-dasharray", dash);
    if (mark) {
      hex.setAttribute("role", "button");
      hex.setAttribute("tabindex", "0");
      hex.setAttribute("aria-label", mark.label);
      hex.dataset.focus = `tile-${index}`;
      if (mark.move) {
        hex.dataset.testid = "move";
        hex.dataset.move = mark.move;
      } else hex.dataset.testid = "pick";
      hex.append(svg("title", {}, document.createTextNode(mark.label)));
      hex.addEventListener("click", () => {
        if (dragged) dragged = false;
        else mark.onPick();
      });
      hex.addEventListener("keydown", (event) => {
        const key = (event as KeyboardEvent).key;
        if (key !== "Enter" && key !== " ") return;
        event.preventDefault();
        mark.onPick();
      });
      hex.addEventListener("pointerdown", () => {
        dragFrom = index;
        dragged = false;
      });
    }
    ground.push(hex);
    if (tile.circled) ground.push(svg("circle", { cx: x, cy: y, r: SIZE * 0.62, fill: "none", stroke: "#4a3520", "stroke-width": 2, "pointer-events": "none" }));
    const letter = input.letters.get(index);
    if (letter) {
      if (scoring.has(index)) labels.push(svg("circle", { cx: x, cy: y - 6, r: 12, fill: "#ffd34d", stroke: "#8a5a00", "stroke-width": 1.5, "pointer-events": "none" }));
      labels.push(text(x, y - 1, letter, { "font-size": 17, "font-weight": 700 }));
      const points = houses.get(index) ?? [];
      const owners = points.map((p, seat) => [seat, p] as const).filter(([, p]) => p > 0);
      owners.forEach(([seat, p], i) => {
        const hx = x + (i - (owners.length - 1) / 2) * 15;
        labels.push(svg("path", { d: `M${hx - 6},${y + 17} v-7 l6,-5 l6,5 v7 z`, fill: SEAT_COLOURS[seat] ?? "#000", stroke: "#000", "stroke-width": 1, "pointer-events": "none" }));
        labels.push(text(hx, y + 27, String(p), { "font-size": 10, "font-weight": 700 }));
      });
    } else if (num(tile.blocks)) {
      labels.push(text(x, y + 19, "▪".repeat(num(tile.blocks)), { "font-size": 12 }));
    }
    if (input.fresh.tiles.has(index)) labels.push(svg("polygon", { points: hexPoints(x, y, SIZE - 5), fill: "none", stroke: "#7fdcff", "stroke-width": 3, "pointer-events": "none" }));
    if (mark?.note) labels.push(text(x, y + 5, mark.note, { "font-size": 12, "font-weight": 700, class: "maptext note" }));
  }
  const stick = (a: number, b: number, colour: string, pending: boolean, seat: number) => {
    const from = at.get(a);
    const to = at.get(b);
    if (!from || !to) return;
    // Parallel sticks of several players between two tiles are drawn side by side.
    const [dx, dy] = [to[1] - from[1], from[0] - to[0]].map((d) => (d / Math.hypot(to[0] - from[0], to[1] - from[1])) * (seat - 1.5) * 3.5);
    const line = { x1: from[0] + dx, y1: from[1] + dy, x2: to[0] + dx, y2: to[1] + dy, "stroke-linecap": "round", "pointer-events": "none" };
    if (input.fresh.sticks.has(stickKey(seat, a, b))) sticks.push(svg("line", { ...line, stroke: "#7fdcff", "stroke-width": 12 }));
    sticks.push(svg("line", { ...line, stroke: "#000", "stroke-width": 7 }));
    sticks.push(svg("line", { ...line, stroke: colour, "stroke-width": 4.5, ...(pending ? { "stroke-dasharray": "6 4" } : {}) }));
  };
  for (const s of list(v.sticks).map(obj)) stick(num(s.a), num(s.b), SEAT_COLOURS[num(s.seat)] ?? "#000", false, num(s.seat));
  const turnSeat = num(v.turnSeat);
  for (const p of list(v.pending).map(obj)) {
    stick(num(p.anchor), num(p.paid), SEAT_COLOURS[turnSeat] ?? "#000", true, turnSeat);
    const [a, b] = [at.get(num(p.anchor)), at.get(num(p.paid))];
    if (a && b) {
      const [mx, my] = [(a[0] + b[0]) / 2, (a[1] + b[1]) / 2];
      labels.push(svg("circle", { cx: mx, cy: my, r: 8, fill: "#fff", stroke: "#000", "stroke-width": 1, "pointer-events": "none" }));
      labels.push(text(mx, my + 4, String(num(p.cost)), { "font-size": 11, "font-weight": 700 }));
    }
  }
  for (const p of list(v.players).map(obj)) {
    const spot = p.pawnPlaced ? at.get(num(p.pawnTile)) : undefined;
    if (spot) pawns.push(svg("circle", { cx: spot[0] + 11, cy: spot[1] - 11, r: 8, fill: SEAT_COLOURS[num(p.seat)] ?? "#000", stroke: "#ffd34d", "stroke-width": 2, "pointer-events": "none" }));
  }
  const unitsWide = maxX - minX;
  const map = svg("svg", { viewBox: `${minX} ${minY} ${unitsWide} ${maxY - minY}`, class: "hexmap" }, ...ground, ...sticks, ...labels, ...pawns);
  map.style.minWidth = `${Math.ceil((unitsWide / SIZE) * MIN_RADIUS_PX)}px`;
  map.style.maxWidth = `${Math.ceil((unitsWide / SIZE) * 48)}px`;
  map.addEventListener("pointerup", (event) => {
    const from = dragFrom;
    dragFrom = undefined;
    const pointer = event as PointerEvent;
    const under = document.elementFromPoint(pointer.clientX, pointer.clientY) as SVGElement | null;
    const to = under?.dataset?.tile;
    if (from === undefined || to === undefined || Number(to) === from) return;
    dragged = input.onDrag(from, Number(to));
  });
  return map;
}
