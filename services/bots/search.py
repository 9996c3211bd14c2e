"""Determinized Monte Carlo search (perfect-information sampling with a bandit at the root).

Every playout samples a fresh determinization of what the seat knows, picks a root move by
UCB1 over the seat's legal moves, plays the adapter's heuristic playout policy for every
seat from there, and scores the end (the match's result, or the adapter's ``evaluate``
where the playout is cut off). The move played most often wins.

An adapter with ``SAME_SAMPLES`` true has every candidate played out on each sample instead,
with the same playout randomness: where the deal decides far more of the result than any one
move does, comparing the moves on the same samples is what tells them apart within a budget.
The move with the best total wins.
"""

from __future__ import annotations

import math
import random
import time
from types import ModuleType
from typing import Any

from services.bots.levels import Budget
from services.engine import JsonDict, MoveError

EXPLORATION = 0.7
# A decision is settled early once the bandit spends nearly all its playouts on one move:
# after SETTLED_AFTER playouts, when one move has SETTLED_SHARE of them.
SETTLED_AFTER = 100
SETTLED_SHARE = 0.8
# A decision is also over once the result no longer depends on it: after SETTLED_AFTER
# playouts, the most played move wins DECIDED_WIN of its playouts (a won position: any
# sensible move keeps it), or no move wins more than 1 - DECIDED_WIN (a lost one). Against a
# weak opponent most of a match is such positions; searching them on only costs CPU.
DECIDED_WIN = 0.97
# A playout looks at the CPU clock every this many moves: a decision's deadline stops it there
# (More's last turns play out to the round's end, tens of milliseconds with full hands).
CLOCK_EVERY = 8


def outcome(state: Any, seat: int) -> float:
    """1 for a sole winner, a share for a tie, 0 for a loss."""
    winners = state.winners()
    return 1.0 / len(winners) if seat in winners else 0.0


def playout(
    adapter: ModuleType, state: Any, seat: int, rng: random.Random, deadline: float | None = None
) -> float | None:
    """Play ``state`` on with the adapter's playout policy; ``seat``'s reward in [0, 1], or None
    where the process's CPU time (``time.process_time``) reaches ``deadline`` first."""
    evaluate = getattr(adapter, "evaluate", None)
    limit, round_of = _horizon(adapter, state) if evaluate is not None else (None, None)
    start = round_of(state) if round_of is not None else None
    steps = 0
    while not state.is_over():
        if steps % CLOCK_EVERY == 0 and _past(deadline):
            return None
        if (limit is not None and steps >= limit) or (round_of is not None and round_of(state) != start):
            return float(evaluate(state, seat))  # type: ignore[misc]
        active = state.active_seats()
        if not active:
            break
        mover = active[0]
        state.apply(mover, adapter.playout_move(state, mover, rng))
        steps += 1
    if state.is_over():
        return outcome(state, seat)
    return float(evaluate(state, seat)) if evaluate is not None else 0.5


def _horizon(adapter: ModuleType, state: Any) -> tuple[int | None, Any]:
    """Where a playout from ``state`` stops for ``evaluate``: after how many moves (None: no
    limit), and whether at the end of its round (the adapter's ``round_of``, else None)."""
    steps_of = getattr(adapter, "playout_steps", None)
    limit = steps_of(state) if steps_of is not None else getattr(adapter, "PLAYOUT_STEPS", None)
    return limit, getattr(adapter, "round_of", None)


def search(
    adapter: ModuleType,
    view: JsonDict,
    seat: int,
    budget: Budget,
    seed: int,
    history: list[JsonDict] | None = None,
) -> JsonDict:
    """The move the search prefers for ``seat`` (one of its legal moves). A CPU budget is a
    deadline: the playout under way when it passes counts for nothing, and a decision with no
    playout done plays the playout policy's move."""
    deadline = None if budget.cpu_s is None else time.process_time() + budget.cpu_s
    rng = random.Random(seed)
    first = adapter.determinize(view, seat, rng, history=history)
    narrow = getattr(adapter, "candidate_moves", None)
    moves: list[JsonDict] = (
        narrow(first, seat, rng, deep=budget.deep) if narrow is not None else first.legal_moves(seat)
    )
    if not moves:
        raise ValueError(f"seat {seat} has no move to make in this view")
    if len(moves) == 1:
        return moves[0]
    if getattr(adapter, "SAME_SAMPLES", False):
        return _on_same_samples(adapter, view, seat, budget, rng, history, moves, deadline)
    visits = [0] * len(moves)
    totals = [0.0] * len(moves)
    state = first
    for done in range(budget.playouts):
        if _past(deadline) or (done >= SETTLED_AFTER and done % 10 == 0 and settled(visits, totals, done)):
            break
        if done:
            state = adapter.determinize(view, seat, rng, history=history)
        choice = _select(visits, totals, done)
        reward = _played_out(adapter, state, seat, moves[choice], rng, deadline)
        if reward is None:
            break
        visits[choice] += 1
        totals[choice] += reward
    if not any(visits):
        return _policy_move(adapter, view, seat, rng, history)
    best = max(range(len(moves)), key=lambda i: (visits[i], totals[i]))
    return moves[best]


def _played_out(
    adapter: ModuleType, state: Any, seat: int, move: JsonDict, rng: random.Random, deadline: float | None
) -> float | None:
    """``seat``'s reward for ``move`` in the sample ``state``, played out from there (None: the
    deadline came first)."""
    try:
        state.apply(seat, move)
    except MoveError:
        # The move is legal in every state consistent with the seat's view, unless an
        # adapter's sample is off: a refusal counts as the worst result.
        return 0.0
    return playout(adapter, state, seat, rng, deadline)


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.process_time() >= deadline


def _policy_move(
    adapter: ModuleType, view: JsonDict, seat: int, rng: random.Random, history: list[JsonDict] | None
) -> JsonDict:
    """What the playout policy plays for ``seat`` on a fresh sample of its information."""
    return dict(adapter.playout_move(adapter.determinize(view, seat, rng, history=history), seat, rng))


def _on_same_samples(
    adapter: ModuleType,
    view: JsonDict,
    seat: int,
    budget: Budget,
    rng: random.Random,
    history: list[JsonDict] | None,
    moves: list[JsonDict],
    deadline: float | None,
) -> JsonDict:
    """Every move played out on each sample, with the same playout randomness; the best total wins
    (ties to the earlier move). The deadline may cut any sample short, the first one's too (an
    endgame's playouts are long, and a hand may offer many moves): such a sample is left out,
    as every move is judged on the same ones; with none whole, the playout policy decides."""
    visits = [0] * len(moves)
    totals = [0.0] * len(moves)
    done = 0
    while done + len(moves) <= max(budget.playouts, len(moves)):
        if done >= SETTLED_AFTER and settled(visits, totals, done):
            break
        sample_seed, playout_seed = rng.getrandbits(64), rng.getrandbits(64)
        rewards: list[float] = []
        for move in moves:
            if _past(deadline):
                break
            state = adapter.determinize(view, seat, random.Random(sample_seed), history=history)
            reward = _played_out(adapter, state, seat, move, random.Random(playout_seed), deadline)
            if reward is None:
                break
            rewards.append(reward)
        if len(rewards) < len(moves):
            break
        for i, reward in enumerate(rewards):
            visits[i] += 1
            totals[i] += reward
        done += len(moves)
    if not done:
        return _policy_move(adapter, view, seat, rng, history)
    return moves[max(range(len(moves)), key=lambda i: (totals[i], -i))]


def settled(visits: list[int], totals: list[float], done: int) -> bool:
    """Whether more playouts would not change the decision, or not what it achieves."""
    leader = max(range(len(visits)), key=visits.__getitem__)
    if visits[leader] >= SETTLED_SHARE * done:
        return True
    if totals[leader] >= DECIDED_WIN * visits[leader]:
        return True
    return all(total <= (1 - DECIDED_WIN) * count for total, count in zip(totals, visits, strict=True))


def _select(visits: list[int], totals: list[float], done: int) -> int:
    for i, count in enumerate(visits):
        if count == 0:
            return i
    log_done = math.log(done)
    return max(
        range(len(visits)),
        key=lambda i: totals[i] / visits[i] + EXPLORATION * math.sqrt(log_done / visits[i]),
    )
