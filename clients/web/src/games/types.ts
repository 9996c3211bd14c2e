import type { Json } from "../render.js";

export interface LegalMove {
  json: { [key: string]: Json };
  index: number;
}

export interface TableContext {
  view: { [key: string]: Json };
  moves: LegalMove[];
  // The caller's seat, or null for a spectator.
  seat: number | null;
  names: string[];
  // A clickable element that makes this legal move.
  moveButton(move: LegalMove, content: (Node | string)[], className?: string): HTMLElement;
}

// Draws one game's table; moves it does not draw as things to click are listed as buttons.
export interface GameRenderer {
  draw(ctx: TableContext): HTMLElement;
  // Words for a move or an event, where the generic ones read poorly.
  describeMove?(move: { [key: string]: Json }): string | undefined;
  // An event of the game as a sentence (the players by name, pieces by their faces), where
  // the generic words would name ids; the view is the table as it is now.
  describeEvent?(kind: string, body: { [key: string]: Json }, names: string[], view: { [key: string]: Json }): string | undefined;
}
