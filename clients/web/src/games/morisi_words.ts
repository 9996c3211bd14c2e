// Morisi's events as sentences: tiles said as the map shows them (city letters, land
// colours), never by their index.
import { listWords } from "../words.js";
import { list, num, obj, short, type Obj } from "./parts.js";

const END_REASONS: Record<string, string> = {
  blocks_exhausted: "a colour's last block left the map",
  houses_exhausted: "a player placed their last house",
};

/** Cities are named by letters, in tile order: A, B, C… */
export function cityLetters(view: Obj): Map<number, string> {
  const letters = new Map<number, string>();
  for (const tile of list(view.tiles).map(obj)) {
    if (short(tile.terrain, "TERRAIN_") === "city") letters.set(num(tile.index), String.fromCharCode(65 + letters.size));
  }
  return letters;
}

export function tileWords(view: Obj, letters: Map<number, string>, index: number): string {
  const letter = letters.get(index);
  if (letter) return `city ${letter}`;
  const tile = obj(list(view.tiles)[index]);
  return `the ${short(tile.terrain, "TERRAIN_")} land${num(tile.blocks) ? ` with ${num(tile.blocks)} block${num(tile.blocks) > 1 ? "s" : ""}` : ""}`;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function describeMorisiEvent(kind: string, body: Obj, names: string[], view: Obj): string | undefined {
  const letters = cityLetters(view);
  const who = names[num(body.seat)] ?? "a player";
  // A land is said by its colour alone: its blocks change as the match goes on.
  const tile = (index: number) => letters.has(index) ? `city ${letters.get(index)}` : `a ${short(obj(list(view.tiles)[index]).terrain, "TERRAIN_")} land`;
  const colourOf = (index: number) => short(obj(list(view.tiles)[index]).terrain, "TERRAIN_");
  switch (kind) {
    case "boardSetUp":
      return `The map is laid: ${plural(list(body.tiles).length, "tile")}, ${plural(letters.size, "city")} (A to ${String.fromCharCode(64 + letters.size)}); ${names[num(body.startSeat)] ?? "a player"} starts.`;
    case "predictionSealed":
      return `${who} sealed ${num(body.count)} of 3 predicted cities${body.complete ? " (complete)" : ""}.`;
    case "predictionRecorded":
      return `Your prediction so far: ${list(body.cities).map((c, i) => `${i + 1}. ${letters.get(num(c)) ?? "?"}`).join(", ")}.`;
    case "pawnPlaced":
      return `${who} placed the pawn on ${tile(num(body.tile))}${body.tookBlock ? `, taking a ${colourOf(num(body.tile))} block` : ""}.`;
    case "pawnMoved": {
      const jumped = list(body.jumped).length;
      return `${who} moved the pawn to ${tile(num(body.toTile))}${jumped ? `, jumping ${plural(jumped, "pawn")}` : ""}${body.tookBlock ? `, taking a ${colourOf(num(body.toTile))} block` : ""}.`;
    }
    case "pawnBlocked":
      return `${who}'s pawn cannot move this turn.`;
    case "stickLaid":
      return `${who} laid a stick from ${tile(num(body.anchor))} to ${tile(num(body.paid))}, paying ${num(body.cost)} ${short(body.color, "TERRAIN_")}.`;
    case "stickUndone":
      return `${who} took back the stick from ${tile(num(body.anchor))} to ${tile(num(body.paid))} (${plural(num(body.refund), "block")} back).`;
    case "routeBuilt": {
      const houses = list(body.houses).map(obj).map((c) => `${letters.get(num(c.city)) ?? "?"} ${num(c.points)}`);
      return `${who} built a route of ${plural(list(body.sticks).length, "stick")}: houses ${listWords(houses)}; ${num(body.housesLeft)} house points left.`;
    }
    case "turnEnded":
      return `${who} ended the turn${num(body.discarded) ? `, taking back ${plural(num(body.discarded), "stick")}` : ""}; ${names[num(body.nextSeat)] ?? "the next player"} plays next.`;
    case "gameOver": {
      const scores = list(body.scores).map((s, seat) => `${names[seat] ?? "a player"} ${num(s)}`);
      return `The game is over: ${END_REASONS[short(body.reason, "END_REASON_")] ?? "it ended"}. Scores: ${listWords(scores)}.`;
    }
  }
  return undefined;
}
