"""When the search stops: before its budget (a settled decision), and at its CPU deadline; and
how comparing the moves on the same samples finds what fresh samples miss."""

from __future__ import annotations

import random
import time
from types import ModuleType

from services.bots.levels import BUDGETS, HARD, MEDIUM, Budget
from services.bots.search import SETTLED_AFTER, playout, search, settled


def test_a_move_taking_most_playouts_settles_the_decision():
    done = SETTLED_AFTER
    assert settled([85, 10, 5], [40.0, 6.0, 3.0], done)


def test_a_won_position_settles_whatever_the_moves_share():
    # Every move wins: the bandit spreads its playouts, and more of them change nothing.
    assert settled([34, 33, 33], [34.0, 33.0, 32.5], 100)


def test_a_lost_position_settles_too():
    assert settled([34, 33, 33], [0.5, 0.0, 0.9], 100)


def test_an_open_position_keeps_searching():
    assert not settled([40, 35, 25], [24.0, 20.0, 10.0], 100)
    # A leader that wins most but not nearly all of its playouts is not yet a won position.
    assert not settled([40, 35, 25], [37.0, 30.0, 20.0], 100)
    # One move still wins now and then: the position is not lost.
    assert not settled([34, 33, 33], [0.5, 0.0, 2.0], 100)


class _CoinState:
    """One move, then over: the seat wins when the sampled deal plus its move's edge beats 1/2."""

    def __init__(self, deal: float) -> None:
        self.deal = deal
        self.move: dict | None = None

    def legal_moves(self, seat: int) -> list[dict]:
        return [{"edge": edge} for edge in EDGES]

    def apply(self, seat: int, move: dict) -> list:
        self.move = move
        return []

    def is_over(self) -> bool:
        return self.move is not None

    def active_seats(self) -> list[int]:
        return [] if self.is_over() else [0]

    def winners(self) -> list[int]:
        assert self.move is not None
        return [0] if self.deal + self.move["edge"] > 0.5 else [1]


EDGES = (0.0, 0.2, 0.1)  # the middle move is best, by little beside the deal's spread


def _coin_adapter(same_samples: bool, calls: list[float]) -> ModuleType:
    module = ModuleType("coin")

    def determinize(view, seat, rng, history=None):
        state = _CoinState(rng.random())
        calls.append(state.deal)
        return state

    module.determinize = determinize  # type: ignore[attr-defined]
    module.playout_move = lambda state, seat, rng: state.legal_moves(seat)[0]  # type: ignore[attr-defined]
    module.SAME_SAMPLES = same_samples  # type: ignore[attr-defined]
    return module


def test_on_the_same_samples_a_small_edge_is_found_within_a_small_budget():
    budget = Budget(playouts=150, cpu_s=None)
    for seed in range(20):
        deals: list[float] = []
        move = search(_coin_adapter(True, deals), {}, 0, budget, seed)
        assert move == {"edge": 0.2}
        # every move was played on each sample: the samples come in threes of one deal
        played = deals[1:]
        assert len(played) == budget.playouts
        assert all(played[i] == played[i + 1] == played[i + 2] for i in range(0, len(played), 3))


def test_on_fresh_samples_the_same_budget_misses_that_edge():
    budget = Budget(playouts=150, cpu_s=None)
    chosen = [search(_coin_adapter(False, []), {}, 0, budget, seed) for seed in range(20)]
    assert any(move != {"edge": 0.2} for move in chosen)


def test_a_sample_the_cpu_budget_cuts_short_is_left_out():
    """Every move is judged on the same samples: a sample the budget stops before each move has
    been played on it counts for none (here it would have tied the first move with the best)."""
    deals: list[float] = []
    scripted = [0.5, 0.35, 0.35, 0.35]  # the opening sample, then one whole: only edge 0.2 wins

    def determinize(view, seat, rng, history=None):
        if len(deals) < len(scripted):
            deals.append(scripted[len(deals)])
        else:  # the second sample: its first move's playout spends the budget, and wins
            spin_until = time.process_time() + 0.06
            while time.process_time() < spin_until:
                pass
            deals.append(0.9 if len(deals) == len(scripted) else 0.0)
        return _CoinState(deals[-1])

    module = _coin_adapter(True, [])
    module.determinize = determinize  # type: ignore[attr-defined]
    move = search(module, {}, 0, Budget(playouts=4000, cpu_s=0.05), seed=1)
    assert len(deals) == len(scripted) + 1, "the search stopped within the cut sample"
    assert move == {"edge": 0.2}


def test_a_first_sample_the_cpu_budget_cuts_short_leaves_the_decision_to_the_policy():
    """Where one sample's playouts outlast the budget, the decision stops after the playout
    that spent it and plays the playout policy's move, not the best of a sample still to
    finish: a decision's CPU is its budget plus at most one playout."""
    deals: list[float] = []

    def determinize(view, seat, rng, history=None):
        if deals:  # every playout of the first sample: only edge 0.2 would win it
            spin_until = time.process_time() + 0.06
            while time.process_time() < spin_until:
                pass
        deals.append(0.35)
        return _CoinState(0.35)

    module = _coin_adapter(True, [])
    module.determinize = determinize  # type: ignore[attr-defined]
    module.playout_move = lambda state, seat, rng: {"edge": EDGES[-1]}  # type: ignore[attr-defined]
    move = search(module, {}, 0, Budget(playouts=4000, cpu_s=0.05), seed=1)
    assert len(deals) == 3, "the opening sample, the first move's playout, the policy's sample"
    assert move == {"edge": EDGES[-1]}


class _EndlessState:
    """A game that would go on for 100,000 moves of a millisecond's CPU each."""

    def __init__(self) -> None:
        self.moves = 0

    def is_over(self) -> bool:
        return self.moves >= 100_000

    def active_seats(self) -> list[int]:
        return [0]

    def apply(self, seat: int, move: dict) -> list:
        spin_until = time.process_time() + 0.001
        while time.process_time() < spin_until:
            pass
        self.moves += 1
        return []


def test_a_playout_stops_at_the_decisions_deadline():
    """A playout looks at the CPU clock as it goes: one still under way at the deadline counts
    for nothing, however long its game would have run."""
    module = ModuleType("endless")
    module.playout_move = lambda state, seat, rng: {}  # type: ignore[attr-defined]
    state = _EndlessState()
    assert playout(module, state, 0, random.Random(1), deadline=time.process_time() + 0.02) is None
    assert 0 < state.moves < 100_000


def test_the_level_tells_the_adapter_whether_to_weigh_the_moves_whose_playouts_run_long():
    """``Budget.deep`` reaches ``candidate_moves``: ``hard`` weighs those moves, ``medium`` leaves
    them to the playout policy (More's endgame)."""
    told: list[bool] = []
    module = _coin_adapter(True, [])

    def candidate_moves(state, seat, rng, deep=True):
        told.append(deep)
        return state.legal_moves(seat) if deep else state.legal_moves(seat)[:1]

    module.candidate_moves = candidate_moves  # type: ignore[attr-defined]
    shallow = Budget(playouts=30, cpu_s=None, deep=False)
    assert search(module, {}, 0, shallow, seed=1) == {"edge": EDGES[0]}
    assert search(module, {}, 0, Budget(playouts=150, cpu_s=None), seed=1) == {"edge": 0.2}
    assert told == [False, True]
    assert not BUDGETS[MEDIUM].deep and BUDGETS[HARD].deep
