// The seats this browser holds, kept across reloads (localStorage).
export interface HeldSeat {
  game: string;
  matchId: string;
  seat: number;
  token: string;
  rejoinKey: string;
  name: string;
}

const KEY = "mogames.seats";

function all(): Record<string, HeldSeat> {
  try {
    return JSON.parse(localStorage.getItem(KEY) ?? "{}") as Record<string, HeldSeat>;
  } catch {
    return {};
  }
}

export function heldSeat(matchId: string): HeldSeat | undefined {
  return all()[matchId];
}

export function holdSeat(seat: HeldSeat): void {
  const seats = all();
  seats[seat.matchId] = seat;
  localStorage.setItem(KEY, JSON.stringify(seats));
}

export function releaseSeat(matchId: string): void {
  const seats = all();
  delete seats[matchId];
  localStorage.setItem(KEY, JSON.stringify(seats));
}

export function playerName(): string {
  return localStorage.getItem("mogames.name") ?? "";
}

export function setPlayerName(name: string): void {
  localStorage.setItem("mogames.name", name);
}
