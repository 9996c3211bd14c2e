// Mori: a trick-taking game with seasons as suits, dice on the mat, score piles.
import { h } from "../dom.js";
import type { Json } from "../render.js";
import { card, findMove, list, num, obj, pill, seatName, short, text, zone, type Obj, handZone } from "./parts.js";
import type { GameRenderer, TableContext } from "./types.js";

const SEASON_COLOURS: Record<string, string> = {
  spring: "#3f9b4a",
  summer: "#d9a21b",
  autumn: "#c4532a",
  winter: "#3a72b8",
  x: "#6b4a8f",
};

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
  const content = [face === "x" ? "X" : face.slice(0, 2)];
  const element = move ? ctx.moveButton(move, content, "die") : h("span", { class: "die" }, ...content);
  element.style.setProperty("--suit", SEASON_COLOURS[face] ?? "#888");
  element.title = `die: ${face}`;
  return element;
}

function trick(ctx: TableContext, t: Obj, label: string): HTMLElement {
  const plays = list(t.plays).map((p) => {
    const play = obj(p);
    const item = play.card ? card(ctx, cardLook(obj(play.card))) : die(ctx, obj(play.die));
    return h("div", { class: "play" }, item, h("div", { class: "who" }, seatName(ctx, num(play.seat))));
  });
  const facts = [
    pill(`trick ${num(t.number)}`),
    t.leadSuit && t.leadSuit !== "SUIT_UNSPECIFIED" ? pill(`lead ${season(t.leadSuit)}`) : null,
    t.trumpSuit && t.trumpSuit !== "SUIT_UNSPECIFIED" ? pill(`trump ${season(t.trumpSuit)}`) : null,
    t.complete ? pill(`won by ${seatName(ctx, num(t.winner))}`, "strong") : null,
  ];
  return zone(label, ...facts, ...plays);
}

export const mori: GameRenderer = {
  draw(ctx) {
    const v = ctx.view;
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
        list(info.roundScores).length ? pill(`rounds ${list(info.roundScores).join(" / ")}`) : null,
      );
    });
    return h(
      "div",
      { class: "mori" },
      h("div", { class: "row" }, pill(`round ${num(v.round)} of ${num(v.rounds)}`), pill(short(v.phase, "PHASE_")), pill(`turn: ${seatName(ctx, num(v.turn))}`)),
      zone("dice mat", ...list(v.mat).map((d) => die(ctx, obj(d), "claimDie"))),
      v.trick ? trick(ctx, obj(v.trick), "this trick") : null,
      v.lastTrick && list(obj(v.lastTrick).plays).length ? trick(ctx, obj(v.lastTrick), "last trick") : null,
      h("div", { class: "zone" }, h("div", { class: "label" }, "players"), ...players),
      ctx.seat !== null ? handZone("your hand", ...hand) : null,
    );
  },
};
