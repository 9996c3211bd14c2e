"""Morisi's timeout policy: the move the server makes for a seat whose decision timed out, which is
also the ``policy`` bot's move (docs/rules/morisi.md §10).

It never spends a block (a turn builds nothing), and it keeps every match moving towards its end:
a game ends only when the tiles of some colour hold no block, so the pawn always heads for the
nearest tile that still holds one. A pawn that only took blocks within reach could shuttle between
two empty tiles for ever.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, Protocol

from services.engine import JsonDict, NotYourTurn
from services.morisi.board import DIRECTIONS


class Board(Protocol):
    """What the policy reads of a ``rules.State`` (a Protocol, so this module needs not import
    the rules that import it)."""

    tiles: tuple[Mapping[str, Any], ...]
    at: dict[tuple[int, int], int]
    blocks: list[int]
    pawns: list[int]
    phase: str

    def legal_moves(self, seat: int) -> list[JsonDict]: ...


def timeout_move(state: Board, seat: int) -> JsonDict:
    """``end_turn`` in the build phase (pending sticks return); a pawn to place goes to the first
    tile with a block, one to move takes the first step of a shortest way to the nearest tile with a
    block; a prediction names the first city not yet in it."""
    moves = state.legal_moves(seat)
    if not moves:
        raise NotYourTurn(seat)
    if state.phase == "PHASE_BUILD":
        return {"end_turn": {}}
    if state.phase == "PHASE_MOVE":
        step = step_towards_a_block(state, seat, [move["move_pawn"]["tile"] for move in moves])
        return {"move_pawn": {"tile": step}}
    for move in moves:
        (body,) = move.values()
        tile = body.get("tile", -1)
        if tile >= 0 and state.blocks[tile] > 0:
            return move
    return moves[0]


def step_towards_a_block(state: Board, seat: int, first_steps: list[int]) -> int:
    """The first of ``first_steps`` (the pawn's destinations, in tile order) on a shortest way to a
    tile with a block, the other pawns standing still; the first step if no such tile is in reach.

    A breadth-first search over the pawn's moves: each is a step in one of the six directions,
    jumping in a straight line over pawns to the first free tile."""
    blocks = state.blocks
    at = state.at
    tiles = state.tiles
    occupied = {tile for other, tile in enumerate(state.pawns) if other != seat and tile >= 0}
    first_of = {tile: tile for tile in first_steps}
    queue = deque(first_steps)
    while queue:
        tile = queue.popleft()
        if blocks[tile] > 0:
            return first_of[tile]
        q, r = tiles[tile]["q"], tiles[tile]["r"]
        for dq, dr in DIRECTIONS:
            cell = (q + dq, r + dr)
            while cell in at and at[cell] in occupied:
                cell = (cell[0] + dq, cell[1] + dr)
            nxt = at.get(cell)
            if nxt is not None and nxt not in first_of:
                first_of[nxt] = first_of[tile]
                queue.append(nxt)
    return first_steps[0]
