// One Connect transport to the page's own origin, and each game's generated descriptors.
import type { DescMessage, DescService } from "@bufbuild/protobuf";
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import { Lobby } from "./gen/mogames/lobby/v1/lobby_pb.js";
import * as happymochi from "./gen/mogames/happymochi/v1/happymochi_pb.js";
import * as momiji from "./gen/mogames/momiji/v1/momiji_pb.js";
import * as more from "./gen/mogames/more/v1/more_pb.js";
import * as mori from "./gen/mogames/mori/v1/mori_pb.js";
import * as morisi from "./gen/mogames/morisi/v1/morisi_pb.js";

// Binary protobuf: smaller and cheaper to decode than JSON on both sides (JSON works too).
export const transport = createConnectTransport({ baseUrl: window.location.origin, useBinaryFormat: true });
export const lobby = createClient(Lobby, transport);

export interface GameDescriptors {
  service: DescService;
  view: DescMessage;
  move: DescMessage;
  event: DescMessage;
  create: DescMessage;
  playRequest: DescMessage;
  playResponse: DescMessage;
}

// Every game service has the same RPCs; the messages differ per game.
export const GAMES: Record<string, GameDescriptors> = {
  happy_mochi: {
    service: happymochi.HappyMochi,
    view: happymochi.ViewSchema,
    move: happymochi.MoveSchema,
    event: happymochi.MatchEventSchema,
    create: happymochi.CreateMatchRequestSchema,
    playRequest: happymochi.PlayMatchRequestSchema,
    playResponse: happymochi.PlayMatchResponseSchema,
  },
  mori: {
    service: mori.Mori,
    view: mori.ViewSchema,
    move: mori.MoveSchema,
    event: mori.MatchEventSchema,
    create: mori.CreateMatchRequestSchema,
    playRequest: mori.PlayMatchRequestSchema,
    playResponse: mori.PlayMatchResponseSchema,
  },
  more: {
    service: more.More,
    view: more.ViewSchema,
    move: more.MoveSchema,
    event: more.MatchEventSchema,
    create: more.CreateMatchRequestSchema,
    playRequest: more.PlayMatchRequestSchema,
    playResponse: more.PlayMatchResponseSchema,
  },
  morisi: {
    service: morisi.Morisi,
    view: morisi.ViewSchema,
    move: morisi.MoveSchema,
    event: morisi.MatchEventSchema,
    create: morisi.CreateMatchRequestSchema,
    playRequest: morisi.PlayMatchRequestSchema,
    playResponse: morisi.PlayMatchResponseSchema,
  },
  momiji: {
    service: momiji.Momiji,
    view: momiji.ViewSchema,
    move: momiji.MoveSchema,
    event: momiji.MatchEventSchema,
    create: momiji.CreateMatchRequestSchema,
    playRequest: momiji.PlayMatchRequestSchema,
    playResponse: momiji.PlayMatchResponseSchema,
  },
};

// The generated clients differ only in message types; the page treats them alike.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyMethod = (request: any, options?: any) => any;
export type GameClient = Record<string, AnyMethod>;

const clients: Record<string, GameClient> = {};
export function gameClient(game: string): GameClient {
  const descriptors = GAMES[game];
  if (!descriptors) throw new Error(`unknown game ${game}`);
  clients[game] ??= createClient(descriptors.service, transport) as unknown as GameClient;
  return clients[game];
}

export function auth(token: string | undefined): { headers?: Record<string, string> } {
  return token ? { headers: { authorization: `Bearer ${token}` } } : {};
}

/** What the server said: the rule it named (ErrorInfo.reason) and its message. */
export function describeError(error: unknown): { code: string; reason: string; message: string } {
  const err = ConnectError.from(error);
  const info = err.findDetails(ErrorInfoSchema)[0];
  return { code: Code[err.code] ?? String(err.code), reason: info?.reason ?? "", message: err.rawMessage };
}

export function isCode(error: unknown, code: Code): boolean {
  return ConnectError.from(error).code === code;
}
