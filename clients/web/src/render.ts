// The generic table: any game's view as labelled fields.
import { h, words } from "./dom.js";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A value as nested boxes, for fields no game renderer draws. */
export function renderValue(value: Json): HTMLElement {
  if (Array.isArray(value)) {
    return h("div", { class: "items" }, value.length ? value.map(renderValue) : h("span", { class: "muted" }, "none"));
  }
  if (value !== null && typeof value === "object") {
    return h(
      "div",
      { class: "chip" },
      Object.entries(value).map(([key, inner]) =>
        h("span", { class: "field" }, h("span", { class: "key" }, words(key)), " ", renderValue(inner)),
      ),
    );
  }
  return h("span", { class: "scalar" }, value === null ? "" : String(value));
}

// Fields the platform fills in every view: shown by the table itself, not as game state.
const PLATFORM_FIELDS = new Set(["version", "seat", "activeSeats", "clocks"]);

// What only the caller's seat sees (empty for spectators): marked so that a test, or a
// person, can tell private items apart.
export const PRIVATE_FIELDS = new Set(["hand", "myBlocks", "templeBellCards"]);

function renderField(key: string, value: Json): HTMLElement {
  if (PRIVATE_FIELDS.has(key) && Array.isArray(value)) {
    return h("div", { class: "items private" }, value.map((item) => h("span", { "data-private": "hand" }, renderValue(item))));
  }
  return renderValue(value);
}

export function renderGenericView(view: { [key: string]: Json }, skip: Set<string> = new Set()): HTMLElement {
  return h(
    "dl",
    { class: "view" },
    Object.entries(view)
      .filter(([key]) => !PLATFORM_FIELDS.has(key) && !skip.has(key))
      .flatMap(([key, value]) => [h("dt", {}, words(key)), h("dd", {}, renderField(key, value))]),
  );
}
