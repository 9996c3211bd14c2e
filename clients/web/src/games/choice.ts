// A table's own choices in progress (cards picked for a meld, a stick's first tile): kept
// between draws, redrawn in place, never sent to the server until they make a legal move.
import type { TableContext } from "./types.js";
import "./choice.css";

// The piece that had the focus, and how far each region that scrolls on its own (a hand's
// row, a side's melds: data-scroll) was scrolled, sideways and down.
interface Kept {
  focused?: string;
  scrolled: (readonly [string | undefined, number, number])[];
}

export class LocalChoice {
  private element?: HTMLElement;
  private ctx?: TableContext;

  constructor(private readonly drawTable: (ctx: TableContext) => HTMLElement) {}

  /** Draws the table for the page and remembers it, to redraw when a choice changes. The
   * page draws it again after every update of the match: the piece that had the focus gets it
   * back, and the scrolled regions keep their place, once the page has put the new table in. */
  draw(ctx: TableContext): HTMLElement {
    const kept = this.keep();
    this.ctx = ctx;
    const fresh = this.drawTable(ctx);
    this.element = fresh;
    if (kept.focused || kept.scrolled.length) queueMicrotask(() => fresh.isConnected && this.restore(fresh, kept));
    return fresh;
  }

  /** Draws the table again in place after a local choice: no request, focus and the scrolled
   * regions kept (a keyboard or a phone user stays where they were), or the focus
   * moved to the piece named ``focus`` (the question a choice asks). */
  redraw(focus?: string): void {
    const old = this.element;
    if (!this.ctx || !old || !old.isConnected) return;
    const kept = this.keep();
    const fresh = this.drawTable(this.ctx);
    old.replaceWith(fresh);
    this.element = fresh;
    this.restore(fresh, { ...kept, focused: focus ?? kept.focused });
  }

  private keep(): Kept {
    const old = this.element;
    if (!old || !old.isConnected) return { scrolled: [] };
    const active = document.activeElement as HTMLElement | null;
    const focused = active && old.contains(active) ? active.dataset?.focus : undefined;
    const scrolled = [...old.querySelectorAll<HTMLElement>("[data-scroll]")].filter((e) => e.scrollLeft || e.scrollTop).map((e) => [e.dataset.scroll, e.scrollLeft, e.scrollTop] as const);
    return { focused, scrolled };
  }

  private restore(fresh: HTMLElement, kept: Kept): void {
    for (const [key, left, top] of kept.scrolled) {
      const again = fresh.querySelector<HTMLElement>(`[data-scroll="${key}"]`);
      if (again) {
        again.scrollLeft = left;
        again.scrollTop = top;
      }
    }
    if (kept.focused) fresh.querySelector<HTMLElement>(`[data-focus="${CSS.escape(kept.focused)}"]`)?.focus();
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
