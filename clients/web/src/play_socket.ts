// A seat's PlayMatch over a WebSocket on the page's own origin (docs/protocol.md, "PlayMatch
// from a browser"): the watch and every move on one stream, a move one message each way.
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "./gen/google/rpc/status_pb.js";

const SUBPROTOCOL = "grpc-websockets";
const HEADERS_FLAG = 0x80;
// A page whose WebSocket was refused before it ever opened plays over Connect for these
// pauses, the next one each time the WebSocket is refused again, the last repeating; then
// it tries the WebSocket again. A refusal met while its gateway restarted is over in
// seconds; a proxy that never passes upgrades costs one refused handshake a minute.
const SOCKET_RETRY_MS = [5_000, 10_000, 20_000, 40_000, 60_000];

export class PlaySocket<Response> {
  /** The WebSocket was accepted (a refused upgrade never is: the page plays over Connect a while). */
  opened = false;
  private readonly socket: WebSocket;
  private readonly arrived: (Response | ConnectError | null)[] = [];
  private wake?: () => void;
  private headersSeen = false;
  private ended = false;

  constructor(
    service: string,
    token: string,
    private readonly requestSchema: DescMessage,
    private readonly responseSchema: DescMessage,
    signal: AbortSignal,
  ) {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    this.socket = new WebSocket(`${scheme}://${window.location.host}/${service}/PlayMatch`, [SUBPROTOCOL]);
    this.socket.binaryType = "arraybuffer";
    this.socket.onopen = () => {
      this.opened = true;
      // A browser sets no headers on a WebSocket: the call's headers are its first message.
      this.socket.send(new TextEncoder().encode(`authorization: Bearer ${token}\r\n`));
    };
    this.socket.onmessage = (message) => this.received(new Uint8Array(message.data as ArrayBuffer));
    this.socket.onclose = () => this.end(new ConnectError("the connection was lost", Code.Unavailable));
    signal.addEventListener("abort", () => this.close(), { once: true });
  }

  /** A PlayMatchRequest: the watch first, then each move. Sent once the socket is open. */
  send(request: MessageInitShape<DescMessage>): void {
    const body = toBinary(this.requestSchema, create(this.requestSchema, request));
    // A byte 0 (a request), then a gRPC-Web frame: flag 0, 4-byte length, the message.
    const message = new Uint8Array(6 + body.length);
    new DataView(message.buffer).setUint32(2, body.length);
    message.set(body, 6);
    if (this.socket.readyState === WebSocket.CONNECTING) {
      this.socket.addEventListener("open", () => this.socket.send(message), { once: true });
    } else if (this.socket.readyState === WebSocket.OPEN) {
      this.socket.send(message);
    }
  }

  /** The stream has not ended: a move sent now is answered on it. */
  get live(): boolean {
    return !this.ended;
  }

  close(): void {
    this.end(null);
    this.socket.close();
  }

  /** The stream's responses; it ends as the call does (an error status is thrown). */
  async *responses(): AsyncGenerator<Response> {
    for (;;) {
      const next = this.arrived.shift();
      if (next === undefined) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        continue;
      }
      if (next === null) return;
      if (next instanceof ConnectError) throw next;
      yield next;
    }
  }

  private received(frame: Uint8Array): void {
    if (this.ended) return;
    if (frame[0] !== HEADERS_FLAG) {
      this.push(fromBinary(this.responseSchema, frame.subarray(5)) as Response);
      return;
    }
    if (!this.headersSeen) {
      this.headersSeen = true;
      return;
    }
    this.end(trailerError(new TextDecoder().decode(frame.subarray(5))));
  }

  private end(outcome: ConnectError | null): void {
    if (this.ended) return;
    this.ended = true;
    this.push(outcome);
  }

  private push(item: Response | ConnectError | null): void {
    this.arrived.push(item);
    this.wake?.();
    this.wake = undefined;
  }
}

/** The trailer frame's status: null for OK, else the error with its rich details. */
function trailerError(lines: string): ConnectError | null {
  const trailers = new Map<string, string>();
  for (const line of lines.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon > 0) trailers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const code = Number(trailers.get("grpc-status") ?? Code.Unknown);
  if (code === 0) return null;
  const message = decodeURIComponent(trailers.get("grpc-message") ?? "");
  const details = trailers.get("grpc-status-details-bin");
  if (!details) return new ConnectError(message, code as Code);
  const status = fromBinary(StatusSchema, base64Bytes(details));
  // ErrorInfo (the rule), RetryInfo, BadRequest: read as Connect's errors are (findDetails).
  const incoming = status.details.map((any) => ({ type: any.typeUrl.slice(any.typeUrl.lastIndexOf("/") + 1), value: any.value }));
  const error = new ConnectError(status.message || message, (status.code || code) as Code);
  error.details = incoming;
  return error;
}

function base64Bytes(text: string): Uint8Array {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "=");
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

type Answer = { case: "committed"; value: unknown } | { case: "refused"; value: { code: number; message: string; reason: string } } | { case: undefined };
type PlayResponse = { events: unknown[]; answer: Answer };
interface Pending {
  socket: PlaySocket<PlayResponse>;
  resolve: () => void;
  reject: (error: ConnectError) => void;
}

/** A seat's table over PlayMatch: one WebSocket per watch, its moves answered on it. */
export class SeatPlay {
  private everOpened = false;
  // WebSockets refused in a row, and until when the page plays over Connect for them.
  private refusals = 0;
  private refusedUntil = 0;
  private socket?: PlaySocket<PlayResponse>;
  private pending?: Pending;

  constructor(
    private readonly service: string,
    private readonly requestSchema: DescMessage,
    private readonly responseSchema: DescMessage,
  ) {}

  /** A WebSocket refused before it ever opened (a proxy that does not pass upgrades, or a
   * gateway restarting): this page watches and moves over Connect until the pause for it
   * is over (SOCKET_RETRY_MS), then tries the WebSocket again. */
  get refused(): boolean {
    return Date.now() < this.refusedUntil;
  }

  /** The watch's events (as WatchMatch sends them), each stream's moves' answers taken on the way. */
  async *events(watch: Record<string, unknown>, token: string, signal: AbortSignal): AsyncGenerator<unknown> {
    const socket = new PlaySocket<PlayResponse>(this.service, token, this.requestSchema, this.responseSchema, signal);
    this.socket = socket;
    socket.send({ kind: { case: "watch", value: watch } });
    try {
      for await (const response of socket.responses()) {
        this.opened();
        yield* response.events;
        this.answered(response.answer);
      }
    } catch (error) {
      if (socket.opened) this.opened();
      else if (!this.everOpened) this.refuse();
      throw error;
    } finally {
      socket.close();
      // A move in flight when the stream ended: sent again (the same request id) on the next.
      if (this.pending?.socket === socket) this.settle()?.reject(new ConnectError("the stream was cut", Code.Unavailable));
    }
  }

  /** One move on the open stream, resolved by its answer; a refusal is thrown as SubmitMove's error. */
  move(request: Record<string, unknown>, timeoutMs: number): Promise<void> {
    const socket = this.socket;
    if (!socket?.live) return Promise.reject(new ConnectError("the stream is reconnecting", Code.Unavailable));
    return new Promise((resolve, reject) => {
      const timer = window.setTimeout(() => this.settle()?.reject(new ConnectError("the move was not answered in time", Code.DeadlineExceeded)), timeoutMs);
      const done = () => window.clearTimeout(timer);
      this.pending = { socket, resolve: () => (done(), resolve()), reject: (error) => (done(), reject(error)) };
      socket.send({ kind: { case: "move", value: request } });
    });
  }

  private opened(): void {
    this.everOpened = true;
    this.refusals = 0;
  }

  private refuse(): void {
    this.refusedUntil = Date.now() + SOCKET_RETRY_MS[Math.min(this.refusals, SOCKET_RETRY_MS.length - 1)];
    this.refusals += 1;
  }

  private answered(answer: Answer): void {
    if (!answer.case) return;
    const pending = this.settle();
    if (answer.case === "committed") pending?.resolve();
    else {
      const refused = answer.value;
      pending?.reject(new ConnectError(refused.message, refused.code as Code, undefined, [{ desc: ErrorInfoSchema, value: { reason: refused.reason } }]));
    }
  }

  private settle(): Pending | undefined {
    const pending = this.pending;
    this.pending = undefined;
    return pending;
  }
}
