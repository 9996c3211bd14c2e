// Mori: a trick-taking game with seasons as suits, dice on the mat, score piles.
import { h } from "../dom.js";
import type { Json } from "../render.js";
import { card, findMove, list, num, obj, pill, seatName, short, text, zone, type Obj, handZone } from "./parts.js";
import type { GameRenderer, TableContext } from "./types.js";
import "./mori.css";
import { describeMoriEvent, moriCardWords } from "./mori_words.js";

const SEASON_COLOURS: Record<string, string> = {
  spring: "#3f9b4a",
  summer: "#d9a21b",
  autumn: "#c4532a",
  winter: "#3a72b8",
  x: "#6b4a8f",
};

const FACE_SIGNS: Record<string, string> = { spring: "❀", summer: "☀", autumn: "❦", winter: "❄", x: "X" };

function season(value: Json | undefined): string {
  return short(value, "SUIT_");
}

function cardLook(c: Obj, isPrivate = false) {
  const suit = season(c.suit);
  const marks = [num(c.vp) ? `★${num(c.vp)}` : "", num(c.np) ? `✖${num(c.np)}` : "", num(c.rot) ? `☠${num(c.rot)}` : ""].join(" ");
  return { corner: suit === "x" ? "X" : text(c.rank), middle: suit, foot: marks, colour: SEASON_COLOURS[suit] ?? "#888", private: isPrivate, title: `${suit} ${text(c.rank)}` };
}

function die(ctx: TableContext, d: Obj, kind?: string): HTMLElement {
  const face = season(d.face);
  const move = kind ? findMove(ctx, kind, (f) => num(f.die) === num(d.id)) : undefined;
  const content = [FACE_SIGNS[face] ?? "?"];
  const element = move ? ctx.moveButton(move, content, "die") : h("span", { class: "die" }, ...content);
  element.style.setProperty("--suit", SEASON_COLOURS[face] ?? "#888");
  element.title = `die: ${face}`;
  if (move) element.setAttribute("aria-label", `${kind === "claimDie" ? "claim" : "play"} the ${face} die`);
  return element;
}

function trick(ctx: TableContext, t: Obj, label: string): HTMLElement {
  const plays = list(t.plays).map((p, index, all) => {
    const play = obj(p);
    const item = play.card ? card(ctx, cardLook(obj(play.card))) : die(ctx, obj(play.die));
    // The trick's latest play is lit: what just happened.
    const latest = !t.complete && index === all.length - 1;
    return h("div", { class: `play${latest ? " fresh" : ""}` }, item, h("div", { class: "who" }, seatName(ctx, num(play.seat)), latest ? " (just played)" : ""));
  });
  const facts = [
    pill(`trick ${num(t.number)}`),
    t.leadSuit && t.leadSuit !== "SUIT_UNSPECIFIED" ? pill(`lead ${season(t.leadSuit)}`) : null,
    t.trumpSuit && t.trumpSuit !== "SUIT_UNSPECIFIED" ? pill(`trump ${season(t.trumpSuit)}`) : null,
    t.complete ? pill(`won by ${seatName(ctx, num(t.winner))}`, "strong") : null,
  ];
  return zone(label, ...facts, ...plays);
}

function phaseWords(ctx: TableContext): string {
  const v = ctx.view;
  const who = seatName(ctx, num(v.turn));
  const phase = short(v.phase, "PHASE_");
  if (phase === "claim") return ctx.seat === num(v.turn) ? "you won the trick: claim a die from the mat" : `${who} claims a die from the mat`;
  if (phase === "play") return ctx.seat === num(v.turn) ? "your play: a card from your hand or a die from your aid" : `${who} to play`;
  return "the match is over";
}

/** Every finished round's scores, seat by seat, and the running totals. */
function roundScores(ctx: TableContext): HTMLElement | null {
  const players = list(ctx.view.players).map(obj);
  const rounds = Math.max(0, ...players.map((p) => list(p.roundScores).length));
  if (!rounds) return null;
  const heads = ["player", ...Array.from({ length: rounds }, (_, i) => `round ${i + 1}`), "total"];
  return h(
    "div",
    { class: "zone summary", id: "round-summary" },
    h("div", { class: "label" }, "scores by round"),
    h(
      "table",
      {},
      h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, players.map((p) => h("tr", {}, h("th", { scope: "row" }, seatName(ctx, num(p.seat))), list(p.roundScores).map((s) => h("td", {}, String(num(s)))), h("td", {}, String(num(p.total)))))),
    ),
  );
}

// The view last drawn: the fallback list of moves names cards and dice by their faces.
let shown: Obj = {};

function describeMove(move: Obj): string | undefined {
  const [kind, body] = Object.entries(move)[0] ?? ["", null];
  const id = num(obj(body).card ?? obj(body).die);
  const dice = [...list(shown.mat), ...list(shown.players).flatMap((p) => list(obj(p).aid))].map(obj);
  const face = (die: number) => season(dice.find((d) => num(d.id) === die)?.face).replace(/^x$/, "X");
  if (kind === "playCard") return `play ${moriCardWords(list(shown.hand).map(obj).find((c) => num(c.id) === id) ?? {})}`;
  if (kind === "playDie") return `play the ${face(id)} die from your aid`;
  if (kind === "claimDie") return `claim the ${face(id)} die from the mat`;
  return undefined;
}

export const mori: GameRenderer = {
  describeEvent: (kind, body, names) => describeMoriEvent(kind, body, names),
  describeMove,
  draw(ctx) {
    const v = ctx.view;
    shown = v;
    const hand = list(v.hand).map((c) => card(ctx, cardLook(obj(c), true), findMove(ctx, "playCard", (f) => num(f.card) === num(obj(c).id))));
    const players = list(v.players).map((p) => {
      const info = obj(p);
      return h(
        "div",
        { class: "player" },
        h("strong", {}, seatName(ctx, num(info.seat))),
        pill(`${num(info.handSize)} cards`),
        pill(`${num(info.tricksWon)} tricks`),
        pill(`pile ${num(info.pileSize)}`),
        pill(`total ${num(info.total)}`),
        list(info.aid).length ? h("span", {}, " aid: ", list(info.aid).map((d) => die(ctx, obj(d), "playDie"))) : null,
      );
    });
    return h(
      "div",
      { class: "mori" },
      h("div", { class: "row" }, pill(`round ${num(v.round)} of ${num(v.rounds)}`), pill(phaseWords(ctx)), pill(`tricks played: ${num(v.tricksPlayed)}`)),
      zone("dice mat", ...list(v.mat).map((d) => die(ctx, obj(d), "claimDie"))),
      v.trick ? trick(ctx, obj(v.trick), "this trick") : null,
      v.lastTrick && list(obj(v.lastTrick).plays).length ? trick(ctx, obj(v.lastTrick), "last trick") : null,
      h("div", { class: "zone" }, h("div", { class: "label" }, "players"), ...players),
      roundScores(ctx),
      ctx.seat !== null ? handZone("your hand", ...hand) : null,
    );
  },
};
