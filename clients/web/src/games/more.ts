// More: a rummy of runs and ace sets, one Solo against a Pair, with the two More piles.
import { h } from "../dom.js";
import { backs, card, findMove, list, num, obj, pill, seatName, short, text, zone, type Obj, handZone } from "./parts.js";
import type { GameRenderer, TableContext } from "./types.js";

const SUITS: Record<string, [string, string]> = {
  clubs: ["♣", "#1d2330"],
  diamonds: ["♦", "#c0262d"],
  hearts: ["♥", "#c0262d"],
  spades: ["♠", "#1d2330"],
};
const RANKS: Record<number, string> = { 1: "A", 11: "J", 12: "Q", 13: "K" };

function look(c: Obj, isPrivate = false) {
  if (c.joker) return { corner: "★", middle: "joker", colour: "#7a3fa0", private: isPrivate };
  const [symbol, colour] = SUITS[short(c.suit, "SUIT_")] ?? ["?", "#888"];
  const rank = RANKS[num(c.rank)] ?? text(c.rank);
  return { corner: `${rank}${symbol}`, middle: symbol, colour, private: isPrivate, title: `${rank} of ${short(c.suit, "SUIT_")}` };
}

function meld(ctx: TableContext, m: Obj): HTMLElement {
  const label = `${short(m.side, "ROLE_")} ${short(m.kind, "MELD_KIND_").replace("_", " ")}${m.biriba ? " · biriba" : ""}${m.dirty ? " · dirty" : ""} · ${num(m.points)} pts`;
  return zone(label, ...list(m.cards).map((c) => card(ctx, look(obj(c)))));
}

export const more: GameRenderer = {
  draw(ctx) {
    const v = ctx.view;
    const roles = list(v.roles).map((r) => short(r, "ROLE_"));
    const pile = list(v.discardPile);
    const top = pile.length ? obj(pile[pile.length - 1]) : undefined;
    const hand = list(v.hand).map((c) => card(ctx, look(obj(c), true), findMove(ctx, "discard", (f) => num(f.card) === num(obj(c).id))));
    return h(
      "div",
      { class: "more" },
      h(
        "div",
        { class: "row" },
        pill(`round ${num(v.round)}${num(v.maxRounds) ? ` of ${num(v.maxRounds)}` : ""}`),
        pill(short(v.phase, "PHASE_")),
        pill(`turn: ${seatName(ctx, num(v.turn))}`),
        pill(`to ${num(v.targetScore)}`),
      ),
      h(
        "div",
        { class: "row" },
        ...list(v.handSizes).map((n, seat) => pill(`${seatName(ctx, seat)}: ${roles[seat] || "?"}, ${num(n)} cards, ${num(list(v.scores)[seat])} pts`)),
      ),
      h(
        "div",
        { class: "row" },
        zone(`draw pile (${num(v.drawPileSize)})`, backs(Math.min(num(v.drawPileSize), 3))),
        zone(`discard pile (${pile.length})`, top ? card(ctx, look(top), findMove(ctx, "takePile")) : h("span", { class: "muted" }, "empty")),
        zone(`pair's More pile: ${short(v.pairMorePile, "PILE_STATE_")}`, backs(num(v.pairMorePileSize) ? 1 : 0)),
        zone(`solo's More pile: ${short(v.soloMorePile, "PILE_STATE_")}`, backs(num(v.soloMorePileSize) ? 1 : 0)),
      ),
      h("div", { class: "melds" }, list(v.melds).length ? list(v.melds).map((m) => meld(ctx, obj(m))) : h("p", { class: "muted" }, "No melds yet.")),
      ctx.seat !== null ? handZone("your hand (click a card to discard it)", ...hand) : null,
    );
  },
};
