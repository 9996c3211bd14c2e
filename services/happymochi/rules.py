"""Happy Mochi: the pure rules engine.

Rulebook: ``/work/shared/rules/original/happy-mochi.txt`` plus ``happy-mochi.md``; how this
engine reads them, and every decision where they are silent: ``docs/rules/happymochi.md``.

A hand is an ordered list of card ids that is never reordered. A turn is built from
primitive moves:

* ``draw`` (source) then ``place_card`` (position): the "Draw a card" action;
* ``play_duo`` (position), then, if the Duo carries effects, ``name_drawer`` / ``flip_value``
  by the turn player, and for every Draw effect a ``draw`` + ``place_card`` by the named seat;
* ``pass_turn`` only when the turn player can neither draw nor play.
"""

from __future__ import annotations

from typing import Self

from services.engine import (
    BadOptions,
    EngineState,
    Event,
    GameInfo,
    JsonDict,
    MalformedMove,
    NotYourTurn,
    OptionInfo,
    RuleViolation,
    rng,
)
from services.happymochi.cards import (
    DECK_SIZE,
    MINUS,
    NO_EFFECT,
    PLUS,
    card_color,
    card_dict,
    card_effect,
    card_value,
    check_duo,
    duo_number,
    is_happy_mochi,
    playable_duos,
)
from services.happymochi.moves import DECK, LEFT, SOURCES, STACK_OF, parse_move

# ---------------------------------------------------------------- constants

HAND_SIZE = 7
END_SCORE = 30

PHASE_TURN = "PHASE_TURN"
PHASE_PLACE = "PHASE_PLACE"
PHASE_EFFECTS = "PHASE_EFFECTS"
PHASE_EFFECT_DRAW = "PHASE_EFFECT_DRAW"
PHASE_GAME_OVER = "PHASE_GAME_OVER"
PHASES = (PHASE_TURN, PHASE_PLACE, PHASE_EFFECTS, PHASE_EFFECT_DRAW, PHASE_GAME_OVER)

GAME = GameInfo(
    name="happy_mochi",
    title="Happy Mochi",
    package="happymochi",
    service="HappyMochi",
    min_players=2,
    max_players=6,
    move_cap=60_000,
    options=(
        OptionInfo(
            name="first_player",
            type="uint32",
            description="Seat that starts the first round (0 .. players-1).",
            default=0,
        ),
    ),
)


# ---------------------------------------------------------------- options


def parse_options(players: int, options: JsonDict | None) -> JsonDict:
    if not isinstance(players, int) or isinstance(players, bool):
        raise BadOptions("players", "players must be an integer")
    GAME.check_players(players)
    options = dict(options or {})
    unknown = set(options) - {o.name for o in GAME.options}
    if unknown:
        raise BadOptions(f"options.{sorted(unknown)[0]}", f"unknown option {sorted(unknown)[0]!r}")
    first = options.get("first_player", 0)
    if not isinstance(first, int) or isinstance(first, bool) or not 0 <= first < players:
        raise BadOptions(
            "options.first_player", f"first_player must be a seat 0..{players - 1}, not {first!r}"
        )
    return {"first_player": first}


# ---------------------------------------------------------------- state


class State(EngineState):
    """One match: plain data only, so ``to_dict`` is its JSON-compatible form."""

    players: int
    seed: int
    options: dict[str, int]
    hands: list[list[int]]
    # Central Duo stacks, bottom -> top; deck: last element is the top card.
    left: list[int]
    right: list[int]
    deck: list[int]
    value_side: str
    totals: list[int]
    round: int
    round_start: int
    turn: int
    phase: str
    # Seat that must draw (PHASE_EFFECT_DRAW) or place its held card (PHASE_PLACE).
    drawer: int
    held: int | None
    held_from: str | None
    held_by_effect: bool
    # Played cards whose effect is still to resolve, in play order.
    pending: list[int]
    passes: int
    shuffles: int
    last_round_points: list[int]
    winner_seats: list[int]

    # ------------------------------------------------------------ construction

    @classmethod
    def new(cls, players: int, seed: int, options: JsonDict) -> Self:
        state = cls._before_deal(players, seed, options)
        state._start_round(state.options["first_player"])
        return state

    @classmethod
    def _before_deal(cls, players: int, seed: int, options: JsonDict) -> Self:
        """The match as it is before round 1 is dealt (``round`` 0, no cards anywhere)."""
        opts = parse_options(players, options)
        return cls(
            players=players,
            seed=seed,
            options=opts,
            hands=[[] for _ in range(players)],
            left=[],
            right=[],
            deck=[],
            value_side=PLUS,
            totals=[0] * players,
            round=0,
            round_start=opts["first_player"],
            turn=opts["first_player"],
            phase=PHASE_TURN,
            drawer=opts["first_player"],
            held=None,
            held_from=None,
            held_by_effect=False,
            pending=[],
            passes=0,
            shuffles=0,
            last_round_points=[],
            winner_seats=[],
        )

    def opening_events(self) -> list[Event]:
        # The deal depends only on the seed and the options, so round 1's set-up is dealt
        # again on a fresh copy: the events are the same whenever they are asked for.
        fresh = self._before_deal(self.players, self.seed, self.options)
        return fresh._start_round(self.options["first_player"])

    def timeout_move(self, seat: int) -> JsonDict:
        """The timeout policy (docs/rules/happymochi.md, "Timeouts"): the leftmost legal Duo,
        else a draw (the deck first) placed at the right end of the hand or just right of the
        hand's last card of the same value; a Draw effect names the next seat clockwise."""
        moves = self.legal_moves(seat)
        if not moves:
            raise NotYourTurn(seat)
        if self.phase == PHASE_PLACE:
            return {"place_card": {"position": self._timeout_position(seat)}}
        if self.phase == PHASE_EFFECTS:
            return {"name_drawer": {"seat": (self.turn + 1) % self.players}}
        # legal_moves lists the draws first (deck, left, right), then the Duos left to right.
        duos = [m for m in moves if "play_duo" in m]
        return duos[0] if duos else moves[0]

    def _timeout_position(self, seat: int) -> int:
        # Placing a drawn card beside one of its value makes a Happy Mochi, playable next
        # turn: without it, matches where every seat times out can cycle for ever (the same
        # Happy Mochi drawn back and replayed, hands never shrinking).
        assert self.held is not None
        hand, value = self.hands[seat], card_value(self.held)
        for i in range(len(hand) - 1, -1, -1):
            if card_value(hand[i]) == value:
                return i + 1
        return len(hand)

    # ------------------------------------------------------------ queries

    def is_over(self) -> bool:
        return self.phase == PHASE_GAME_OVER

    def scores(self) -> list[int]:
        return list(self.totals)

    def winners(self) -> list[int]:
        return list(self.winner_seats)

    def active_seats(self) -> list[int]:
        if self.phase in (PHASE_TURN, PHASE_EFFECTS):
            return [self.turn]
        if self.phase in (PHASE_PLACE, PHASE_EFFECT_DRAW):
            return [self.drawer]
        return []

    def all_cards(self) -> list[int]:
        """Every card of the game wherever it is (for conservation checks)."""
        cards = [c for hand in self.hands for c in hand] + self.left + self.right + self.deck
        if self.held is not None:
            cards.append(self.held)
        return cards

    def hand_points(self, seat: int) -> int:
        return sum(card_value(c) for c in self.hands[seat])

    def source_available(self, source: str) -> bool:
        """Can a card be drawn from ``source`` now (happy-mochi.md, "Empty deck")?"""
        under = len(self.left) - 1 + len(self.right) - 1
        if source == DECK:
            return bool(self.deck) or under > 0
        stack, other = (self.left, self.right) if source == LEFT else (self.right, self.left)
        return len(stack) > 1 or bool(self.deck) or len(other) > 1

    def available_sources(self) -> list[str]:
        return [s for s in SOURCES if self.source_available(s)]

    def legal_duos(self, seat: int) -> list[int]:
        return playable_duos(self.hands[seat], self.left[-1], self.right[-1], self.value_side)

    def pending_draws(self) -> int:
        return sum(1 for c in self.pending if card_effect(c) == "EFFECT_DRAW")

    def pending_flips(self) -> int:
        return sum(1 for c in self.pending if card_effect(c) == "EFFECT_VALUE_FLIP")

    def legal_moves(self, seat: int) -> list[JsonDict]:
        if seat not in self.active_seats():
            return []
        if self.phase == PHASE_TURN:
            moves: list[JsonDict] = [{"draw": {"source": s}} for s in self.available_sources()]
            moves += [{"play_duo": {"position": i}} for i in self.legal_duos(seat)]
            return moves or [{"pass_turn": {}}]
        if self.phase == PHASE_PLACE:
            return [{"place_card": {"position": i}} for i in range(len(self.hands[seat]) + 1)]
        if self.phase == PHASE_EFFECT_DRAW:
            return [{"draw": {"source": s}} for s in self.available_sources()]
        # PHASE_EFFECTS: a Draw effect is pending (flips alone resolve by themselves).
        moves = [{"name_drawer": {"seat": s}} for s in range(self.players)]
        if self.pending_flips():
            moves.append({"flip_value": {}})
        return moves

    # ------------------------------------------------------------ apply

    def apply(self, seat: int, move: JsonDict) -> list[Event]:
        kind, fields = parse_move(move)
        if self.phase == PHASE_GAME_OVER:
            raise RuleViolation("game_over", "the game is over")
        if seat not in self.active_seats():
            raise NotYourTurn(seat)
        handler = getattr(self, f"_move_{kind}")
        events: list[Event] = handler(seat, **fields)
        if kind != "pass_turn":
            self.passes = 0
        events += self._advance()
        return events

    def _wrong_phase(self, kind: str) -> RuleViolation:
        expected = {
            PHASE_TURN: "draw a card, play a Duo, or pass when neither is possible",
            PHASE_PLACE: "place the drawn card in the hand (place_card)",
            PHASE_EFFECTS: "resolve the effects of the Duo just played (name_drawer or flip_value)",
            PHASE_EFFECT_DRAW: "draw the card ordered by the Draw effect (draw)",
        }[self.phase]
        return RuleViolation("wrong_phase", f"{kind} is not possible now: the player must {expected}")

    def _move_draw(self, seat: int, source: str) -> list[Event]:
        if self.phase not in (PHASE_TURN, PHASE_EFFECT_DRAW):
            raise self._wrong_phase("draw")
        if not self.source_available(source):
            if source == DECK:
                raise RuleViolation(
                    "deck_empty", "the deck is empty and no card lies under the Central Duo tops"
                )
            raise RuleViolation(
                "stack_unavailable",
                "that Central Duo stack has one card and nothing can refill it once drawn",
            )
        by_effect = self.phase == PHASE_EFFECT_DRAW
        events: list[Event] = []
        if source == DECK:
            events += self._ensure_deck()
            card = self.deck.pop()
            events.append(Event({"card_drawn": {"seat": seat, "source": source, "by_effect": by_effect}}))
            events.append(Event({"card_received": {"seat": seat, "card": card_dict(card)}}, to=(seat,)))
        else:
            stack = self.left if source == LEFT else self.right
            card = stack.pop()
            events.append(
                Event(
                    {
                        "card_drawn": {
                            "seat": seat,
                            "source": source,
                            "card": card_dict(card),
                            "by_effect": by_effect,
                        }
                    }
                )
            )
            if not stack:  # note A: the top card of the deck replaces it
                events += self._ensure_deck()
                refill = self.deck.pop()
                stack.append(refill)
                refilled = {"stack": STACK_OF[source], "card": card_dict(refill)}
                events.append(Event({"stack_refilled": refilled}))
        self.held, self.held_from, self.held_by_effect = card, source, by_effect
        self.drawer = seat
        self.phase = PHASE_PLACE
        return events

    def _move_place_card(self, seat: int, position: int) -> list[Event]:
        if self.phase != PHASE_PLACE:
            raise self._wrong_phase("place_card")
        hand = self.hands[seat]
        if position > len(hand):
            raise MalformedMove(
                "move.place_card.position", f"position {position} is outside 0..{len(hand)} (hand size)"
            )
        assert self.held is not None
        hand.insert(position, self.held)
        by_effect = self.held_by_effect
        self.held, self.held_from, self.held_by_effect = None, None, False
        events = [Event({"card_placed": {"seat": seat, "position": position, "hand_size": len(hand)}})]
        if by_effect:
            self.phase = PHASE_EFFECTS
            self.drawer = self.turn
        else:
            events += self._end_turn()
        return events

    def _move_play_duo(self, seat: int, position: int) -> list[Event]:
        if self.phase != PHASE_TURN:
            raise self._wrong_phase("play_duo")
        hand = self.hands[seat]
        if position + 1 >= len(hand):
            raise MalformedMove(
                "move.play_duo.position",
                f"position {position} has no right neighbour in a hand of {len(hand)} cards",
            )
        a, b = hand[position], hand[position + 1]
        why = check_duo(a, b, self.left[-1], self.right[-1], self.value_side)
        if why is not None:
            raise RuleViolation(*why)
        del hand[position : position + 2]
        self.left.append(a)
        self.right.append(b)
        self.pending = [c for c in (a, b) if card_effect(c) != NO_EFFECT]
        self.phase = PHASE_EFFECTS
        body = {
            "seat": seat,
            "position": position,
            "left": card_dict(a),
            "right": card_dict(b),
            "number": duo_number(a, b),
            "happy_mochi": is_happy_mochi(a, b),
            "hand_size": len(hand),
        }
        return [Event({"duo_played": body})]

    def _move_name_drawer(self, seat: int, drawer: int) -> list[Event]:
        if self.phase != PHASE_EFFECTS:
            raise self._wrong_phase("name_drawer")
        if drawer >= self.players:
            raise MalformedMove("move.name_drawer.seat", f"seat {drawer} is not a seat of this match")
        # In PHASE_EFFECTS a Draw effect is always pending (see _advance).
        self._take_pending("EFFECT_DRAW")
        self.drawer = drawer
        self.phase = PHASE_EFFECT_DRAW
        return [Event({"drawer_named": {"seat": seat, "drawer": drawer}})]

    def _move_flip_value(self, seat: int) -> list[Event]:
        if self.phase != PHASE_EFFECTS:
            raise self._wrong_phase("flip_value")
        if not self.pending_flips():
            raise RuleViolation(
                "no_flip_effect", "the Duo just played has no Value-flip effect left to resolve"
            )
        self._take_pending("EFFECT_VALUE_FLIP")
        return [self._flip(seat)]

    def _move_pass_turn(self, seat: int) -> list[Event]:
        if self.phase != PHASE_TURN:
            raise self._wrong_phase("pass_turn")
        if self.available_sources() or self.legal_duos(seat):
            raise RuleViolation(
                "pass_not_allowed", "a player may pass only when they can neither draw a card nor play a Duo"
            )
        self.passes += 1
        events = [Event({"turn_passed": {"seat": seat, "consecutive_passes": self.passes}})]
        if self.passes >= self.players:
            return events + self._end_round(went_out=False)
        self.turn = (self.turn + 1) % self.players
        self.drawer = self.turn
        return events

    # ------------------------------------------------------------ flow

    def _take_pending(self, effect: str) -> int:
        for i, card in enumerate(self.pending):
            if card_effect(card) == effect:
                return self.pending.pop(i)
        raise AssertionError(f"no pending {effect}")

    def _flip(self, seat: int) -> Event:
        self.value_side = MINUS if self.value_side == PLUS else PLUS
        return Event({"value_flipped": {"seat": seat, "value_side": self.value_side}})

    def _advance(self) -> list[Event]:
        """Resolve what needs no decision: lone flips, impossible draws, the end of the turn."""
        events: list[Event] = []
        while self.phase == PHASE_EFFECTS:
            if self.pending_draws() and not self.available_sources():
                self._take_pending("EFFECT_DRAW")
                events.append(Event({"effect_voided": {"seat": self.turn, "effect": "EFFECT_DRAW"}}))
            elif self.pending_draws():
                break  # the turn player names a drawer (or flips first)
            else:
                while self.pending:
                    self._take_pending("EFFECT_VALUE_FLIP")
                    events.append(self._flip(self.turn))
                events += self._end_turn()
        return events

    def _end_turn(self) -> list[Event]:
        if not self.hands[self.turn]:
            return self._end_round(went_out=True)
        self.turn = (self.turn + 1) % self.players
        self.drawer = self.turn
        self.phase = PHASE_TURN
        return []

    def _ensure_deck(self) -> list[Event]:
        """Empty deck: the cards under the two Central Duo tops become the new deck."""
        if self.deck:
            return []
        under = self.left[:-1] + self.right[:-1]
        assert under, "caller checked source_available"
        del self.left[:-1]
        del self.right[:-1]
        self.shuffles += 1
        rng(self.seed, "reshuffle", self.round, self.shuffles).shuffle(under)
        self.deck = under
        return [Event({"deck_reshuffled": {"deck_size": len(self.deck)}})]

    def _end_round(self, went_out: bool) -> list[Event]:
        n = self.players
        points = [self.hand_points(s) for s in range(n)]
        if went_out:
            winner = self.turn
        else:  # nobody went out: fewest points, ties to the earliest in turn order
            order = [(self.round_start + k) % n for k in range(n)]
            winner = min(order, key=lambda s: (points[s], order.index(s)))
        for s in range(n):
            self.totals[s] += points[s]
        self.last_round_points = points
        over = max(self.totals) >= END_SCORE
        if over:
            best = min(self.totals)
            self.winner_seats = [s for s in range(n) if self.totals[s] == best]
        body = {
            "round": self.round,
            "went_out": went_out,
            "out_seat": self.turn if went_out else 0,
            "round_winner": winner,
            "round_points": points,
            "total_scores": list(self.totals),
            "game_over": over,
            "winners": list(self.winner_seats),
        }
        events = [Event({"round_ended": body})]
        if over:
            self.phase = PHASE_GAME_OVER
            self.pending = []
            return events
        return events + self._start_round((winner + 1) % n)

    def _start_round(self, start: int) -> list[Event]:
        self.round += 1
        cards = list(range(DECK_SIZE))
        rng(self.seed, "deal", self.round).shuffle(cards)
        for s in range(self.players):
            self.hands[s] = cards[s * HAND_SIZE : (s + 1) * HAND_SIZE]
        rest = cards[self.players * HAND_SIZE :]
        self.left, self.right = [rest[0]], [rest[1]]
        self.deck = rest[2:]
        self.round_start = self.turn = self.drawer = start
        self.phase = PHASE_TURN
        self.held, self.held_from, self.held_by_effect = None, None, False
        self.pending = []
        self.passes = 0
        events = [
            Event(
                {
                    "round_started": {
                        "round": self.round,
                        "start_seat": start,
                        "central_left": card_dict(self.left[-1]),
                        "central_right": card_dict(self.right[-1]),
                        "deck_size": len(self.deck),
                        "value_side": self.value_side,
                        "hand_sizes": [len(h) for h in self.hands],
                    }
                }
            )
        ]
        for s in range(self.players):
            events.append(
                Event({"hand_dealt": {"seat": s, "cards": [card_dict(c) for c in self.hands[s]]}}, to=(s,))
            )
        return events

    # ------------------------------------------------------------ view

    def view(self, seat: int | None) -> JsonDict:
        top_l, top_r = self.left[-1], self.right[-1]
        view: JsonDict = {
            "hand": [card_dict(c) for c in self.hands[seat]] if seat is not None else [],
            "hand_sizes": [len(h) for h in self.hands],
            "central_left": card_dict(top_l),
            "central_right": card_dict(top_r),
            "left_height": len(self.left),
            "right_height": len(self.right),
            "deck_size": len(self.deck),
            "value_side": self.value_side,
            "total_scores": list(self.totals),
            "round": self.round,
            "round_start_seat": self.round_start,
            "turn_seat": self.turn,
            "phase": self.phase,
            "drawer": self.drawer,
            "drawn_from": self.held_from or "DRAW_SOURCE_UNSPECIFIED",
            "pending_effects": [{"card": card_dict(c), "effect": card_effect(c)} for c in self.pending],
            "consecutive_passes": self.passes,
            "number_to_beat": duo_number(top_l, top_r),
            "color_restriction": card_color(top_l) == card_color(top_r),
            "last_round_points": list(self.last_round_points),
            "end_score": END_SCORE,
            "game_over": self.is_over(),
            "winners": list(self.winner_seats),
        }
        if self.held is not None and (self.held_from != DECK or seat == self.drawer):
            view["drawn_card"] = card_dict(self.held)
        return view
