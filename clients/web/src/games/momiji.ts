// Momiji: collect leaf cards from the display, build stacks by leaf type, chase goals.
import { h } from "../dom.js";
import { Speaker } from "../words.js";
import { card, findMove, list, num, obj, pill, seatName, short, text, zone, type Obj, handZone } from "./parts.js";
import type { GameRenderer, LegalMove, TableContext } from "./types.js";

const LEAVES: Record<string, string> = {
  maple: "#c8372d",
  ginkgo: "#d9b51b",
  cherry: "#e07aa0",
  oak: "#8a5a2b",
  birch: "#7f9b3a",
  beech: "#c77a1f",
};

function look(c: Obj, isPrivate = false) {
  const leaf = short(c.type, "LEAF_TYPE_");
  const acorns = `${c.acornLeft ? "◉" : ""}${c.acornRight ? "◉" : ""}`;
  return { corner: text(c.value), middle: leaf, foot: acorns, colour: LEAVES[leaf] ?? "#888", private: isPrivate, title: `${leaf} ${text(c.value)}` };
}

function handCard(ctx: TableContext, c: Obj): HTMLElement {
  const id = num(c.id);
  const move =
    pick(ctx, "placeCard", (f) => num(f.card) === id) ??
    pick(ctx, "discardCard", (f) => num(f.card) === id) ??
    pick(ctx, "mossGarden", (f) => num(f.card) === id);
  return card(ctx, look(c, true), move);
}

// The moves some piece of the table makes; the others are drawn as the seat's choices.
const drawn = new Set<number>();

function pick(ctx: TableContext, kind: string, matches?: (fields: Obj) => boolean): LegalMove | undefined {
  const move = findMove(ctx, kind, matches);
  if (move) drawn.add(move.index);
  return move;
}

/** Every move no piece makes (reveal, powers, Koi Pond, pagoda, finishing…): a button each, on the table. */
function choices(ctx: TableContext): HTMLElement | null {
  const left = ctx.moves.filter((m) => !drawn.has(m.index));
  if (!left.length) return null;
  const speaker = new Speaker(ctx.names);
  return zone("your choices", ...left.map((m) => ctx.moveButton(m, [speaker.move(m.json)], "choice")));
}

export const momiji: GameRenderer = {
  draw(ctx) {
    drawn.clear();
    const v = ctx.view;
    const display = list(v.display).map((c) => {
      const it = obj(c);
      return card(ctx, look(it), pick(ctx, "collect", (f) => f.type === it.type) ?? pick(ctx, "stoneLantern", (f) => num(f.card) === num(it.id)));
    });
    const players = list(v.players).map((p) => {
      const area = obj(p);
      return h(
        "div",
        { class: "player" },
        h("strong", {}, seatName(ctx, num(area.seat))),
        pill(`acorns ${num(area.acorns)}`),
        pill(`${num(area.handSize)} in hand`),
        ...list(area.landscape).map((l) => pill(`${short(obj(l).power, "POWER_").replaceAll("_", " ")}${obj(l).used ? " (used)" : ""}`, "power")),
        h(
          "div",
          { class: "row" },
          list(area.stacks).map((s) => {
            const stack = obj(s);
            const cards = list(stack.cards);
            const topCard = cards.length ? obj(cards[cards.length - 1]) : {};
            return h("div", { class: "stack" }, card(ctx, look(topCard)), h("div", { class: "who" }, `${cards.length} ${short(stack.type, "LEAF_TYPE_")}${stack.closed ? " ⛩" : ""}`));
          }),
        ),
      );
    });
    const goals = list(v.goals).map((g) => {
      const goal = obj(g);
      const name = short(goal.goal, "GOAL_").replaceAll("_", " ");
      const move = pick(ctx, "activateGoal", (f) => f.goal === goal.goal);
      const content = [`${name}${goal.activated ? ` — ${seatName(ctx, num(goal.holder))}` : ""}`];
      return move ? ctx.moveButton(move, content, "goal") : pill(content[0], goal.activated ? "strong" : "");
    });
    const hand = ctx.seat !== null ? handZone("your hand (click to place)", ...list(v.hand).map((c) => handCard(ctx, obj(c)))) : null;
    return h(
      "div",
      { class: "momiji" },
      h("div", { class: "row" }, pill(`round ${num(v.round)}`), pill(short(v.phase, "PHASE_").replaceAll("_", " ")), pill(`turn: ${seatName(ctx, num(v.turnSeat))}`), pill(`deck ${num(v.deckSize)}`), pill(`torii ${num(v.toriiSupply)}`), v.ending ? pill("last round", "strong") : null),
      zone("display (click a card to collect its type)", ...display),
      zone("goals", ...goals),
      h("div", { class: "zone" }, h("div", { class: "label" }, "players and their stacks"), ...players),
      choices(ctx),
      hand,
      list(v.templeBellCards).length ? zone("temple bell", ...list(v.templeBellCards).map((c) => card(ctx, look(obj(c), true)))) : null,
      list(v.scores).length ? zone("score now", ...list(v.scores).map((s) => pill(`${seatName(ctx, num(obj(s).seat))}: ${num(obj(s).total)}`))) : null,
    );
  },
};
