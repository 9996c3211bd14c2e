// Mori's events as sentences: cards and dice by their faces, tricks by why they were won.
import { list, num, obj, short, text, type Obj } from "./parts.js";
import { listWords } from "../words.js";

const REASONS: Record<string, string> = {
  highest_trump_card: "the highest trump card",
  first_trump_die: "the first trump die",
  highest_lead_card: "the highest card of the lead suit",
  first_lead_die: "the first die of the lead suit",
  all_x_leader: "only X were played: the leader takes it",
};

export function moriCardWords(c: Obj): string {
  const suit = short(c.suit, "SUIT_");
  return suit === "x" ? "an X card" : `the ${suit} ${text(c.rank)}`;
}

function dieWords(d: Obj): string {
  const face = short(d.face, "SUIT_");
  return face === "x" ? "an X die" : `a ${face} die`;
}

export function describeMoriEvent(kind: string, body: Obj, names: string[]): string | undefined {
  const name = (seat: unknown) => names[num(seat as number)] ?? "a player";
  const who = name(body.seat);
  switch (kind) {
    case "roundStarted":
      return `Round ${num(body.round)}: ${name(body.startPlayer)} leads; ${list(body.mat).length} dice rolled onto the mat.`;
    case "handDealt":
      return `Your hand of ${list(body.hand).length} cards for round ${num(body.round)}.`;
    case "cardPlayed":
      return `${who} played ${moriCardWords(obj(body.card))}.`;
    case "diePlayed":
      return `${who} played ${dieWords(obj(body.die))}.`;
    case "trickWon":
      return `${name(body.winner)} won trick ${num(body.number)} with ${REASONS[short(body.reason, "WIN_REASON_")] ?? "the best play"}.`;
    case "dieClaimed":
      return `${who} claimed ${dieWords(obj(body.die))}; ${num(body.diceLeft)} left on the mat.`;
    case "roundEnded": {
      const results = list(body.results).map(obj).map((r) => {
        const bonus = num(r.xBonus);
        return `${name(r.seat)} ${num(r.score)} (${num(r.vp)} up, ${num(r.np)} down, ${num(r.xCount)} X${bonus ? ` ${bonus > 0 ? "+" : "−"}${Math.abs(bonus)}` : ""}; total ${num(r.total)})`;
      });
      return `Round ${num(body.round)} scored: ${listWords(results)}.`;
    }
  }
  return undefined;
}
