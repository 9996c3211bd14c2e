// A match: its table as the caller's seat (or a spectator) sees it, kept live by WatchMatch.
import { toJson, type Message } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { auth, describeError, GAMES, gameClient, isCode } from "./api.js";
import { h } from "./dom.js";
import { RENDERERS } from "./games/index.js";
import type { LegalMove, TableContext } from "./games/types.js";
import { describe, renderGenericView, type Json } from "./render.js";
import { heldSeat, holdSeat, playerName, releaseSeat, type HeldSeat } from "./seats.js";
import { MatchStatus, type Match } from "./gen/mogames/common/v1/common_pb.js";

const HISTORY_LIMIT = 300;
const RECONNECT_MS = 1000;
const WAITING_POLL_MS = 1500;
// Several events of one move arrive together: one refresh for all of them.
const REFRESH_DEBOUNCE_MS = 15;

interface LogLine {
  version: number;
  text: string;
}

export class Table {
  private match?: Match;
  private view?: { [key: string]: Json };
  private moves: { move: Message; json: { [key: string]: Json } }[] = [];
  private promptMoves?: Message[];
  private log: LogLine[] = [];
  private error = "";
  private busy = false;
  private cursor?: { version: bigint; seq: number };
  private refreshTimer?: number;
  private refreshing = false;
  private refreshAgain = false;
  private stopped = false;
  private watch = new AbortController();
  private seat?: HeldSeat;
  private readonly client;
  private readonly descriptors;

  constructor(
    private readonly root: HTMLElement,
    private readonly game: string,
    private readonly matchId: string,
  ) {
    this.client = gameClient(game);
    this.descriptors = GAMES[game];
    this.seat = heldSeat(matchId);
  }

  async start(): Promise<void> {
    await this.refresh();
    void this.watchLoop();
    // Joins are version-0 events that a watch from an older server does not stream:
    // while seats are free, look at the match now and then as well.
    window.setInterval(() => {
      if (this.match?.status === MatchStatus.WAITING_FOR_PLAYERS) void this.refresh();
    }, WAITING_POLL_MS);
  }

  stop(): void {
    this.stopped = true;
    this.watch.abort();
  }

  private get token(): string | undefined {
    return this.seat?.token;
  }

  private async watchLoop(): Promise<void> {
    while (!this.stopped) {
      const request: Record<string, unknown> = { matchId: this.matchId };
      if (this.cursor) {
        request.afterVersion = this.cursor.version;
        request.afterSeq = this.cursor.seq;
      }
      try {
        for await (const event of this.client.watchMatch(request, { ...auth(this.token), signal: this.watch.signal })) {
          this.onEvent(event as Message & { version: bigint; seq: number; event: { case?: string; value?: unknown } });
        }
        await this.refresh();
        if (this.match && this.match.status !== MatchStatus.WAITING_FOR_PLAYERS && this.match.status !== MatchStatus.IN_PROGRESS) return;
      } catch (error) {
        if (this.stopped) return;
        if (isCode(error, Code.NotFound) || isCode(error, Code.PermissionDenied)) {
          this.error = describeError(error).message;
          this.render();
          return;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
    }
  }

  private onEvent(event: Message & { version: bigint; seq: number; event: { case?: string; value?: unknown } }): void {
    const kind = event.event.case;
    if (kind === "heartbeat") return;
    if (kind === "prompt") {
      const prompt = event.event.value as { seat: number; moves: Message[] };
      if (this.seat && prompt.seat === this.seat.seat) this.promptMoves = prompt.moves;
    } else {
      this.cursor = { version: event.version, seq: event.seq };
      const json = toJson(this.descriptors.event, event) as { [key: string]: Json };
      delete json.version;
      delete json.seq;
      this.log.push({ version: Number(event.version), text: describe(json) });
      if (this.log.length > HISTORY_LIMIT) this.log.splice(0, this.log.length - HISTORY_LIMIT);
      this.promptMoves = undefined;
    }
    this.scheduleRefresh();
  }

  private scheduleRefresh(): void {
    window.clearTimeout(this.refreshTimer);
    this.refreshTimer = window.setTimeout(() => void this.refresh(), REFRESH_DEBOUNCE_MS);
  }

  /** Re-read the match, the view and the legal moves; calls that overlap run once more after. */
  async refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = true;
    try {
      do {
        this.refreshAgain = false;
        await this.read();
      } while (this.refreshAgain);
    } finally {
      this.refreshing = false;
    }
  }

  private async read(): Promise<void> {
    // The three reads are independent: ask for them at once.
    const [match, view, legal] = await Promise.allSettled([
      this.client.getMatch({ matchId: this.matchId }) as Promise<Match>,
      this.client.getView({ matchId: this.matchId }, auth(this.token)) as Promise<Message>,
      this.seat && !this.promptMoves
        ? (this.client.listLegalMoves({ matchId: this.matchId }, auth(this.token)) as Promise<{ moves: Message[] }>)
        : Promise.resolve(undefined),
    ]);
    if (match.status === "rejected") {
      this.error = describeError(match.reason).message;
      this.render();
      return;
    }
    this.match = match.value;
    if (view.status === "fulfilled") {
      this.view = toJson(this.descriptors.view, view.value, { alwaysEmitImplicit: true }) as { [key: string]: Json };
    } else {
      this.view = undefined;
      if (this.seat && isCode(view.reason, Code.Unauthenticated)) await this.rejoin();
    }
    const mine = this.seat && this.match.status === MatchStatus.IN_PROGRESS && this.match.activeSeats.includes(this.seat.seat);
    const moves = !mine ? [] : (this.promptMoves ?? (legal.status === "fulfilled" ? legal.value?.moves : undefined) ?? []);
    this.moves = moves.map((move) => ({ move, json: toJson(this.descriptors.move, move) as { [key: string]: Json } }));
    this.render();
  }

  private async rejoin(): Promise<void> {
    const seat = this.seat;
    if (!seat?.rejoinKey) return;
    try {
      const joined = await this.client.rejoinMatch({ matchId: this.matchId, rejoinKey: seat.rejoinKey });
      this.seat = { ...seat, token: joined.token, rejoinKey: joined.rejoinKey || seat.rejoinKey };
      holdSeat(this.seat);
    } catch {
      // Rejoining is not possible (the server does not offer it yet, or the seat is gone).
    }
  }

  private async play(index: number): Promise<void> {
    if (this.busy) return;
    const chosen = this.moves[index];
    if (!chosen) return;
    this.busy = true;
    this.error = "";
    this.render();
    try {
      await this.client.submitMove(
        { matchId: this.matchId, move: chosen.move, requestId: crypto.randomUUID() },
        auth(this.token),
      );
      this.promptMoves = undefined;
    } catch (error) {
      const refused = describeError(error);
      this.error = `Refused${refused.reason ? ` (${refused.reason})` : ""}: ${refused.message}`;
    }
    this.busy = false;
    await this.refresh();
  }

  private async join(): Promise<void> {
    const name = playerName() || "player";
    try {
      const joined = await this.client.joinMatch({ matchId: this.matchId, playerName: name, requestId: crypto.randomUUID() });
      this.seat = { game: this.game, matchId: this.matchId, seat: joined.seat, token: joined.token, rejoinKey: joined.rejoinKey, name };
      holdSeat(this.seat);
    } catch (error) {
      this.error = describeError(error).message;
    }
    this.watch.abort();
    this.watch = new AbortController();
    this.cursor = undefined;
    this.log = [];
    await this.refresh();
    void this.watchLoop();
  }

  private async addBots(): Promise<void> {
    const match = this.match;
    if (!match) return;
    for (const seat of match.seats.filter((s) => !s.taken)) {
      try {
        await this.client.addBot({ matchId: this.matchId, seat: seat.seat });
      } catch (error) {
        const refused = describeError(error);
        this.error = refused.code === "Unimplemented" ? "This server does not seat bots yet." : refused.message;
        break;
      }
    }
    await this.refresh();
  }

  private leave(): void {
    releaseSeat(this.matchId);
    window.location.href = "/";
  }

  render(): void {
    const match = this.match;
    if (!match) {
      this.root.replaceChildren(h("p", { class: "error", id: "error" }, this.error || "Loading…"));
      return;
    }
    const status = MatchStatus[match.status] ?? String(match.status);
    const link = `${window.location.origin}/?game=${this.game}&match=${this.matchId}`;
    const names = match.seats.map((s) => s.playerName || (s.bot ? `bot ${s.seat}` : `seat ${s.seat}`));
    const freeSeats = match.seats.some((s) => !s.taken);
    const ctx: TableContext = {
      view: this.view ?? {},
      moves: this.moves.map((m, index) => ({ json: m.json, index })),
      seat: this.seat?.seat ?? null,
      names,
      moveButton: (move: LegalMove, content, className = "") =>
        h(
          "button",
          {
            class: `move ${className}`,
            "data-testid": "move",
            "data-move": JSON.stringify(move.json),
            disabled: this.busy,
            title: describe(move.json),
            onclick: () => void this.play(move.index),
          },
          ...content,
        ),
    };
    const renderer = RENDERERS[this.game];
    const drawn = this.view ? (renderer ? renderer.draw(ctx) : renderGenericView(this.view)) : h("p", { class: "muted" }, "The table shows once the match starts.");
    const title = GAMES[this.game] ? this.game.replace("_", " ") : this.game;
    const you = this.seat ? `You are seat ${this.seat.seat} (${names[this.seat.seat]})` : "Spectating: you see what every player sees, no hidden cards";
    const finished = match.status === MatchStatus.FINISHED;
    this.root.replaceChildren(
      h(
        "section",
        { class: "table", "data-game": this.game, "data-status": status, "data-version": String(match.version) },
        h(
          "div",
          { class: "bar" },
          h("h1", {}, title),
          h("span", { class: `status ${status.toLowerCase()}`, id: "status" }, status.replaceAll("_", " ").toLowerCase()),
          h("span", { id: "you", "data-seat": this.seat?.seat ?? "" }, you),
          h("span", { class: "link" }, "Join link: ", h("input", { readonly: true, value: link, id: "join-link", onclick: (e: Event) => (e.target as HTMLInputElement).select() })),
          !this.seat && match.status === MatchStatus.WAITING_FOR_PLAYERS && freeSeats
            ? h("button", { id: "join", onclick: () => void this.join() }, "Take a seat")
            : null,
          freeSeats && match.status === MatchStatus.WAITING_FOR_PLAYERS ? h("button", { id: "add-bots", onclick: () => void this.addBots() }, "Fill empty seats with bots") : null,
          this.seat ? h("button", { class: "quiet", onclick: () => this.leave() }, "Forget my seat") : null,
        ),
        this.error ? h("p", { class: "error", id: "error", role: "alert" }, this.error) : null,
        h(
          "ol",
          { class: "seats", id: "seats" },
          match.seats.map((s) =>
            h(
              "li",
              {
                class: `seat ${match.activeSeats.includes(s.seat) ? "active" : ""} ${this.seat?.seat === s.seat ? "mine" : ""}`,
                "data-seat": s.seat,
                "data-score": String(match.scores[s.seat] ?? ""),
              },
              h("span", { class: "name" }, names[s.seat], s.bot ? " (bot)" : "", s.taken ? "" : " (free)"),
              h("span", { class: "score" }, match.scores.length ? String(match.scores[s.seat]) : ""),
              match.activeSeats.includes(s.seat) ? h("span", { class: "turn" }, "to play") : null,
              finished && match.winners.includes(s.seat) ? h("span", { class: "winner" }, "winner") : null,
            ),
          ),
        ),
        finished
          ? h(
              "div",
              { class: "final", id: "final" },
              h("h2", {}, "Final scores"),
              h("p", {}, match.seats.map((s) => `${names[s.seat]}: ${match.scores[s.seat]}`).join(" · ")),
            )
          : null,
        h("div", { class: "board", id: "board" }, drawn),
        this.seat && match.status === MatchStatus.IN_PROGRESS
          ? h(
              "div",
              { class: "moves", id: "moves" },
              h("h2", {}, this.moves.length ? "Your legal moves" : "Waiting for the other players"),
              this.moves.map((m, index) => ctx.moveButton({ json: m.json, index }, [renderer?.describeMove?.(m.json) ?? describe(m.json)])),
            )
          : null,
        h(
          "div",
          { class: "log", id: "log" },
          h("h2", {}, "Events"),
          h("ol", {}, this.log.slice(-60).reverse().map((line) => h("li", {}, h("span", { class: "v" }, `v${line.version}`), " ", line.text))),
        ),
      ),
    );
  }
}
