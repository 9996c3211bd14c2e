// More: a rummy of runs and ace sets, one Solo against a Pair, with the two More piles.
// Every decision is made on the table: pick cards in the hand, then lay them as a meld, add
// one to an end of a meld, or drop it on the discard pile; draw by clicking the draw pile,
// take the discard pile by clicking it.
import { h } from "../dom.js";
import type { Json } from "../render.js";
import { listWords } from "../words.js";
import { choiceButton, LocalChoice, said } from "./choice.js";
import { cardWords, describeMoreEvent } from "./more_words.js";
import { backs, card, findMove, handZone, type CardLook, list, num, obj, pill, seatName, short, text, zone, type Obj } from "./parts.js";
import type { GameRenderer, LegalMove, TableContext } from "./types.js";
import "./more.css";

const SUITS: Record<string, [string, string]> = {
  clubs: ["♣", "#1d2330"],
  diamonds: ["♦", "#c0262d"],
  hearts: ["♥", "#c0262d"],
  spades: ["♠", "#1d2330"],
};
const SUIT_ORDER = ["clubs", "diamonds", "hearts", "spades"];
const RANKS: Record<number, string> = { 1: "A", 11: "J", 12: "Q", 13: "K" };
const PHASES: Record<string, string> = {
  bidding: "sealed bids for the Solo",
  draw: "draw a card or take the discard pile",
  play: "meld, then discard one card",
  over: "the match is over",
};

// The cards picked in the hand (by id), kept until they are played or leave the hand.
const picked = new Set<number>();
// The cards on the table (melds, the discard pile's top) at the last version drawn, and those
// the last move put there: lit, so that a player sees what just happened.
const lastMove = { version: "", onTable: new Set<number>(), fresh: new Set<number>() };

function noteLastMove(v: Obj): void {
  const version = String(v.version ?? "");
  if (version === lastMove.version) return;
  const pile = list(v.discardPile).map(obj);
  const onTable = new Set([...list(v.melds).flatMap((m) => list(obj(m).cards).map((c) => num(obj(c).id))), ...pile.slice(-1).map((c) => num(c.id))]);
  lastMove.fresh = lastMove.version ? new Set([...onTable].filter((id) => !lastMove.onTable.has(id))) : new Set();
  lastMove.onTable = onTable;
  lastMove.version = version;
}

/** A card on the table, lit when the last move put it there. */
function tableCard(ctx: TableContext, c: Obj, cardLook: CardLook, move?: LegalMove): HTMLElement {
  const element = card(ctx, cardLook, move);
  if (lastMove.fresh.has(num(c.id))) {
    element.classList.add("fresh");
    said(element, "(just played)");
  }
  return element;
}

function suitOf(c: Obj): string {
  return short(c.suit, "SUIT_");
}

function look(c: Obj, isPrivate = false) {
  if (c.joker) return { corner: "★", middle: "joker", colour: "#7a3fa0", private: isPrivate, title: "joker" };
  const [symbol, colour] = SUITS[suitOf(c)] ?? ["?", "#888"];
  const rank = RANKS[num(c.rank)] ?? text(c.rank);
  return { corner: `${rank}${symbol}`, middle: symbol, colour, private: isPrivate, title: cardWords(c) };
}

function byFace(a: Obj, b: Obj): number {
  const order = (c: Obj) => (c.joker ? 99 : SUIT_ORDER.indexOf(suitOf(c))) * 20 + num(c.rank);
  return order(a) - order(b) || num(a.id) - num(b.id);
}

const sameCards = (a: number[], b: Set<number>) => a.length === b.size && a.every((id) => b.has(id));

/** The picked cards' lay-meld move, if they make one. */
function layMove(ctx: TableContext): LegalMove | undefined {
  return picked.size ? findMove(ctx, "layMeld", (f) => sameCards(list(f.cards).map(num), picked)) : undefined;
}

/** Cards that, with those already picked, still lead to a meld the rules allow now. */
function meldPartners(ctx: TableContext): Set<number> {
  const partners = new Set<number>();
  for (const m of ctx.moves) {
    if (!("layMeld" in m.json)) continue;
    const ids = list(obj(m.json.layMeld).cards).map(num);
    if ([...picked].every((id) => ids.includes(id))) ids.filter((id) => !picked.has(id)).forEach((id) => partners.add(id));
  }
  return partners;
}

function handCard(ctx: TableContext, c: Obj, hints: { partners: Set<number>; addable: Set<number>; locked: Set<number>; top: number | undefined; canPick: boolean }): HTMLElement {
  const id = num(c.id);
  const cardLook = look(c, true);
  const marks = [hints.partners.has(id) ? "meldable" : "", hints.addable.has(id) ? "addable" : "", hints.locked.has(id) ? "locked" : "", hints.top === id ? "top" : ""].filter(Boolean);
  const foot = hints.top === id ? "meld me" : hints.locked.has(id) ? "from the pile" : hints.partners.has(id) || hints.addable.has(id) ? "✚ meld" : "";
  if (!hints.canPick) return card(ctx, { ...cardLook, foot });
  const chosen = picked.has(id);
  const button = choiceButton([h("span", { class: "value" }, cardLook.corner), h("span", { class: "effect" }, cardLook.middle), h("span", { class: "effect" }, foot)], {
    className: `card ${marks.join(" ")}`,
    pressed: chosen,
    label: `${cardLook.title}${chosen ? ", picked" : ""}${marks.includes("top") ? ", the pile's top card: meld it this turn" : marks.includes("locked") ? ", taken from the pile this turn" : ""}`,
    focus: `hand-${id}`,
    onPick: () => {
      if (chosen) picked.delete(id);
      else picked.add(id);
      table.redraw();
    },
  });
  button.style.setProperty("--suit", cardLook.colour);
  button.dataset.private = "hand";
  button.dataset.card = String(id);
  return button;
}

/** A meld, with a slot at each end where the one picked card may be added. */
function meld(ctx: TableContext, m: Obj, pickedCard: Obj | undefined): HTMLElement {
  const index = num(m.index);
  const slot = (lowEnd: boolean) => {
    if (!pickedCard) return null;
    const move = findMove(ctx, "addToMeld", (f) => num(f.meld) === index && num(f.card) === num(pickedCard.id) && Boolean(f.lowEnd) === lowEnd);
    if (!move) return null;
    const button = ctx.moveButton(move, ["+"], "slot");
    const said = `add the ${cardWords(pickedCard)} at the ${lowEnd ? "low" : "high"} end`;
    button.title = said;
    button.setAttribute("aria-label", said);
    button.dataset.focus = `meld-${index}-${lowEnd ? "low" : "high"}`;
    return button;
  };
  const kind = short(m.kind, "MELD_KIND_") === "ace_set" ? "ace set" : `run of ${SUITS[suitOf(m)]?.[0] ?? ""}`;
  const facts = [kind, m.biriba ? (m.dirty ? "dirty biriba" : "pure biriba") : "", `${num(m.points)} points`].filter(Boolean).join(" · ");
  const element = zone(facts, slot(true), ...list(m.cards).map((c) => tableCard(ctx, obj(c), look(obj(c)))), slot(false));
  element.classList.add("meld");
  element.dataset.meld = String(index);
  return element;
}

function sideMelds(ctx: TableContext, side: string, seats: string[], melds: Obj[], pickedCard: Obj | undefined): HTMLElement {
  const title = `${side === "solo" ? "Solo" : "Pair"} (${listWords(seats)}): ${melds.length ? `${melds.length} meld${melds.length > 1 ? "s" : ""}` : "no melds yet"}`;
  // It scrolls on a phone: reachable by keyboard, a named group.
  return h("div", { class: "zone side", "data-side": side, "data-scroll": `melds-${side}`, tabindex: 0, role: "group", "aria-label": title }, h("div", { class: "label" }, title), h("div", { class: "melds" }, melds.map((m) => meld(ctx, m, pickedCard))));
}

function piles(ctx: TableContext, v: Obj, pickedCard: Obj | undefined): HTMLElement {
  const pile = list(v.discardPile).map(obj);
  const top = pile.length ? pile[pile.length - 1] : undefined;
  const drawMove = findMove(ctx, "draw");
  const drawPile = drawMove
    ? ctx.moveButton(drawMove, [h("span", { class: "value" }, "⇩"), h("span", { class: "effect" }, "draw")], "card back pile")
    : backs(Math.min(num(v.drawPileSize), 3));
  if (drawMove) said(drawPile, "the top card of the draw pile");
  const discardMove = pickedCard ? findMove(ctx, "discard", (f) => num(f.card) === num(pickedCard.id)) : undefined;
  const takeMove = findMove(ctx, "takePile");
  let discardPile: HTMLElement;
  if (discardMove) {
    discardPile = ctx.moveButton(discardMove, [h("span", { class: "value" }, "⇓"), h("span", { class: "effect" }, "discard"), h("span", { class: "effect" }, look(pickedCard!).corner)], "card drop");
    said(discardPile, `the ${cardWords(pickedCard!)} and end your turn`);
  } else if (top) {
    discardPile = tableCard(ctx, top, { ...look(top), foot: takeMove ? `take all ${pile.length}` : "" }, takeMove);
    if (takeMove) said(discardPile, `: the whole discard pile, the ${cardWords(top)} on top`);
  } else {
    discardPile = h("span", { class: "pile-empty" }, "empty");
  }
  const more = (side: string, state: Json, size: Json) => pill(`${side}'s: ${short(state, "PILE_STATE_").replaceAll("_", " ")}${num(size) ? ` (${num(size)})` : ""}`);
  return h(
    "div",
    { class: "row piles" },
    zone(`draw pile: ${num(v.drawPileSize)}`, drawPile),
    zone(`discard pile: ${pile.length}`, discardPile),
    h("div", { class: "zone more-piles" }, h("div", { class: "label" }, "More piles"), more("Pair", v.pairMorePile, v.pairMorePileSize), more("Solo", v.soloMorePile, v.soloMorePileSize)),
  );
}

/** The picked cards' choices: lay them as a meld, or what else they can do. */
function actions(ctx: TableContext, v: Obj, hand: Obj[]): HTMLElement | null {
  const items: (HTMLElement | string)[] = [];
  const lay = layMove(ctx);
  if (lay) {
    const cards = hand.filter((c) => picked.has(num(c.id))).sort(byFace);
    const button = ctx.moveButton(lay, [`Lay ${listWords(cards.map((c) => look(c).corner))} as a new meld`], "lay");
    button.dataset.focus = "lay";
    items.push(button);
  } else if (findMove(ctx, "discard")) {
    items.push(
      h(
        "span",
        { class: "hint" },
        picked.size === 0
          ? "Pick cards in your hand: three to lay a meld, one to add to a meld's end or to discard."
          : picked.size === 1
            ? "Add it at a + end of a meld, pick two more for a new meld, or drop it on the discard pile."
            : meldPartners(ctx).size
              ? "Pick one more card marked ✚ meld to lay them as a meld."
              : "These cards make no meld you may lay now.",
      ),
    );
  }
  if (picked.size) items.push(choiceButton(["Clear the picked cards"], { className: "quiet", focus: "clear", onPick: () => (picked.clear(), table.redraw()) }));
  const takeBack = findMove(ctx, "takeBack");
  if (takeBack) {
    const button = ctx.moveButton(takeBack, [v.mustMeldTop ? "Take back this turn (and give the pile back)" : "Take back this turn's melds"], "take-back");
    button.dataset.focus = "take-back";
    items.push(button);
  }
  const bids = ctx.moves.filter((m) => "bid" in m.json);
  if (bids.length) items.push(h("span", { class: "hint" }, "Your sealed bid for the Solo:"), ...bids.map((m) => ctx.moveButton(m, [String(num(obj(m.json.bid).amount))], "bid")));
  return items.length ? h("div", { class: "row actions", id: "more-actions" }, ...items) : null;
}

/** The latest round's scores, seat by seat, as the rules add them up. */
function roundSummary(ctx: TableContext, v: Obj): HTMLElement | null {
  const rounds = list(v.rounds).map(obj);
  const last = rounds[rounds.length - 1];
  if (!last) return null;
  const out = num(last.wentOut);
  const ended = short(last.end, "ROUND_END_") === "went_out" && out >= 0 ? `${seatName(ctx, out)} went out` : "the cards ran out";
  const rows = list(last.seats).map((s, seat) => {
    const r = obj(s);
    const cells = [seatName(ctx, seat) + (num(last.solo) === seat ? " (Solo)" : ""), num(r.meldPoints), num(r.biribaBonus), num(r.goOutBonus), -num(r.handPoints), -num(r.morePenalty), r.multiplied ? "×1.5" : "", num(r.soloBonus) || "", num(r.total), num(list(last.totals)[seat])];
    return h("tr", {}, cells.map((c, i) => (i === 0 ? h("th", { scope: "row" }, String(c)) : h("td", {}, String(c)))));
  });
  const heads = ["player", "melds", "biribas", "going out", "hand", "More pile", "Solo ×1.5", "Solo out", "round", "total"];
  const summary = h(
    "details",
    { class: "zone summary", id: "round-summary" },
    h("summary", { class: "label" }, `Round ${num(last.round)}: ${ended}`),
    h(
      "div",
      // It scrolls sideways on a phone: reachable by keyboard, named.
      { class: "scores", tabindex: 0, role: "group", "aria-label": `round ${num(last.round)} scores` },
      h("table", {}, h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows)),
    ),
  );
  // On a phone the scores of the round before stay folded while a round is played: the
  // table's room is the melds'. Opened or folded by the player, it stays so.
  (summary as HTMLDetailsElement).open = summaryOpen ?? (!window.matchMedia(PHONE).matches || short(v.phase, "PHASE_") === "over");
  summary.addEventListener("toggle", () => (summaryOpen = (summary as HTMLDetailsElement).open));
  return summary;
}

const PHONE = "(max-width: 600px)";
// Whether the player opened (true) or folded (false) the round's scores; unset: as the screen suits.
let summaryOpen: boolean | undefined;

function drawTable(ctx: TableContext): HTMLElement {
  const v = ctx.view;
  shown = v;
  noteLastMove(v);
  const hand = list(v.hand).map(obj).sort(byFace);
  const inHand = new Set(hand.map((c) => num(c.id)));
  const playing = ctx.moves.some((m) => "discard" in m.json);
  for (const id of [...picked]) if (!inHand.has(id) || !playing) picked.delete(id);
  const pickedCard = picked.size === 1 ? hand.find((c) => picked.has(num(c.id))) : undefined;
  const addable = new Set(ctx.moves.filter((m) => "addToMeld" in m.json).map((m) => num(obj(m.json.addToMeld).card)));
  const hints = { partners: meldPartners(ctx), addable, locked: new Set(list(v.lockedCards).map(num)), top: v.mustMeldTop ? num(v.topCard) : undefined, canPick: playing };
  const roles = list(v.roles).map((r) => short(r, "ROLE_"));
  const seatsOf = (role: string) => roles.flatMap((r, seat) => (r === role ? [seatName(ctx, seat)] : []));
  const melds = list(v.melds).map(obj);
  const phase = short(v.phase, "PHASE_");
  const turnFacts = [
    v.mustMeldTop ? pill(`meld the ${cardWords(obj(list(v.discardPile).map(obj).find((c) => num(c.id) === num(v.topCard)) ?? {}))} from the pile this turn`, "strong") : null,
    v.opening ? pill(`going down: ${num(v.openingHalfPoints) / 2} of 7.5 melded`) : null,
    v.meldingClosed ? pill("melds taken back: discard to end the turn") : null,
  ];
  return h(
    "div",
    { class: "more" },
    h(
      "div",
      { class: "row" },
      pill(`round ${num(v.round)}${num(v.maxRounds) ? ` of ${num(v.maxRounds)}` : ""}`),
      pill(PHASES[phase] ?? phase),
      phase !== "over" ? pill(`turn: ${seatName(ctx, num(v.turn))}`) : null,
      pill(`play to ${num(v.targetScore)}`),
      ...turnFacts,
    ),
    h(
      "div",
      { class: "row" },
      ...list(v.handSizes).map((n, seat) =>
        h(
          "span",
          { class: "pill" },
          `${seatName(ctx, seat)}: ${roles[seat] === "unspecified" || !roles[seat] ? "" : `${roles[seat]}, `}${num(n)} card${num(n) === 1 ? "" : "s"}`,
          // The seats above the table say the points too: a phone leaves them out here.
          h("span", { class: "points" }, `, ${num(list(v.scores)[seat])} points`),
          list(v.minimumBinds)[seat] ? ", needs 7.5 to go down" : "",
        ),
      ),
    ),
    piles(ctx, v, pickedCard),
    // Both sides' melds in one panel: on a phone it takes the height the rest leaves, each side
    // scrolling on its own (more.css).
    h(
      "div",
      { class: "melds-panel" },
      sideMelds(ctx, "solo", seatsOf("solo"), melds.filter((m) => short(m.side, "ROLE_") === "solo"), pickedCard),
      sideMelds(ctx, "pair", seatsOf("pair"), melds.filter((m) => short(m.side, "ROLE_") === "pair"), pickedCard),
    ),
    actions(ctx, v, hand),
    roundSummary(ctx, v),
    ctx.seat !== null ? withScroll(handZone(playing ? "your hand: pick cards to play them" : "your hand", ...hand.map((c) => handCard(ctx, c, hints)))) : null,
  );
}

function withScroll(hand: HTMLElement): HTMLElement {
  hand.querySelector<HTMLElement>(".row")?.setAttribute("data-scroll", "hand");
  return hand;
}

const table = new LocalChoice(drawTable);

// The view last drawn: the fallback list of moves names cards by their faces.
let shown: Obj = {};

function describeMove(move: Obj): string | undefined {
  const [kind, body] = Object.entries(move)[0] ?? ["", null];
  const fields = obj(body);
  const known = [...list(shown.hand), ...list(shown.discardPile)].map(obj);
  const said = (id: Json | undefined) => `the ${cardWords(known.find((c) => num(c.id) === num(id)) ?? {})}`;
  switch (kind) {
    case "bid":
      return `bid ${num(fields.amount)} for the Solo`;
    case "draw":
      return "draw a card";
    case "takePile":
      return "take the discard pile";
    case "layMeld":
      return `lay a meld: ${listWords(list(fields.cards).map(said))}`;
    case "addToMeld": {
      const target = list(shown.melds).map(obj).find((m) => num(m.index) === num(fields.meld));
      const of = target ? ` to the ${short(target.kind, "MELD_KIND_") === "ace_set" ? "ace set" : `run of ${SUITS[suitOf(target)]?.[0] ?? ""}`} that starts with the ${cardWords(obj(list(target.cards)[0]))}` : "";
      return `add ${said(fields.card)}${of} at the ${fields.lowEnd ? "low" : "high"} end`;
    }
    case "takeBack":
      return "take back this turn's melds";
    case "discard":
      return `discard ${said(fields.card)}`;
  }
  return undefined;
}

export const more: GameRenderer = {
  describeMove,
  draw: (ctx) => table.draw(ctx),
  describeEvent: (kind, body, names) => describeMoreEvent(kind, body, names),
};
