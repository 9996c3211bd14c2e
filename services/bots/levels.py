"""Bot levels: ``random`` and ``policy`` need no search; ``medium`` and ``hard`` are budgets of
the same search (``services.bots.search``)."""

from __future__ import annotations

from dataclasses import dataclass

RANDOM, POLICY, MEDIUM, HARD = "random", "policy", "medium", "hard"
LEVELS = (RANDOM, POLICY, MEDIUM, HARD)
SEARCH_LEVELS = (MEDIUM, HARD)


@dataclass(frozen=True)
class Budget:
    """What one decision may spend: playouts, and CPU seconds of the deciding process.

    The search stops at whichever runs out first; a budget with ``cpu_s`` None is bounded
    by playouts alone, so its decision is the same on any machine (what tests use)."""

    playouts: int
    cpu_s: float | None
    # Whether the adapter weighs the moves whose playouts run long (More's last turns, played
    # out to the round's end); without, it leaves them to its playout policy.
    deep: bool = True


BUDGETS = {
    MEDIUM: Budget(playouts=150, cpu_s=0.06, deep=False),
    HARD: Budget(playouts=4000, cpu_s=0.25),
}
