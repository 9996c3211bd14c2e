// A match: its table as the caller's seat (or a spectator) sees it, kept live by a stream:
// PlayMatch over a WebSocket for a seat (its moves on it too), WatchMatch for a spectator
// (and for a seat while its WebSocket is refused: its moves are SubmitMove calls then).
import { toJson, type Message } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { auth, describeError, GAMES, gameClient, isCode } from "./api.js";
import { h } from "./dom.js";
import { SeatPlay } from "./play_socket.js";
import { RENDERERS } from "./games/index.js";
import type { LegalMove, TableContext } from "./games/types.js";
import { renderGenericView, type Json } from "./render.js";
import { enumWords, Speaker } from "./words.js";
import { heldSeat, holdSeat, playerName, releaseSeat, type HeldSeat } from "./seats.js";
import { MatchStatus, type Match } from "./gen/mogames/common/v1/common_pb.js";

const HISTORY_LIMIT = 300;
// Failed calls are tried again after these pauses, the last one repeating.
const BACKOFF_MS = [250, 500, 1000, 2000];
// The stream sends the table after every commit and a heartbeat every 2 s when quiet
// (WatchMatchRequest.with_table): this long without a message, the gateway is frozen or
// gone and the page says "reconnecting" (within 5 s of it); after REOPEN_MS the watch is
// opened again. No request is sent while the stream is alive.
const QUIET_MS = 3000;
const REOPEN_MS = 15_000;
const WATCHDOG_TICK_MS = 500;
// A move not answered by then is given up (the buttons come back; the stream tells).
const MOVE_TIMEOUT_MS = 10_000;
// A move the server could not take now (UNAVAILABLE) is sent again, with the same request id.
const MOVE_TRIES = 4;

interface LogLine {
  version: number;
  kind: string;
  // The event's fields, zeros included: seat 0 is a seat, not an absent field.
  body: { [key: string]: Json };
}

type StreamEvent = Message & { version: bigint; seq: number; event: { case?: string; value?: unknown } };

export class Table {
  private match?: Match;
  private view?: { [key: string]: Json };
  private moves: { move: Message; json: { [key: string]: Json } }[] = [];
  // The seat's legal moves from its last prompt, and the version they are for.
  private promptMoves: Message[] = [];
  private promptVersion = -1;
  private log: LogLine[] = [];
  private error = "";
  private busy = false;
  private cursor?: { version: bigint; seq: number };
  private stopped = false;
  private watch = new AbortController();
  // Every watch loop carries the generation it was started in; a newer one ends it, so a
  // page never has two watches open.
  private watchGeneration = 0;
  // The gateway does not answer (a failed watch or a quiet stream): shown as "reconnecting…".
  private reconnecting = false;
  private lastHeard = Date.now();
  private notice = "";
  private errorReason = "";
  private seat?: HeldSeat;
  private readonly client;
  private readonly descriptors;
  private readonly seatPlay;

  constructor(
    private readonly root: HTMLElement,
    private readonly game: string,
    private readonly matchId: string,
  ) {
    this.client = gameClient(game);
    this.descriptors = GAMES[game];
    this.seatPlay = new SeatPlay(this.descriptors.service.typeName, this.descriptors.playRequest, this.descriptors.playResponse);
    this.seat = heldSeat(matchId);
  }

  /** The page draws from one watch alone: the table comes on it first and after each commit. */
  async start(): Promise<void> {
    this.render();
    void this.watchLoop(this.watchGeneration);
    window.setInterval(() => this.watchdog(), WATCHDOG_TICK_MS);
  }

  stop(): void {
    this.stopped = true;
    this.watch.abort();
  }

  private get token(): string | undefined {
    return this.seat?.token;
  }

  /** The running watch is the seat's WebSocket PlayMatch (its moves go on it), not a
   * WatchMatch over Connect (a spectator's, or a seat's while its WebSocket is refused). */
  private overSocket = false;

  private get live(): boolean {
    return !this.match || this.match.status === MatchStatus.WAITING_FOR_PLAYERS || this.match.status === MatchStatus.IN_PROGRESS;
  }

  /** Start watching afresh (after taking a seat, or a stream gone quiet): the running watch ends for good. */
  private restartWatch(): void {
    this.watchGeneration += 1;
    this.watch.abort();
    this.watch = new AbortController();
    this.lastHeard = Date.now();
    void this.watchLoop(this.watchGeneration);
  }

  /** A stream quiet for longer than its heartbeats allow: the gateway is frozen or gone. */
  private watchdog(): void {
    if (this.stopped || !this.live) return;
    const quiet = Date.now() - this.lastHeard;
    if (quiet >= QUIET_MS) this.setReconnecting(true);
    if (quiet >= REOPEN_MS) this.restartWatch();
    // A seat on Connect since its WebSocket was refused: the pause is over, the WebSocket
    // is tried again (from the last event received; refused again, Connect goes on at once).
    else if (this.token && !this.overSocket && !this.seatPlay.refused) this.restartWatch();
  }

  private setReconnecting(on: boolean): void {
    if (this.reconnecting === on) return;
    this.reconnecting = on;
    this.render();
  }

  private async watchLoop(generation: number): Promise<void> {
    let failures = 0;
    while (!this.stopped && generation === this.watchGeneration) {
      const request: Record<string, unknown> = { matchId: this.matchId, withTable: true };
      if (this.cursor) {
        request.afterVersion = this.cursor.version;
        request.afterSeq = this.cursor.seq;
      }
      this.overSocket = Boolean(this.token) && !this.seatPlay.refused;
      const token = this.overSocket ? this.token : undefined;
      try {
        const signal = this.watch.signal;
        const events = token ? this.seatPlay.events(request, token, signal) : this.client.watchMatch(request, { ...auth(this.token), signal });
        for await (const event of events) {
          if (generation !== this.watchGeneration) return;
          this.lastHeard = Date.now();
          failures = 0;
          // Any message, a heartbeat too, says the gateway answers again (a frozen one thawed).
          this.setReconnecting(false);
          this.onEvent(event as StreamEvent);
        }
        if (generation !== this.watchGeneration || !this.live) return;
      } catch (error) {
        if (this.stopped || generation !== this.watchGeneration) return;
        // The WebSocket was refused before it ever opened: the same watch over Connect, now.
        if (token && this.seatPlay.refused) continue;
        if (isCode(error, Code.NotFound) || isCode(error, Code.PermissionDenied)) {
          this.error = describeError(error).message;
          this.render();
          return;
        }
        if (isCode(error, Code.Unauthenticated)) {
          if (describeError(error).reason === "token_revoked" || !(await this.rejoin())) {
            this.seatLost();
            return;
          }
          continue;
        }
        failures += 1;
        // A watch cut more than once in a row: the gateway is away (a single cut is a
        // hand-over, resumed at once).
        if (failures > 1) this.setReconnecting(true);
      }
      await new Promise((resolve) => setTimeout(resolve, backoff(failures)));
    }
  }

  private onEvent(event: StreamEvent): void {
    const kind = event.event.case;
    if (kind === "heartbeat") return;
    if (kind === "table") {
      const update = event.event.value as { view?: Message; match?: Match };
      if (update.match) this.match = update.match;
      if (update.view) this.view = toJson(this.descriptors.view, update.view, { alwaysEmitImplicit: true }) as { [key: string]: Json };
      this.reconnecting = false;
      // A failure to reach the server is over once the stream speaks again; a refusal stays.
      if (!this.errorReason) this.error = "";
      this.showMoves();
      this.render();
      return;
    }
    if (kind === "prompt") {
      const prompt = event.event.value as { seat: number; moves: Message[] };
      if (this.seat && prompt.seat === this.seat.seat) {
        this.promptMoves = prompt.moves;
        this.promptVersion = Number(event.version);
      }
      return;
    }
    this.cursor = { version: event.version, seq: event.seq };
    const json = toJson(this.descriptors.event, event, { alwaysEmitImplicit: true }) as { [key: string]: Json };
    const body = json[kind ?? ""];
    this.log.push({ version: Number(event.version), kind: kind ?? "", body: body && typeof body === "object" && !Array.isArray(body) ? body : {} });
    if (this.log.length > HISTORY_LIMIT) this.log.splice(0, this.log.length - HISTORY_LIMIT);
  }

  /** The seat's moves: its prompt's, when it is for the table's version. */
  private showMoves(): void {
    const match = this.match;
    const mine = this.seat && match && match.status === MatchStatus.IN_PROGRESS && match.activeSeats.includes(this.seat.seat);
    const moves = mine && this.promptVersion === Number(match.version) ? this.promptMoves : [];
    this.moves = moves.map((move) => ({ move, json: toJson(this.descriptors.move, move) as { [key: string]: Json } }));
  }

  /** A token no longer accepted (expired): its rejoin key buys a fresh one. */
  private async rejoin(): Promise<boolean> {
    const seat = this.seat;
    if (!seat?.rejoinKey) return false;
    try {
      const joined = await this.client.rejoinMatch({ matchId: this.matchId, rejoinKey: seat.rejoinKey });
      this.seat = { ...seat, token: joined.token, rejoinKey: joined.rejoinKey || seat.rejoinKey };
      holdSeat(this.seat);
      return true;
    } catch {
      return false;
    }
  }

  /** The seat was taken over (rejoined elsewhere, left, or given to a bot): never watched again. */
  private seatLost(): void {
    const seat = this.seat;
    // Another tab that rejoined holds the seat's newer token: its record stays.
    if (seat && heldSeat(this.matchId)?.token === seat.token) releaseSeat(this.matchId);
    this.seat = undefined;
    this.moves = [];
    this.reconnecting = false;
    this.stopped = true;
    this.notice = "This seat is no longer played from this page: it was taken over elsewhere, left, or handed to a bot.";
    this.render();
  }

  private async play(index: number): Promise<void> {
    if (this.busy) return;
    const chosen = this.moves[index];
    if (!chosen) return;
    this.busy = true;
    this.error = "";
    this.errorReason = "";
    this.render();
    const before = Number(this.match?.version ?? 0);
    // One request id for every try: the server takes the move once however often it is sent.
    const requestId = crypto.randomUUID();
    for (let attempt = 1; ; attempt++) {
      try {
        if (this.overSocket) await this.seatPlay.move({ move: chosen.move, requestId }, MOVE_TIMEOUT_MS);
        else await this.client.submitMove({ matchId: this.matchId, move: chosen.move, requestId }, { ...auth(this.token), timeoutMs: MOVE_TIMEOUT_MS });
        // The moves offered were for the version before the move: the stream brings the next.
        if (Number(this.match?.version ?? 0) === before) this.moves = [];
        this.setReconnecting(false);
      } catch (error) {
        // The server could not take it now (its store or a replica away): the same move again.
        if ((isCode(error, Code.Unavailable) || isCode(error, Code.DeadlineExceeded)) && attempt < MOVE_TRIES && !this.stopped) {
          this.setReconnecting(true);
          await new Promise((resolve) => setTimeout(resolve, backoff(attempt)));
          continue;
        }
        const refused = describeError(error);
        if (refused.reason && !isCode(error, Code.Unavailable)) {
          this.error = refusal(refused.reason, refused.message, this.match?.seats.map((s) => s.playerName) ?? []);
          this.errorReason = refused.reason;
        } else {
          // Not the rules' answer: the call did not get through (the move may or may not have
          // been taken; the stream tells).
          this.reconnecting = true;
        }
      }
      break;
    }
    this.busy = false;
    this.render();
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
    this.cursor = undefined;
    this.log = [];
    this.restartWatch();
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
    this.render();
  }

  /** Gives the seat up on the server (LeaveMatch), then says what became of it. */
  private async leave(): Promise<void> {
    const seat = this.seat;
    if (!seat) return;
    // The seat's watch ends with token_revoked once the leave is taken: it is closed first.
    this.watchGeneration += 1;
    this.watch.abort();
    try {
      const match = (await this.client.leaveMatch({ matchId: this.matchId }, auth(seat.token))) as Match;
      const after = match.seats.find((s) => s.seat === seat.seat);
      if (match.status === MatchStatus.ABANDONED) this.notice = "You left. The match has ended: it is abandoned.";
      else if (after?.bot) this.notice = "You left. A server bot plays your seat from now on.";
      else this.notice = "You left. Your seat is free again for someone else to take.";
    } catch (error) {
      if (!isCode(error, Code.Unauthenticated) && !isCode(error, Code.PermissionDenied)) {
        this.error = `Could not leave: ${describeError(error).message}`;
        this.restartWatch();
        this.render();
        return;
      }
      this.notice = "This seat was no longer yours; this browser has forgotten it.";
    }
    releaseSeat(this.matchId);
    this.seat = undefined;
    this.promptMoves = [];
    this.moves = [];
    this.restartWatch();
  }

  render(): void {
    const match = this.match;
    if (!match) {
      this.root.replaceChildren(
        this.error ? h("p", { class: "error", id: "error", role: "alert" }, this.error) : h("p", { class: "muted", id: this.reconnecting ? "reconnecting" : "loading" }, this.reconnecting ? "Reconnecting…" : "Loading…"),
      );
      return;
    }
    const status = MatchStatus[match.status] ?? String(match.status);
    const link = `${window.location.origin}/?game=${this.game}&match=${this.matchId}`;
    const names = match.seats.map((s) => s.playerName || (s.bot ? `bot ${s.seat + 1}` : `player ${s.seat + 1}`));
    const freeSeats = match.seats.some((s) => !s.taken);
    const speaker = new Speaker(names);
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
            title: speaker.move(move.json),
            onclick: () => void this.play(move.index),
          },
          ...content,
        ),
    };
    const renderer = RENDERERS[this.game];
    const drawn = this.view ? (renderer ? renderer.draw(ctx) : renderGenericView(this.view)) : h("p", { class: "muted" }, "The table shows once the match starts.");
    const title = GAMES[this.game] ? this.game.replace("_", " ") : this.game;
    const you = this.seat ? `You play as ${names[this.seat.seat]}` : "Spectating: you see what every player sees, no hidden cards";
    showTurn(this.game, Boolean(this.seat && match.status === MatchStatus.IN_PROGRESS && match.activeSeats.includes(this.seat.seat)));
    const finished = match.status === MatchStatus.FINISHED;
    this.root.replaceChildren(
      h(
        "section",
        { class: "table", "data-game": this.game, "data-status": status, "data-version": String(match.version) },
        // What a player plays with: on a phone it fills the screen, the board taking what the
        // rest leaves (style.css); the list of moves and the events come after it.
        h(
          "div",
          { class: "playfield" },
            h(
            "div",
            { class: "bar" },
            h("h1", {}, title),
            h("span", { class: `status ${status.toLowerCase()}`, id: "status" }, status.replaceAll("_", " ").toLowerCase()),
            h("span", { id: "you", "data-seat": this.seat?.seat ?? "" }, you),
            h("label", { class: "link", for: "join-link" }, "Join link: ", h("input", { readonly: true, value: link, id: "join-link", onclick: (e: Event) => (e.target as HTMLInputElement).select() })),
            !this.seat && match.status === MatchStatus.WAITING_FOR_PLAYERS && freeSeats
              ? h("button", { id: "join", onclick: () => void this.join() }, "Take a seat")
              : null,
            freeSeats && match.status === MatchStatus.WAITING_FOR_PLAYERS ? h("button", { id: "add-bots", onclick: () => void this.addBots() }, "Fill empty seats with bots") : null,
            this.seat && (match.status === MatchStatus.WAITING_FOR_PLAYERS || match.status === MatchStatus.IN_PROGRESS)
              ? h("button", { class: "quiet", id: "leave", title: "Give your seat up: before the start it is free again; during the match a server bot takes it, or the match ends (as the table was set)", onclick: () => void this.leave() }, "Leave the match")
              : null,
          ),
          this.reconnecting ? h("p", { class: "reconnecting", id: "reconnecting", role: "status" }, "Reconnecting…") : null,
          this.error ? h("p", { class: "error", id: "error", role: "alert", "data-reason": this.errorReason || undefined }, this.error) : null,
          this.notice ? h("p", { class: "notice", id: "notice", role: "status" }, this.notice, " ", h("a", { href: "/" }, "Back to the lobby")) : null,
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
        ),
        this.seat && match.status === MatchStatus.IN_PROGRESS
          ? h(
              "div",
              { class: "moves", id: "moves" },
              h("h2", {}, this.moves.length ? "Your legal moves" : "Waiting for the other players"),
              this.moves.map((m, index) => ctx.moveButton({ json: m.json, index }, [renderer?.describeMove?.(m.json) ?? speaker.move(m.json)])),
            )
          : null,
        h(
          "div",
          // Scrolls: reachable by keyboard.
          { class: "log", id: "log", tabindex: 0, "aria-label": "events" },
          h("h2", {}, "Events"),
          h("ol", {}, this.log.slice(-60).reverse().map((line) => h("li", {}, h("span", { class: "v" }, `v${line.version}`), " ", renderer?.describeEvent?.(line.kind, line.body, names, this.view ?? {}) ?? speaker.event(line.kind, line.body)))),
        ),
      ),
    );
  }
}

function backoff(failures: number): number {
  return BACKOFF_MS[Math.min(Math.max(failures - 1, 0), BACKOFF_MS.length - 1)];
}

/** A refusal in words: the server's message names the rule first ("wrong_phase: …"), said once. */
function refusal(reason: string, message: string, names: string[]): string {
  if (reason in REFUSALS) return REFUSALS[reason];
  const said = (message.startsWith(`${reason}: `) ? message.slice(reason.length + 2) : message)
    // The rules name seats by number; a person knows the players by name.
    .replace(/\bseat (\d+)/g, (_, n: string) => names[Number(n)] || `player ${Number(n) + 1}`)
    .replace(/\b[A-Z][A-Z0-9]*(_[A-Z0-9]+)+\b/g, enumWords);
  return `That move is not allowed: ${said}`;
}

// The platform's refusals in words; a game's own rules are said by the server's message.
const REFUSALS: Record<string, string> = {
  not_your_turn: "That move is not allowed: it is not your turn.",
  token_revoked: "This seat is no longer yours (you left, or a bot took it).",
  match_over: "The match is over: no more moves.",
  stale_version: "That move is not allowed: the table changed before it arrived. Choose again.",
};

// A dot on the tab's icon and a word in its title when the seat is to play. Both icons are
// in the page (data URIs): changing them asks the server for nothing.
const icon = (dot: string) =>
  "data:image/svg+xml," +
  encodeURIComponent(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect x="1" y="1" width="14" height="14" rx="2" fill="#4c7a2f"/>${dot}</svg>`);
const TURN_ICON = icon('<circle cx="8" cy="8" r="5" fill="#ffb000"/>');
const IDLE_ICON = icon("");

function showTurn(game: string, yourTurn: boolean): void {
  const title = `${game.replace("_", " ")} · mogames`;
  document.title = yourTurn ? `● Your turn · ${title}` : title;
  const link = document.getElementById("favicon");
  if (link && link.getAttribute("href") !== (yourTurn ? TURN_ICON : IDLE_ICON)) link.setAttribute("href", yourTurn ? TURN_ICON : IDLE_ICON);
}
