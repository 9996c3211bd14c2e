// More's events as sentences: cards by their faces, melds by their cards, sides by names.
import { listWords } from "../words.js";
import { list, num, obj, short, text, type Obj } from "./parts.js";

const RANK_WORDS: Record<number, string> = { 1: "ace", 11: "jack", 12: "queen", 13: "king" };
const REFILLS: Record<string, string> = {
  both_more_piles: "both More piles, shuffled together,",
  pair_more_pile: "the Pair's More pile",
  solo_more_pile: "the Solo's More pile",
};

/** A card's face in words, as a person says it: "7 of hearts", "joker". */
export function cardWords(c: Obj): string {
  if (c.joker) return "joker";
  return `${RANK_WORDS[num(c.rank)] ?? text(c.rank)} of ${short(c.suit, "SUIT_")}`;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function describeMoreEvent(kind: string, body: Obj, names: string[]): string | undefined {
  const name = (seat: unknown) => names[num(seat as number)] ?? "a player";
  const who = name(body.seat);
  const cards = (items: unknown) => listWords(list(items as Obj[]).map((c) => cardWords(obj(c))));
  switch (kind) {
    case "roundStarted":
      return `Round ${num(body.round)}: ${name(body.dealer)} deals${body.bidding ? "; sealed bids for the Solo first" : ""}.`;
    case "bidPlaced":
      return `${who} placed a sealed bid.`;
    case "bidsRevealed":
      return `Bids: ${listWords(list(body.bids).map((b, seat) => `${name(seat)} ${num(b)}`))}. ${name(body.solo)} is the Solo and pays ${num(body.payment)} to each.`;
    case "rolesAssigned": {
      const pair = list(body.roles).flatMap((r, seat) => (short(r, "ROLE_") === "pair" ? [name(seat)] : []));
      return `${name(body.solo)} plays Solo against ${listWords(pair)}; ${name(body.firstPlayer)} plays first.`;
    }
    case "dealt":
      return `Dealt ${plural(num(list(body.handSizes)[0]), "card")} each; the ${cardWords(obj(body.discard))} starts the discard pile.`;
    case "handDealt":
      return `Your hand: ${plural(list(body.cards).length, "card")}.`;
    case "cardDrawn":
      return `${who} drew a card.`;
    case "drewCard":
      return `You drew the ${cardWords(obj(body.card))}.`;
    case "pileTaken":
      return `${who} took the discard pile (${plural(list(body.cards).length, "card")}).`;
    case "meldLaid":
      return `${who} laid a meld: ${cards(obj(body.meld).cards)}.`;
    case "cardAdded":
      return `${who} added the ${cardWords(obj(body.card))} at the ${body.lowEnd ? "low" : "high"} end of a meld.`;
    case "tookBack":
      return `${who} took back this turn's melds (${plural(list(body.cards).length, "card")})${body.pileReturned ? " and gave the pile back" : ""}.`;
    case "morePileTaken":
      return `${who} took the ${short(body.side, "ROLE_") === "solo" ? "Solo" : "Pair"}'s More pile (${plural(num(body.count), "card")}).`;
    case "morePileCards":
      return `The More pile's ${plural(list(body.cards).length, "card")} are in your hand.`;
    case "discarded":
      return `${who} discarded the ${cardWords(obj(body.card))}${body.wentOut ? " and went out" : ""}.`;
    case "drawPileRefilled":
      return `The draw pile ran out: ${REFILLS[short(body.source, "REFILL_")] ?? "a More pile"} became the draw pile (${plural(num(body.size), "card")}).`;
    case "roundEnded": {
      const result = obj(body.result);
      const out = num(result.wentOut);
      const ended = short(result.end, "ROUND_END_") === "went_out" && out >= 0 ? `${name(out)} went out` : "the cards ran out";
      const scores = list(result.seats).map((s, seat) => `${name(seat)} ${num(obj(s).total)}`);
      return `Round ${num(result.round)} is over: ${ended}. Round scores: ${listWords(scores)}.`;
    }
  }
  return undefined;
}
