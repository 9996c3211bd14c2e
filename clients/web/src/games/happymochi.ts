// Happy Mochi: beat the Central Duo's number with two adjacent cards of your hand.
import { h } from "../dom.js";
import { backs, card, findMove, list, num, obj, pill, seatName, short, text, zone, type Obj, handZone } from "./parts.js";
import type { GameRenderer, TableContext } from "./types.js";
import { Speaker } from "../words.js";

const COLOURS: Record<string, string> = {
  red: "#d3312b",
  orange: "#e8842a",
  yellow: "#d8b41c",
  green: "#3f9b4a",
  blue: "#3a72b8",
  purple: "#7a3fa0",
  pink: "#e0709a",
};
const EFFECTS: Record<string, string> = { draw: "✋ draw", value_flip: "⇅ flip", none: "" };

function look(c: Obj, isPrivate = false) {
  const colour = short(c.color, "COLOR_");
  return { corner: text(c.value), middle: colour, foot: EFFECTS[short(c.effect, "EFFECT_")] ?? "", colour: COLOURS[colour] ?? "#888", private: isPrivate, title: `${colour} ${text(c.value)}` };
}

function hand(ctx: TableContext, cards: Obj[]): HTMLElement[] {
  const items: HTMLElement[] = [];
  const slot = (position: number) => {
    const move = findMove(ctx, "placeCard", (f) => num(f.position) === position);
    if (move) items.push(ctx.moveButton(move, ["↓"], "slot"));
  };
  cards.forEach((c, position) => {
    slot(position);
    // Clicking a card plays the Duo it starts (it and its right neighbour).
    items.push(card(ctx, look(c, true), findMove(ctx, "playDuo", (f) => num(f.position) === position)));
  });
  slot(cards.length);
  return items;
}

/** The Value card: a button that flips it while a 5's flip is pending. */
function valueCard(ctx: TableContext, side: string): HTMLElement {
  const flip = findMove(ctx, "flipValue");
  const said = `values ${side === "plus" ? "higher" : "lower"}: a Duo must be ${side === "plus" ? "greater" : "smaller"}`;
  return flip ? ctx.moveButton(flip, [`⇅ Flip the value card (now: ${said})`], "flip") : pill(said);
}

export const happyMochi: GameRenderer = {
  draw(ctx) {
    const v = ctx.view;
    const source = (name: string) => findMove(ctx, "draw", (f) => f.source === `DRAW_SOURCE_${name}`);
    const central = (c: Obj, height: number, name: string) =>
      h("div", { class: "stack" }, card(ctx, look(c), source(name)), h("div", { class: "who" }, `${height} high`));
    const deck = source("DECK");
    const pass = findMove(ctx, "passTurn");
    return h(
      "div",
      { class: "happymochi" },
      h(
        "div",
        { class: "row" },
        pill(`round ${num(v.round)}`),
        pill(short(v.phase, "PHASE_").replaceAll("_", " ")),
        pill(`turn: ${seatName(ctx, num(v.turnSeat))}`),
        valueCard(ctx, short(v.valueSide, "VALUE_SIDE_")),
        pill(`to beat: ${num(v.numberToBeat)}`, "strong"),
        v.colorRestriction ? pill("same colour only", "strong") : null,
        pill(`game ends at ${num(v.endScore)}`),
      ),
      h(
        "div",
        { class: "row" },
        zone("central duo", central(obj(v.centralLeft), num(v.leftHeight), "LEFT"), central(obj(v.centralRight), num(v.rightHeight), "RIGHT")),
        zone(`deck (${num(v.deckSize)})`, deck ? ctx.moveButton(deck, ["draw"], "card back") : backs(1)),
        v.drawnCard ? zone(`held card (${short(v.drawnFrom, "DRAW_SOURCE_")})`, card(ctx, look(obj(v.drawnCard)))) : null,
        list(v.pendingEffects).length ? zone("effects to resolve", ...list(v.pendingEffects).map((e) => pill(new Speaker(ctx.names).fields(e)))) : null,
      ),
      h(
        "div",
        { class: "row players" },
        ...list(v.handSizes).map((n, seat) => {
          const said = `${seatName(ctx, seat)}: ${num(n)} cards, ${num(list(v.totalScores)[seat])} penalty`;
          // A 9 played: its player names who draws by clicking that player.
          const drawer = findMove(ctx, "nameDrawer", (f) => num(f.seat) === seat);
          return drawer ? ctx.moveButton(drawer, [`✋ ${seatName(ctx, seat)} draws — ${said}`], "player-choice") : pill(said);
        }),
        pass ? ctx.moveButton(pass, ["Pass: no Duo to play, nothing to draw"], "pass") : null,
      ),
      ctx.seat !== null ? handZone("your hand (click a card to play it and its right neighbour as a Duo; ↓ places a drawn card)", ...hand(ctx, list(v.hand).map(obj))) : null,
    );
  },
};
