import type { GameRenderer } from "./types.js";

export const RENDERERS: Record<string, GameRenderer> = {};
