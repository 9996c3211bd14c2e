import { happyMochi } from "./happymochi.js";
import { momiji } from "./momiji.js";
import { more } from "./more.js";
import { mori } from "./mori.js";
import { morisi } from "./morisi.js";
import type { GameRenderer } from "./types.js";

// Each game's own table; a game missing here gets the generic one.
export const RENDERERS: Record<string, GameRenderer> = { happy_mochi: happyMochi, mori, more, morisi, momiji };
