// Momiji: collect leaf cards from the display, build stacks by leaf type, chase goals.
import { h } from "../dom.js";
import { Speaker } from "../words.js";
import { card, findMove, list, num, obj, pill, seatName, short, text, zone, type Obj, handZone } from "./parts.js";
import type { GameRenderer, LegalMove, TableContext } from "./types.js";
import "./momiji.css";

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

const power = (value: unknown): string => short(value as string, "POWER_").replaceAll("_", " ");

/** The cards the seat can name in a move (its hand, the display, Temple Bell's peek), by id. */
function knownCards(view: Obj): Map<number, Obj> {
  const cards = new Map<number, Obj>();
  for (const c of [...list(view.hand), ...list(view.display), ...list(view.templeBellCards)]) cards.set(num(obj(c).id), obj(c));
  return cards;
}

/** A move no piece of the table makes, in words with its cards' faces. */
function sayChoice(ctx: TableContext, move: LegalMove, cards: Map<number, Obj>): string {
  const [kind, value] = Object.entries(move.json)[0] ?? ["", {}];
  const f = obj(value);
  const face = (id: unknown) => {
    const c = cards.get(num(id as number));
    return c ? `${short(c.type, "LEAF_TYPE_")} ${text(c.value)}` : "a card";
  };
  switch (kind) {
    case "reveal":
      return "Reveal 4 more cards (1 acorn)";
    case "finishPlay":
      return "Finish this play";
    case "endTurn":
      return "End your turn";
    case "draftPower":
      return `Take the ${power(f.power)} landscape`;
    case "usePower":
      return `Use ${power(f.power)}`;
    case "discardForAcorn":
      return `Discard ${list(f.cards).map(face).join(" and ")} for an acorn`;
    case "koiPond":
      return `Koi Pond: swap ${face(f.handCard)} from your hand for ${face(f.displayCard)}`;
    case "mossGarden":
      return `Moss Garden: ${face(f.card)}`;
    case "templeBellChoose": {
      const back = list(f.backOnTop).map(face);
      return `Temple Bell: keep ${face(f.keep)}${back.length ? `, put back ${back.join(" then ")}` : ""}`;
    }
    default:
      return new Speaker(ctx.names).move(move.json);
  }
}

/** Every move no piece makes (reveal, Koi Pond, discarding for an acorn, finishing…): a button each, on the table. */
function choices(ctx: TableContext): HTMLElement | null {
  const left = ctx.moves.filter((m) => !drawn.has(m.index));
  if (!left.length) return null;
  const cards = knownCards(ctx.view);
  const element = zone("your choices", ...left.map((m) => ctx.moveButton(m, [sayChoice(ctx, m, cards)], "choice")));
  // On a phone a long list (every two cards to discard for an acorn) scrolls inside its own
  // region, under the rest of the table: reachable by keyboard, a named group.
  element.classList.add("choices");
  Object.entries({ tabindex: "0", role: "group", "aria-label": "your choices", "data-scroll": "choices" }).forEach(([k, v]) => element.setAttribute(k, v));
  return element;
}

function withClass(element: HTMLElement, name: string): HTMLElement {
  element.classList.add(name);
  return element;
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
        // A power the seat can use now is a button on its landscape card.
        ...list(area.landscape).map((l) => {
          const land = obj(l);
          const said = `${power(land.power)}${land.used ? " (used)" : ""}`;
          const use = num(area.seat) === ctx.seat ? pick(ctx, "usePower", (f) => f.power === land.power) : undefined;
          return use ? ctx.moveButton(use, [`use ${said}`], "power") : pill(said, "power");
        }),
        h(
          "div",
          { class: "row" },
          list(area.stacks).map((s) => {
            const stack = obj(s);
            const cards = list(stack.cards);
            const topCard = cards.length ? obj(cards[cards.length - 1]) : {};
            // Pagoda: the seat closes one of its open stacks by clicking it.
            const close = num(area.seat) === ctx.seat ? pick(ctx, "pagoda", (f) => f.type === stack.type) : undefined;
            const top = close ? card(ctx, { ...look(topCard), title: `Pagoda: close your ${short(stack.type, "LEAF_TYPE_")} stack` }, close) : card(ctx, look(topCard));
            return h("div", { class: "stack" }, top, h("div", { class: "who" }, `${cards.length} ${short(stack.type, "LEAF_TYPE_")}${stack.closed ? " ⛩" : ""}`));
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
      list(v.scores).length ? withClass(zone("score now", ...list(v.scores).map((s) => pill(`${seatName(ctx, num(obj(s).seat))}: ${num(obj(s).total)}`))), "score-now") : null,
    );
  },
};
