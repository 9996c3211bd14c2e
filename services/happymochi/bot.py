"""Happy Mochi's bot adapter (``services/bots``): determinization, playout policy, evaluation.

What a seat knows beyond its view: every card played in a Duo or drawn from a Central Duo
stack is shown to all, and so is where it was placed. With ``history`` the adapter rebuilds
both stacks card by card and the known cards of every other hand at their positions; the
rest (the deck's order, deck cards in other hands) is sampled. Without it the cards under
the stack tops are sampled too.
"""

from __future__ import annotations

import math
import random

from services.engine import JsonDict
from services.happymochi.cards import DECK_SIZE, card_value
from services.happymochi.moves import DECK, LEFT
from services.happymochi.rules import PHASE_EFFECT_DRAW, PHASE_EFFECTS, PHASE_PLACE, PHASE_TURN, State

PLAYOUT_STEPS = 50
EFFECT_DRAW = "EFFECT_DRAW"


class _Table:
    """The public cards of the current round as the seat's history tells them."""

    def __init__(self, start: JsonDict) -> None:
        self.left = [start["central_left"]["id"]]
        self.right = [start["central_right"]["id"]]
        self.slots: list[list[int | None]] = [[None] * size for size in start["hand_sizes"]]
        self.held: int | None = None
        self.held_by_effect = False

    def read(self, event: JsonDict, seat: int) -> None:
        kind, body = next(iter(event.items()))
        if kind == "card_drawn":
            self.held, self.held_by_effect = None, bool(body.get("by_effect"))
            if body["source"] != DECK:
                stack = self.left if body["source"] == LEFT else self.right
                self.held = stack.pop()
        elif kind == "card_received":
            self.held = body["card"]["id"]
        elif kind == "stack_refilled":
            (self.left if body["stack"] == "STACK_LEFT" else self.right).append(body["card"]["id"])
        elif kind == "deck_reshuffled":
            del self.left[:-1]
            del self.right[:-1]
        elif kind == "card_placed":
            self.slots[body["seat"]].insert(body["position"], self.held)
            self.held = None
        elif kind == "duo_played":
            position = body["position"]
            del self.slots[body["seat"]][position : position + 2]
            self.left.append(body["left"]["id"])
            self.right.append(body["right"]["id"])


def _read_history(history: list[JsonDict] | None, view: JsonDict, seat: int) -> _Table | None:
    if not history:
        return None
    start = next((i for i in range(len(history) - 1, -1, -1) if "round_started" in history[i]), None)
    if start is None:
        return None
    table = _Table(history[start]["round_started"])
    for event in history[start + 1 :]:
        table.read(event, seat)
    fits = (
        len(table.left) == view["left_height"]
        and len(table.right) == view["right_height"]
        and table.left[-1] == view["central_left"]["id"]
        and table.right[-1] == view["central_right"]["id"]
        and [len(s) for s in table.slots] == view["hand_sizes"]
    )
    return table if fits else None


def determinize(
    view: JsonDict, seat: int, rng: random.Random, history: list[JsonDict] | None = None
) -> State:
    sizes = view["hand_sizes"]
    players = len(sizes)
    phase = view["phase"]
    table = _read_history(history, view, seat)
    hand = [c["id"] for c in view["hand"]]
    shown = view.get("drawn_card")
    holding = phase == PHASE_PLACE
    if table is not None:
        slots = [list(s) for s in table.slots]
        left, right = list(table.left), list(table.right)
        by_effect = table.held_by_effect
    else:
        slots = [[None] * size for size in sizes]
        left = [-1] * (view["left_height"] - 1) + [view["central_left"]["id"]]
        right = [-1] * (view["right_height"] - 1) + [view["central_right"]["id"]]
        # Without the events: a card drawn by anyone but the turn seat, or while effects are
        # pending, was drawn by an effect.
        by_effect = view["drawer"] != view["turn_seat"] or bool(view["pending_effects"])
    slots[seat] = list(hand)
    known = {c for s in slots for c in s if c is not None} | {c for c in left + right if c >= 0}
    if shown is not None:
        known.add(shown["id"])
    unseen = [c for c in range(DECK_SIZE) if c not in known]
    rng.shuffle(unseen)
    draw = iter(unseen)
    hands = [[c if c is not None else next(draw) for c in s] for s in slots]
    left = [c if c >= 0 else next(draw) for c in left]
    right = [c if c >= 0 else next(draw) for c in right]
    held = (shown["id"] if shown is not None else next(draw)) if holding else None
    deck = list(draw)
    assert len(deck) == view["deck_size"], "the view's card counts add up to the deck"
    return State(
        players=players,
        seed=rng.getrandbits(62),
        options={"first_player": 0},
        hands=hands,
        left=left,
        right=right,
        deck=deck,
        value_side=view["value_side"],
        totals=list(view["total_scores"]),
        round=view["round"],
        round_start=view["round_start_seat"],
        turn=view["turn_seat"],
        phase=phase,
        drawer=view["drawer"],
        held=held,
        held_from=view["drawn_from"] if holding else None,
        held_by_effect=by_effect if holding else False,
        pending=[p["card"]["id"] for p in view["pending_effects"]],
        passes=view["consecutive_passes"],
        shuffles=0,
        last_round_points=list(view["last_round_points"]),
        winner_seats=list(view["winners"]),
    )


# --------------------------------------------------------------------------- playouts


def _draw_source(state: State, seat: int, moves: list[JsonDict], rng: random.Random) -> JsonDict:
    """A low top card, or one that pairs with a card of the hand, beats the deck's unknown."""
    values = {card_value(c) for c in state.hands[seat]}
    best, best_score = None, 2.5
    for move in moves:
        source = move["draw"]["source"]
        if source == DECK:
            continue
        card = (state.left if source == LEFT else state.right)[-1]
        score = card_value(card) - (4 if card_value(card) in values else 0) + rng.random()
        if score < best_score:
            best, best_score = move, score
    if best is not None:
        return best
    deck = [m for m in moves if m["draw"]["source"] == DECK]
    return deck[0] if deck else rng.choice(moves)


def playout_move(state: State, seat: int, rng: random.Random) -> JsonDict:
    moves = state.legal_moves(seat)
    if len(moves) == 1 or rng.random() < 0.1:
        return rng.choice(moves)
    phase = state.phase
    if phase == PHASE_TURN:
        hand = state.hands[seat]
        duos = [m for m in moves if "play_duo" in m]
        if duos:
            # Shed the most points; a Duo that leaves a pair behind it is worth keeping for later.
            return max(
                duos,
                key=lambda m: (
                    card_value(hand[m["play_duo"]["position"]])
                    + card_value(hand[m["play_duo"]["position"] + 1])
                    + rng.random() * 3
                ),
            )
        return _draw_source(state, seat, [m for m in moves if "draw" in m], rng)
    if phase == PHASE_PLACE:
        assert state.held is not None
        hand, value = state.hands[seat], card_value(state.held)
        beside = [i + 1 for i, c in enumerate(hand) if card_value(c) == value]
        return {"place_card": {"position": rng.choice(beside) if beside else rng.randint(0, len(hand))}}
    if phase == PHASE_EFFECTS:
        flips = [m for m in moves if "flip_value" in m]
        if flips and rng.random() < 0.3:
            return flips[0]
        others = [s for s in range(state.players) if s != seat]
        target = min(others, key=lambda s: (len(state.hands[s]), rng.random()))
        return {"name_drawer": {"seat": target}}
    if phase == PHASE_EFFECT_DRAW:
        return _draw_source(state, seat, moves, rng)
    return rng.choice(moves)


def evaluate(state: State, seat: int) -> float:
    """The seat's lead in points (lower is better) over the best other seat, counting the
    cards in hand as if the round ended now, squashed to [0, 1]."""
    totals = [state.totals[s] + state.hand_points(s) for s in range(state.players)]
    best_other = min(t for s, t in enumerate(totals) if s != seat)
    return 1.0 / (1.0 + math.exp(-(best_other - totals[seat]) / 4.0))
