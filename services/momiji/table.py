"""What Momiji's move functions (``moves.py``) read and change of a ``rules.State``: a
Protocol, so that they need not import the rules that import them."""

from __future__ import annotations

from typing import Protocol

from services.engine import Event


class Table(Protocol):
    """A Momiji table as the move functions see it (``rules.State`` is one)."""

    players: int
    deck: list[int]
    display: list[int]
    discard: list[int]
    hands: list[list[int]]
    stacks: list[list[list[int]]]
    acorns: list[int]
    goals: list[str]
    holders: list[int | None]
    landscapes: list[list[str]]
    used: list[list[str]]
    phase: str
    turn: int
    round: int
    draft_picks: int
    main_done: bool
    discard_used: bool
    power_used: bool
    bamboo: bool
    play_types: list[int]
    rain_pending: list[int]
    peek: list[int]

    @property
    def types(self) -> int: ...
    def place_problem(self, seat: int, card: int, bamboo: bool) -> tuple[str, str] | None: ...
    def can_place(self, seat: int, card: int, bamboo: bool = False) -> bool: ...
    def play_problem(self, card: int) -> tuple[str, str] | None: ...
    def main_possible(self, seat: int) -> bool: ...
    def active_seats(self) -> list[int]: ...
    def draw(self, count: int) -> list[int]: ...
    def refill_display(self, seat: int) -> list[Event]: ...
    def gain(self, seat: int, delta: int, reason: str) -> Event: ...
    def to_hand(self, seat: int, cards: list[int]) -> None: ...
    def acorn_pairs(self, seat: int) -> int: ...
    def check_end(self, seat: int) -> list[Event]: ...
    def pass_turn(self) -> list[Event]: ...
