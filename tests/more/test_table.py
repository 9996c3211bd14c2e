"""More: a seat's Table of meldable cards, kept up to date move by move, is always the Table
made afresh from the hand (less a taken pile's locked cards)."""

from __future__ import annotations

import random

from services.more.rules import State
from services.more.steps import Table


def fields(table: Table) -> tuple:
    cells = tuple(tuple(cell or ()) for cell in table.at)
    return (cells, table.mask, table.aces, table.wilds, table.counts, table.size)


def test_a_kept_table_equals_one_made_afresh_along_random_play():
    compared = 0
    for seed, options in ((3, {}), (4, {"bid_for_solo": True}), (5, {"max_rounds": 2})):
        rng = random.Random(seed)
        state = State.new(3, seed, options)
        for step in range(2500):
            if state.is_over():
                break
            seat = rng.choice(state.active_seats())
            moves = state.legal_moves(seat)  # the turn player's Table is made or brought up to date
            if state.phase in ("draw", "play"):
                locked = set(state.t.locked)
                usable = [card for card in state.hands[seat] if card not in locked]
                assert fields(state._table(seat)) == fields(Table(usable)), (seed, step)
                compared += 1
            state.apply(seat, rng.choice(moves))
            if step % 97 == 0:  # decoded: no Table kept yet
                state = State.from_dict(state.to_dict())
    assert compared > 5000
