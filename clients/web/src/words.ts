// Words for what the wire says: enum values without their type's prefix, seats as player
// names, and the platform's events as sentences (English catalog).
import type { DescEnum } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { file_mogames_common_v1_common } from "./gen/mogames/common/v1/common_pb.js";
import { file_mogames_happymochi_v1_happymochi } from "./gen/mogames/happymochi/v1/happymochi_pb.js";
import { file_mogames_momiji_v1_momiji } from "./gen/mogames/momiji/v1/momiji_pb.js";
import { file_mogames_more_v1_more } from "./gen/mogames/more/v1/more_pb.js";
import { file_mogames_mori_v1_mori } from "./gen/mogames/mori/v1/mori_pb.js";
import { file_mogames_morisi_v1_morisi } from "./gen/mogames/morisi/v1/morisi_pb.js";
import { words } from "./dom.js";
import type { Json } from "./render.js";

// Every enum value's name ("LEAF_TYPE_OAK") -> its words ("oak"), from the contract itself.
const ENUM_WORDS = new Map<string, string>();
for (const file of [
  file_mogames_common_v1_common,
  file_mogames_happymochi_v1_happymochi,
  file_mogames_momiji_v1_momiji,
  file_mogames_more_v1_more,
  file_mogames_mori_v1_mori,
  file_mogames_morisi_v1_morisi,
]) {
  for (const type of nestedTypes(file)) {
    if (type.kind !== "enum") continue;
    // The style guide's prefix: the enum's name in snake case ("LeafType" -> "leaf_type_").
    const prefix = `${type.name.replace(/([a-z0-9])([A-Z])/g, "$1_$2")}_`.toLowerCase();
    for (const value of (type as DescEnum).values) {
      const name = value.name.toLowerCase();
      ENUM_WORDS.set(value.name, name.slice(name.startsWith(prefix) ? prefix.length : 0).replaceAll("_", " "));
    }
  }
}

const WIRE_NAME = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/;

/** An enum value in words ("COLOR_RED" -> "red"); any other text as it is. */
export function enumWords(value: string): string {
  if (!WIRE_NAME.test(value)) return value;
  return ENUM_WORDS.get(value) ?? value.split("_").slice(1).join(" ").toLowerCase();
}

// Fields that hold a seat number (or several): said as the players' names.
const SEAT_FIELD = /^(seat|seats|[a-z]*Seats?|[a-z]*[wW]inners?|drawer|leader|solo|wentOut)$/;
// Fields a person has no use for: the wire's own numbering of cards and tiles.
const HIDDEN_FIELD = /^(id|ids|[a-z]+Id|[a-z]+Ids)$/;
// Enum values that say "nothing here".
const NOTHING = new Set(["none", "unspecified"]);

export function listWords(items: string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}

export class Speaker {
  constructor(private readonly names: string[]) {}

  player(seat: Json | undefined): string {
    if (seat !== null && typeof seat === "object") return this.fields(seat);
    const n = Number(seat ?? 0);
    // A signed seat field says "nobody" with -1 (nobody went out).
    if (!Number.isInteger(n) || n < 0) return "nobody";
    return this.names[n] ?? `player ${n + 1}`;
  }

  /** Fields of a move or event as words: {"card": 3, "seat": 0} -> "card 3, Ada". */
  fields(value: Json, key = ""): string {
    if (value === null) return "";
    if (SEAT_FIELD.test(key)) {
      const seats = Array.isArray(value) ? value : [value];
      return listWords(seats.map((s) => this.player(s)));
    }
    if (Array.isArray(value)) return value.length ? value.map((v) => this.fields(v)).join(", ") : "none";
    if (typeof value === "string") return enumWords(value);
    if (typeof value !== "object") return String(value);
    return Object.entries(value)
      .filter(([inner, v]) => !HIDDEN_FIELD.test(inner) && v !== false)
      .map(([inner, v]) => {
        if (v === true) return words(inner);
        const said = this.fields(v, inner);
        if (NOTHING.has(said)) return "";
        if (SEAT_FIELD.test(inner)) return said;
        if (typeof v === "object" && v !== null && !Array.isArray(v)) return said ? `${words(inner)} (${said})` : words(inner);
        return said === "" ? "" : `${words(inner)} ${said}`;
      })
      .filter(Boolean)
      .join(", ");
  }

  /** A move: its kind in words, then its fields. */
  move(move: { [key: string]: Json }): string {
    const [kind, body] = Object.entries(move)[0] ?? ["", null];
    const said = this.fields(body ?? null);
    return said ? `${words(kind)}: ${said}` : words(kind);
  }

  /** An event as a sentence (the platform's own), or "who: what happened, details". */
  event(kind: string, body: { [key: string]: Json }): string {
    const who = this.player(body.seat);
    switch (kind) {
      case "playerJoined":
        return `${String(body.playerName || who)} took a seat.`;
      case "playerLeft":
        return body.seatFreed ? `${who} left; the seat is free again.` : `${who} left the table.`;
      case "seatConnection":
        return body.connected ? `${who} is at the table.` : `${who} lost the connection.`;
      case "playerRejoined":
        return `${who} is back.`;
      case "botSeated":
        return `A ${String(body.level || "server")} bot now plays for ${who}.`;
      case "timedOut":
        return `${who} ran out of time; the table moved for them.`;
      case "matchAbandoned":
        return "The match was abandoned.";
      case "matchStarted":
        return `The match started with ${String(body.players)} players.`;
      case "matchEnded": {
        const winners = listWords(list(body.winners).map((s) => this.player(s)));
        return winners ? `The match is over: ${winners} won.` : "The match is over.";
      }
    }
    const rest = { ...body };
    const hasSeat = "seat" in rest;
    delete rest.seat;
    const details = this.fields(rest);
    const what = words(kind);
    const sentence = hasSeat ? `${who}: ${what}` : what.charAt(0).toUpperCase() + what.slice(1);
    return details ? `${sentence} — ${details}.` : `${sentence}.`;
  }
}

function list(value: Json | undefined): Json[] {
  return Array.isArray(value) ? value : [];
}
