// The lobby: the games this server offers, their options, creating and joining matches.
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { describeError, GAMES, gameClient, lobby } from "./api.js";
import { h, words } from "./dom.js";
import type { GameInfo, GameOption } from "./gen/mogames/lobby/v1/lobby_pb.js";
import { holdSeat, playerName, setPlayerName } from "./seats.js";

function optionInput(game: string, option: GameOption): HTMLElement {
  const id = `${game}-${option.name}`;
  const label = h("label", { for: id, title: option.description }, words(option.name));
  if (option.type === "bool") {
    return h("div", { class: "option" }, h("input", { type: "checkbox", id, "data-option": option.name, checked: option.defaultValue === "true" }), label);
  }
  if (option.type.endsWith("[]")) {
    return h("div", { class: "option" }, label, h("textarea", { id, "data-option": option.name, "data-json": true, placeholder: "JSON list (optional)" }));
  }
  const numeric = option.type.includes("int");
  return h("div", { class: "option" }, label, h("input", { id, type: numeric ? "number" : "text", min: numeric ? 0 : undefined, "data-option": option.name, value: option.defaultValue }));
}

function readOptions(form: HTMLElement, info: GameInfo): JsonObject {
  const options: JsonObject = {};
  for (const option of info.options) {
    const input = form.querySelector<HTMLInputElement>(`[data-option="${option.name}"]`);
    if (!input) continue;
    if (option.type === "bool") options[option.name] = input.checked;
    else if (option.type.endsWith("[]")) {
      if (input.value.trim()) options[option.name] = parseList(input.value, option.name);
    } else if (option.type.includes("int")) options[option.name] = Number(input.value || 0);
    else options[option.name] = input.value;
  }
  return options;
}

// Bot levels the server offers (docs/bots.md), weakest first.
const BOT_LEVELS: [string, string][] = [
  ["random", "random: any legal move"],
  ["policy", "policy: the cautious default move"],
  ["medium", "medium: thinks briefly"],
  ["hard", "hard: thinks a quarter second"],
];

class FormProblem extends Error {}

function parseList(value: string, name: string): JsonObject[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw new FormProblem(`“${words(name)}” is not valid JSON (${(error as Error).message}). Leave it empty for the standard set.`);
  }
  if (!Array.isArray(parsed)) throw new FormProblem(`“${words(name)}” must be a JSON list, [ … ].`);
  return parsed as JsonObject[];
}

async function create(info: GameInfo, form: HTMLElement, report: HTMLElement): Promise<void> {
  const players = Number(form.querySelector<HTMLInputElement>("[name=players]")!.value);
  const bots = Number(form.querySelector<HTMLInputElement>("[name=bots]")!.value || 0);
  const botLevel = form.querySelector<HTMLSelectElement>("[name=bot_level]")!.value;
  const seed = form.querySelector<HTMLInputElement>("[name=seed]")!.value.trim();
  const name = playerName() || "player";
  let options: JsonObject;
  try {
    options = readOptions(form, info);
  } catch (error) {
    if (!(error instanceof FormProblem)) throw error;
    report.textContent = error.message;
    return;
  }
  const request: JsonObject = {
    players,
    options,
    table: { botSeats: Array.from({ length: Math.min(bots, players - 1) }, (_, i) => players - 1 - i), botLevel },
  };
  if (seed) request.seed = seed;
  const client = gameClient(info.name);
  try {
    const match = await client.createMatch(fromJson(GAMES[info.name].create, request));
    const joined = await client.joinMatch({ matchId: match.matchId, playerName: name, requestId: crypto.randomUUID() });
    holdSeat({ game: info.name, matchId: match.matchId, seat: joined.seat, token: joined.token, rejoinKey: joined.rejoinKey, name });
    window.location.href = `/?game=${info.name}&match=${match.matchId}`;
  } catch (error) {
    const refused = describeError(error);
    report.textContent = `Could not create the match${refused.reason ? ` (${refused.reason})` : ""}: ${refused.message}`;
  }
}

function gameCard(info: GameInfo): HTMLElement {
  const report = h("p", { class: "error", role: "alert" });
  const form = h(
    "form",
    { class: "game", "data-game": info.name },
    h("h2", {}, info.title || info.name),
    h("p", { class: "muted" }, `${info.minPlayers}–${info.maxPlayers} players`),
    h("div", { class: "option" }, h("label", { for: `${info.name}-players` }, "players"), h("input", { type: "number", id: `${info.name}-players`, name: "players", min: info.minPlayers, max: info.maxPlayers, value: info.minPlayers })),
    h("div", { class: "option" }, h("label", { for: `${info.name}-bots`, title: "Server bots take the last seats" }, "bots"), h("input", { type: "number", id: `${info.name}-bots`, name: "bots", min: 0, max: info.maxPlayers - 1, value: 0 })),
    h(
      "div",
      { class: "option" },
      h("label", { for: `${info.name}-bot-level`, title: "How well the server bots play" }, "bot level"),
      h(
        "select",
        { name: "bot_level", id: `${info.name}-bot-level` },
        BOT_LEVELS.map(([level, words]) => h("option", { value: level, selected: level === "medium" }, words)),
      ),
    ),
    h("div", { class: "option" }, h("label", { for: `${info.name}-seed`, title: "Same seed, same deal (optional)" }, "seed"), h("input", { type: "text", id: `${info.name}-seed`, name: "seed", inputmode: "numeric", placeholder: "random" })),
    info.options.map((o) => optionInput(info.name, o)),
    h("button", { type: "submit", class: "create" }, "Create match"),
    report,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void create(info, form, report);
  });
  return form;
}

export async function showLobby(root: HTMLElement): Promise<void> {
  const name = h("input", { id: "player-name", value: playerName(), placeholder: "your name", oninput: (e: Event) => setPlayerName((e.target as HTMLInputElement).value) });
  const joinId = h("input", { id: "join-match", placeholder: "match id", "aria-label": "match id" }) as HTMLInputElement;
  const joinGame = h("select", { id: "join-game", "aria-label": "game" }, Object.keys(GAMES).map((g) => h("option", { value: g }, g))) as HTMLSelectElement;
  const join = h(
    "form",
    { class: "join" },
    h("h2", {}, "Join or watch a match"),
    joinGame,
    joinId,
    h("button", { type: "submit" }, "Open"),
  );
  join.addEventListener("submit", (event) => {
    event.preventDefault();
    window.location.href = `/?game=${joinGame.value}&match=${joinId.value.trim()}`;
  });
  root.replaceChildren(h("section", { class: "lobby" }, h("div", { class: "who" }, h("label", { for: "player-name" }, "Your name "), name), join, h("div", { class: "games", id: "games" }, "Loading games…")));
  try {
    const listed = await lobby.listGames({});
    root.querySelector("#games")!.replaceChildren(...listed.games.filter((g) => GAMES[g.name]).map(gameCard));
  } catch (error) {
    root.querySelector("#games")!.replaceChildren(h("p", { class: "error" }, `The lobby is unavailable: ${describeError(error).message}`));
  }
}
