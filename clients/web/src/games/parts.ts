// Pieces the game tables share: cards, dice, zones, and the legal move behind a piece.
import { h } from "../dom.js";
import type { Json } from "../render.js";
import type { LegalMove, TableContext } from "./types.js";
import { enumWords } from "../words.js";

export type Obj = { [key: string]: Json };

export const obj = (value: Json | undefined): Obj => (value && typeof value === "object" && !Array.isArray(value) ? value : {});
export const list = (value: Json | undefined): Json[] => (Array.isArray(value) ? value : []);
export const num = (value: Json | undefined): number => Number(value ?? 0);
export const text = (value: Json | undefined): string => (value === null || value === undefined ? "" : String(value));

/** An enum value without its prefix: SUIT_SPRING -> spring. */
export function short(value: Json | undefined, prefix: string): string {
  const said = text(value);
  return said.startsWith(prefix) ? said.slice(prefix.length).toLowerCase() : enumWords(said);
}

/** The legal move of this kind whose fields match, if the seat has one. */
export function findMove(ctx: TableContext, kind: string, matches: (fields: Obj) => boolean = () => true): LegalMove | undefined {
  return ctx.moves.find((m) => kind in m.json && matches(obj(m.json[kind])));
}

export interface CardLook {
  corner: string;
  middle?: string;
  foot?: string;
  // A CSS colour for the card's border and value.
  colour: string;
  title?: string;
  hidden?: boolean;
  // The caller's private card (its hand): marked for tests and screen readers.
  private?: boolean;
}

/** A card, clickable when a legal move plays it. */
export function card(ctx: TableContext, look: CardLook, move?: LegalMove): HTMLElement {
  const content = [
    h("span", { class: "value" }, look.corner),
    h("span", { class: "effect" }, look.middle ?? ""),
    h("span", { class: "effect" }, look.foot ?? ""),
  ];
  const element = move
    ? ctx.moveButton(move, content, `card${look.hidden ? " back" : ""}`)
    : h("div", { class: `card${look.hidden ? " back" : ""}` }, ...content);
  element.style.setProperty("--suit", look.colour);
  if (look.title) element.title = look.title;
  if (look.private) element.dataset.private = "hand";
  return element;
}

export function backs(count: number): HTMLElement {
  return h("div", { class: "row" }, Array.from({ length: Math.min(count, 12) }, () => h("div", { class: "card back mini" })), count > 12 ? `+${count - 12}` : "");
}

export function zone(label: string, ...children: (Node | string | null)[]): HTMLElement {
  return h("div", { class: "zone" }, h("div", { class: "label" }, label), h("div", { class: "row" }, ...children));
}

/** The seat's hand: on a phone it stays at the bottom of the screen, on one row. */
export function handZone(label: string, ...children: (Node | string | null)[]): HTMLElement {
  const element = zone(label, ...children);
  element.classList.add("hand");
  // It scrolls sideways on a phone: reachable by keyboard even when no card can be played.
  const row = element.querySelector(".row");
  row?.setAttribute("tabindex", "0");
  // A named group: a plain div may not carry a name (axe-core's aria-prohibited-attr).
  row?.setAttribute("role", "group");
  row?.setAttribute("aria-label", label);
  return element;
}

export function pill(content: string, className = ""): HTMLElement {
  return h("span", { class: `pill ${className}` }, content);
}

export function seatName(ctx: TableContext, seat: number): string {
  return ctx.names[seat] ?? `player ${seat + 1}`;
}
