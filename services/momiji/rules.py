"""Momiji: the pure rules engine (2-4 players, leaf cards, acorns, goals, landscape powers).

How the rules are read, and every decision where they are silent: ``docs/rules/momiji.md``.
Data tables (cards, acorn corners, powers, goals) live in ``services/momiji/cards.py``.

A turn is built from primitive moves: optional ``discard_for_acorn`` and one landscape power
(``use_power`` / ``stone_lantern`` / ``koi_pond`` / ``moss_garden`` / ``pagoda``) before or after
the main action; the main action is ``collect`` (optionally after ``reveal``), a play
(``place_card`` one card at a time, then ``finish_play``) or ``activate_goal``; then ``end_turn``
(followed by ``discard_card`` steps while over the hand limit). The only chance is the shuffle
and the deals at setup, drawn from ``rng(seed, ...)``; the deck order is then fixed.
"""

from __future__ import annotations

import itertools
from typing import Self

from services.engine import (
    BadOptions,
    EngineState,
    Event,
    GameInfo,
    JsonDict,
    NotYourTurn,
    OptionInfo,
    rng,
)
from services.momiji.cards import (
    CARDS_PER_TYPE,
    DISPLAY_SIZE,
    GOAL_COST,
    GOAL_NAMES,
    GOALS,
    HAND_SIZE,
    HOLDER_POINTS,
    LANDSCAPE_SIZE,
    LEAF_NAMES,
    LEAF_WORDS,
    OTHER_POINTS,
    POWERS,
    REVEAL_COST,
    START_ACORNS,
    card_dict,
    ctype,
    cvalue,
    goal_best,
    goal_metric,
    left,
    right,
    sort_key,
)
from services.momiji.moves import (
    DECK_EMPTY,
    DRAFT,
    LAST_TORII,
    MAIN,
    NO_END,
    OVER,
    RAIN,
    TEMPLE,
    apply_move,
    legal_moves,
)

# --------------------------------------------------------------------------- constants

GAME = GameInfo(
    name="momiji",
    title="Momiji",
    package="momiji",
    service="Momiji",
    min_players=2,
    max_players=4,
    move_cap=3_000,
    options=(
        OptionInfo(
            name="draft_landscapes",
            type="bool",
            description="Players choose their three landscape powers in seat order instead of a random deal.",
            default=False,
        ),
    ),
)


# The timeout policy's order of move kinds (the first legal one is taken): nothing spent, nothing
# given up where the rules allow it.
TIMEOUT_PREFERENCE = (
    "end_turn",
    "finish_play",
    "collect",
    "place_card",
    "draft_power",
    "temple_bell_choose",
    "discard_card",
)

# --------------------------------------------------------------------------- state


class State(EngineState):
    """A Momiji match: plain data only, so ``to_dict`` is its JSON-compatible form."""

    players: int
    seed: int
    options: dict[str, bool]
    deck: list[int]  # the top of the deck is the END of the list
    display: list[int]
    discard: list[int]
    hands: list[list[int]]
    stacks: list[list[list[int]]]  # by seat, one stack per leaf type
    acorns: list[int]
    goals: list[str]
    holders: list[int | None]  # by goal: the seat that activated it
    landscapes: list[list[str]]
    used: list[list[str]]  # landscape powers used in the current round, by seat
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
    ending: bool
    end_reason: str

    # ----------------------------------------------------------------- construction

    @classmethod
    def _before_deal(cls, players: int, seed: int, options: JsonDict) -> Self:
        """The match before the deal: no cards, goals or landscapes anywhere, seat 0 in PHASE_MAIN."""
        n = players
        return cls(
            players=n,
            seed=seed,
            options=dict(options),
            deck=[],
            display=[],
            discard=[],
            hands=[[] for _ in range(n)],
            stacks=[[[] for _ in range(n + 2)] for _ in range(n)],
            acorns=[START_ACORNS] * n,
            goals=[],
            holders=[],
            landscapes=[[] for _ in range(n)],
            used=[[] for _ in range(n)],
            phase=MAIN,
            turn=0,
            round=1,
            draft_picks=0,
            main_done=False,
            discard_used=False,
            power_used=False,
            bamboo=False,
            play_types=[],
            rain_pending=[],
            peek=[],
            ending=False,
            end_reason=NO_END,
        )

    @classmethod
    def new(cls, players: int, seed: int, options: JsonDict) -> Self:
        GAME.check_players(players)
        opts = check_options(options)
        s = cls._before_deal(players, seed, opts)
        deck = list(range(s.types * CARDS_PER_TYPE))
        rng(seed, "deck").shuffle(deck)
        s.deck = deck
        for seat in range(players):
            s.hands[seat] = sorted((s.deck.pop() for _ in range(HAND_SIZE)), key=sort_key)
        s.display = sorted((s.deck.pop() for _ in range(DISPLAY_SIZE)), key=sort_key)
        s.goals = sorted(rng(seed, "goals").sample(GOAL_NAMES, players + 2), key=GOAL_NAMES.index)
        s.holders = [None] * len(s.goals)
        if opts["draft_landscapes"]:
            s.phase, s.round = DRAFT, 0
        else:
            for seat in range(players):
                drawn = rng(seed, "landscape", seat).sample(POWERS, LANDSCAPE_SIZE)
                s.landscapes[seat] = sorted(drawn, key=POWERS.index)
        return s

    # ----------------------------------------------------------------- derived facts

    @property
    def types(self) -> int:
        return self.players + 2

    def torii_supply(self) -> int:
        closed = sum(1 for area in self.stacks for st in area if st and cvalue(st[-1]) == 3)
        return self.types - closed

    def _cards_outside_deck(self) -> list[int]:
        out = self.display + self.discard + self.peek
        for seat in range(self.players):
            out += self.hands[seat]
            for st in self.stacks[seat]:
                out += st
        return out

    def all_cards(self) -> list[int]:
        return self.deck + self._cards_outside_deck()

    def place_problem(self, seat: int, card: int, bamboo: bool) -> tuple[str, str] | None:
        """Why ``card`` cannot go on its stack of ``seat`` now (rule id, sentence), or None."""
        st = self.stacks[seat][ctype(card)]
        v = cvalue(card)
        word = LEAF_WORDS[ctype(card)]
        if not st:
            if v != 0:
                return "first_card_zero", f"the first card of a stack must be a 0; your {word} stack is empty"
        else:
            top = cvalue(st[-1])
            if top == 3:
                return "stack_closed", f"your {word} stack is topped by a 3 and closed with a torii"
            reach = 2 if bamboo else 1
            if not top <= v <= top + reach:
                allowed = f"{top} to {top + reach}" if bamboo else f"{top} or {top + 1}"
                return "stack_order", f"a card on your {word} stack (top {top}) must be {allowed}, not {v}"
        if v == 3 and self.torii_supply() == 0:
            return "no_torii", "the torii supply is empty, so no more stacks can be closed"
        return None

    def can_place(self, seat: int, card: int, bamboo: bool = False) -> bool:
        return self.place_problem(seat, card, bamboo) is None

    def play_problem(self, card: int) -> tuple[str, str] | None:
        """Why ``card`` cannot join the play under way (Option A / Option B shape), or None."""
        p = self.play_types
        t = ctype(card)
        if len(p) == 2 and p[0] == p[1]:
            return "play_same_type_max_two", "a play of one type holds at most 2 cards"
        if len(p) >= 2 and t in p:
            return "play_one_per_type", "a play of different types places one card per type"
        return None

    def main_possible(self, seat: int) -> bool:
        """Whether any main action is open to ``seat`` (otherwise end_turn may skip it)."""
        if self.display:
            return True
        if self.acorns[seat] >= REVEAL_COST and self.deck:  # reveal (the display is empty here)
            return True
        if any(self.can_place(seat, c, self.bamboo) for c in self.hands[seat]):
            return True
        return self.acorns[seat] >= GOAL_COST and any(h is None for h in self.holders)

    # ----------------------------------------------------------------- GameState API

    def active_seats(self) -> list[int]:
        if self.phase == OVER:
            return []
        if self.phase == RAIN:
            return sorted(self.rain_pending)
        return [self.turn]

    def is_over(self) -> bool:
        return self.phase == OVER

    def score_lines(self) -> list[JsonDict]:
        goal_pts = [0] * self.players
        for goal, holder in zip(self.goals, self.holders, strict=True):
            if holder is None:
                continue
            for seat in goal_best(goal, self.goal_values(goal)):
                goal_pts[seat] += HOLDER_POINTS if seat == holder else OTHER_POINTS
        lines = []
        for seat in range(self.players):
            stack_pts = sum(cvalue(st[-1]) * len(st) for st in self.stacks[seat] if st)
            total = stack_pts + self.acorns[seat] + goal_pts[seat]
            lines.append(
                {
                    "seat": seat,
                    "stacks": stack_pts,
                    "acorns": self.acorns[seat],
                    "goals": goal_pts[seat],
                    "total": total,
                }
            )
        return lines

    def goal_values(self, goal: str) -> list[int]:
        metric, _ = GOALS[goal]
        return [
            goal_metric(metric, self.stacks[s], self.acorns[s], len(self.hands[s]))
            for s in range(self.players)
        ]

    def scores(self) -> list[int]:
        return [line["total"] for line in self.score_lines()]

    def winners(self) -> list[int]:
        if not self.is_over():
            return []
        sc = self.scores()
        return [s for s, v in enumerate(sc) if v == max(sc)]

    def legal_moves(self, seat: int) -> list[JsonDict]:
        if seat not in self.active_seats():
            return []
        return legal_moves(self, seat)

    def apply(self, seat: int, move: JsonDict) -> list[Event]:
        return apply_move(self, seat, move)

    def opening_events(self) -> list[Event]:
        """The deal ``new`` made: each seat's six cards (count public, cards to the owner) and the
        four display cards, the same events a later draw or refill emits."""
        events = []
        for seat in range(self.players):
            hand = [card_dict(c) for c in self.hands[seat]]
            events.append(Event({"cards_drawn": {"seat": seat, "count": len(hand), "cards": []}}))
            events.append(
                Event({"cards_drawn": {"seat": seat, "count": len(hand), "cards": hand}}, to=(seat,))
            )
        display = [card_dict(c) for c in self.display]
        events.append(Event({"display_added": {"seat": self.turn, "cards": display, "revealed": False}}))
        return events

    def timeout_move(self, seat: int) -> JsonDict:
        """Least harm first: end the turn or the play when allowed, else the first listed move of
        the cheapest useful kind (collect before placing, placing before paying acorns)."""
        moves = self.legal_moves(seat)
        if not moves:
            raise NotYourTurn(seat)
        for kind in TIMEOUT_PREFERENCE:
            for move in moves:
                if kind in move:
                    return move
        return moves[0]

    def view(self, seat: int | None) -> JsonDict:
        own = seat is not None and 0 <= seat < self.players
        return {
            "phase": self.phase,
            "turn_seat": self.turn,
            "hand": [card_dict(c) for c in sorted(self.hands[seat], key=sort_key)]
            if seat is not None and own
            else [],
            "players": [self._area(s) for s in range(self.players)],
            "display": [card_dict(c) for c in self.display],
            "goals": [
                {"goal": g, "activated": h is not None, "holder": 0 if h is None else h}
                for g, h in zip(self.goals, self.holders, strict=True)
            ],
            "deck_size": len(self.deck),
            "discard_pile": [card_dict(c) for c in self.discard],
            "torii_supply": self.torii_supply(),
            "leaf_types": list(LEAF_NAMES[: self.types]),
            "main_action_done": self.main_done,
            "discard_used": self.discard_used,
            "power_used": self.power_used,
            "bamboo_bridge_active": self.bamboo,
            "play_types": [LEAF_NAMES[t] for t in self.play_types],
            "rain_shower_seats": sorted(self.rain_pending),
            "temple_bell_cards": [card_dict(c) for c in self.peek] if own and seat == self.turn else [],
            "ending": self.ending,
            "end_reason": self.end_reason,
            "round": self.round,
            "scores": self.score_lines(),
            "winners": self.winners(),
        }

    def _area(self, seat: int) -> JsonDict:
        return {
            "seat": seat,
            "acorns": self.acorns[seat],
            "hand_size": len(self.hands[seat]),
            "stacks": [
                {"type": LEAF_NAMES[t], "cards": [card_dict(c) for c in st], "closed": cvalue(st[-1]) == 3}
                for t, st in enumerate(self.stacks[seat])
                if st
            ],
            "landscape": [{"power": p, "used": p in self.used[seat]} for p in self.landscapes[seat]],
        }

    # ----------------------------------------------------------------- mutation helpers (used by moves)

    def draw(self, count: int) -> list[int]:
        """Up to ``count`` cards off the top of the deck (fewer when it runs out)."""
        out = []
        for _ in range(count):
            if not self.deck:
                break
            out.append(self.deck.pop())
        return out

    def refill_display(self, seat: int) -> list[Event]:
        added = self.draw(max(0, DISPLAY_SIZE - len(self.display)))
        self.display = sorted(self.display + added, key=sort_key)
        if not added:
            return []
        return [
            Event(
                {"display_added": {"seat": seat, "cards": [card_dict(c) for c in added], "revealed": False}}
            )
        ]

    def gain(self, seat: int, delta: int, reason: str) -> Event:
        self.acorns[seat] += delta
        body = {"seat": seat, "delta": delta, "acorns": self.acorns[seat], "reason": reason}
        return Event({"acorns_changed": body})

    def to_hand(self, seat: int, cards: list[int]) -> None:
        self.hands[seat] = sorted(self.hands[seat] + cards, key=sort_key)

    def acorn_pairs(self, seat: int) -> int:
        """Adjacent pairs (no stack between them) whose touching corners both show an acorn."""
        tops = [st[-1] for st in self.stacks[seat] if st]
        return sum(1 for a, b in itertools.pairwise(tops) if right(a) and left(b))

    def check_end(self, seat: int) -> list[Event]:
        if self.ending or self.phase in (DRAFT, TEMPLE, OVER):
            return []
        reason = DECK_EMPTY if not self.deck else LAST_TORII if self.torii_supply() == 0 else None
        if reason is None:
            return []
        self.ending, self.end_reason = True, reason
        return [Event({"game_end_triggered": {"reason": reason, "seat": seat}})]

    def pass_turn(self) -> list[Event]:
        seat = self.turn
        self.main_done = self.discard_used = self.power_used = self.bamboo = False
        self.play_types = []
        if self.ending and seat == self.players - 1:
            self.phase = OVER
            return [
                Event({"turn_ended": {"seat": seat, "next_seat": seat}}),
                Event({"game_finished": {"scores": self.score_lines(), "winners": self.winners()}}),
            ]
        self.turn = (seat + 1) % self.players
        if self.turn == 0:
            self.round += 1
        self.phase = MAIN
        return [Event({"turn_ended": {"seat": seat, "next_seat": self.turn}})]


# --------------------------------------------------------------------------- helpers


def check_options(options: JsonDict | None) -> JsonDict:
    options = dict(options or {})
    out = {}
    for info in GAME.options:
        value = options.pop(info.name, info.default)
        if not isinstance(value, bool):
            raise BadOptions(f"options.{info.name}", f"{info.name} must be true or false, not {value!r}")
        out[info.name] = value
    if options:
        raise BadOptions("options", f"unknown option(s): {', '.join(sorted(options))}")
    return out
