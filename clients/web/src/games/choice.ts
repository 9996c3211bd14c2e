// A table's own choices in progress (cards picked for a meld, a stick's first tile): kept
// between draws, redrawn in place, never sent to the server until they make a legal move.
import type { TableContext } from "./types.js";
import "./choice.css";

export class LocalChoice {
  private element?: HTMLElement;
  private ctx?: TableContext;

  constructor(private readonly drawTable: (ctx: TableContext) => HTMLElement) {}

  /** Draws the table for the page and remembers it, to redraw when a choice changes. */
  draw(ctx: TableContext): HTMLElement {
    this.ctx = ctx;
    this.element = this.drawTable(ctx);
    return this.element;
  }

  /** Draws the table again in place after a local choice: no request, focus and the hand's
   * sideways scroll kept (a keyboard or a phone user stays where they were). */
  redraw(): void {
    const old = this.element;
    if (!this.ctx || !old || !old.isConnected) return;
    const focused = (document.activeElement as HTMLElement | null)?.dataset?.focus;
    const scrolled = [...old.querySelectorAll<HTMLElement>("[data-scroll]")].map((e) => [e.dataset.scroll, e.scrollLeft] as const);
    const fresh = this.drawTable(this.ctx);
    old.replaceWith(fresh);
    this.element = fresh;
    for (const [key, left] of scrolled) {
      const again = fresh.querySelector<HTMLElement>(`[data-scroll="${key}"]`);
      if (again) again.scrollLeft = left;
    }
    if (focused) fresh.querySelector<HTMLElement>(`[data-focus="${CSS.escape(focused)}"]`)?.focus();
  }
}

/** A button that changes a local choice only (selecting, asking to confirm): it sends nothing. */
export function choiceButton(
  content: (Node | string)[],
  attrs: { className?: string; pressed?: boolean; label?: string; focus: string; onPick: () => void },
): HTMLButtonElement {
  const button = document.createElement("button");
  button.type = "button";
  button.className = `pick ${attrs.className ?? ""}`.trim();
  button.dataset.focus = attrs.focus;
  button.dataset.testid = "pick";
  if (attrs.pressed !== undefined) button.setAttribute("aria-pressed", String(attrs.pressed));
  button.append(...content);
  if (attrs.label) said(button, attrs.label);
  button.addEventListener("click", attrs.onPick);
  return button;
}

/** Words for a screen reader after what a piece shows (a card's face says "9♠"): its visible
 * text stays part of its name, as axe-core's label-content-name-mismatch asks. */
export function said<E extends Element>(element: E, words: string): E {
  const span = document.createElement("span");
  span.className = "said";
  span.textContent = ` ${words}`;
  element.append(span);
  return element;
}
