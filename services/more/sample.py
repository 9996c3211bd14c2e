"""A More sample for the search: a full state made from one seat's view and the round's events.

A seat sees the melds, the discard pile, every hand's size and its own hand; it does not see
the other hands, the draw pile or the More piles. The events of the round tell it more: the
cards of a discard pile another seat took are in that seat's hand until it melds or discards
them, and this turn's melding (what ``take_back`` would return). ``determinize`` keeps what the
events tell and deals every other unseen card at random to the other hands, the More piles and
the draw pile; the match seed (the future refills and deals) is sampled too. The sample also
notes whether the Solo has taken a discard pile in the round so far (the playouts ask).
"""

from __future__ import annotations

import random
from typing import Any

from services.engine import JsonDict
from services.more.cards import DECK_SIZE, SUIT_NAMES
from services.more.rules import PHASES, PILE_STATES, Options, State, Turn, Undo

PHASE_KEYS = {proto: key for key, proto in PHASES.items()}
PILE_KEYS = {proto: key for key, proto in PILE_STATES.items()}
TURN_ENDS = ("discarded", "round_started", "dealt")


def determinize(
    view: JsonDict, seat: int, rng: random.Random, history: list[JsonDict] | None = None
) -> State:
    """A full state ``seat``'s view and the round's events cannot tell from the true one."""
    hand = _ids(view["hand"])
    melds = [_meld(m) for m in view["melds"]]
    discard = _ids(view["discard_pile"])
    roles = view["roles"]
    solo = roles.index("ROLE_SOLO") if "ROLE_SOLO" in roles else -1
    turn_seat = view["turn"]
    turn_events = _this_turn(history)
    held = _held_by_others(history, seat)
    # a taken pile's cards are in the turn player's hand this turn, its top card until melded
    held[turn_seat] += view["locked_cards"] + ([view["top_card"]] if view["must_meld_top"] else [])
    seen = set(hand) | set(discard) | {c for m in melds for c in m["cards"]}
    unseen = [c for c in range(DECK_SIZE) if c not in seen]
    sizes = view["hand_sizes"]
    hands: list[list[int]] = []
    known: list[list[int]] = []
    unseen_set = set(unseen)
    held[seat] = []
    for p in range(3):
        cards = [c for c in dict.fromkeys(held[p]) if c in unseen_set][: sizes[p]] if p != seat else []
        unseen_set -= set(cards)
        known.append(cards)
    rest = [c for c in unseen if c in unseen_set]
    rng.shuffle(rest)
    for p in range(3):
        if p == seat:
            hands.append(list(hand))
        else:
            hands.append(known[p] + [rest.pop() for _ in range(sizes[p] - len(known[p]))])
    more = {
        "pair": [rest.pop() for _ in range(view["pair_more_pile_size"])],
        "solo": [rest.pop() for _ in range(view["solo_more_pile_size"])],
    }
    phase = PHASE_KEYS[view["phase"]]
    draw = rest[: view["draw_pile_size"]]  # before a Bid-for-Solo deal no card is anywhere
    bids = [-1, -1, -1]
    if view["bids"]:
        bids = list(view["bids"])
    elif view["bid_for_solo"]:
        bids = [
            (view["my_bid"] if p == seat else rng.randrange(4)) if view["bid_made"][p] else -1
            for p in range(3)
        ]
    totals = list(view["scores"])
    binds = view["minimum_binds"]
    state = State(
        seed=rng.getrandbits(62),
        options=Options(bid_for_solo=view["bid_for_solo"], max_rounds=view["max_rounds"]),
        totals=totals,
        round=view["round"],
        dealer=view["dealer"],
        solo=solo,
        solo_history=list(view["solo_history"]),
        phase=phase,
        bids=bids,
        revealed_bids=list(view["bids"]),
        hands=hands,
        draw=draw,
        discard=discard,
        more=more,
        more_state={"pair": PILE_KEYS[view["pair_more_pile"]], "solo": PILE_KEYS[view["solo_more_pile"]]},
        melds=melds,
        # Who went down shows only through the 7.5 minimum (above 1500): a seat it no longer
        # binds there went down; below it, a side with melds did.
        down=[
            (not binds[p]) if totals[p] > 1500 else any(m["side"] == _side(p, solo) for m in melds)
            for p in range(3)
        ],
        exempt={"pair": False, "solo": False},
        turn=turn_seat,
        t=_turn(view, phase, hands[turn_seat], melds, turn_events),
        rounds=[dict(r) for r in view["rounds"]],
        winner_seats=[],
    )
    # for ``_wants_pile``, kept on the sample as the engine keeps its caches (not a field)
    state.solo_takes_piles = _took_a_pile(history, solo)  # type: ignore[attr-defined]
    return state


def _took_a_pile(history: list[JsonDict] | None, seat: int) -> bool:
    """Whether ``seat`` has taken a discard pile in the current round, by the events (False without them)."""
    took = False
    for event in history or ():
        if "round_started" in event:
            took = False
        elif "pile_taken" in event and event["pile_taken"].get("seat", 0) == seat:
            took = True
    return took


def _ids(cards: list[JsonDict]) -> list[int]:
    return [c.get("id", 0) for c in cards]


def _side(seat: int, solo: int) -> str:
    return "solo" if seat == solo else "pair"


def _meld(view: JsonDict) -> dict[str, Any]:
    suit = view.get("suit", "SUIT_UNSPECIFIED")
    return {
        "side": view.get("side", "ROLE_PAIR").removeprefix("ROLE_").lower(),
        "kind": "run" if view.get("kind") == "MELD_KIND_RUN" else "ace_set",
        "suit": SUIT_NAMES.index(suit) if suit in SUIT_NAMES else -1,
        "low": view.get("low", 0),
        "cards": _ids(view.get("cards", [])),
    }


def _this_turn(history: list[JsonDict] | None) -> list[JsonDict] | None:
    """The events since the current turn began (None without the history)."""
    if history is None:
        return None
    for i in range(len(history) - 1, -1, -1):
        if any(kind in history[i] for kind in TURN_ENDS):
            rest = history[i + 1 :]
            # what the last discard brought about (a More pile picked up, a refill) is that turn's
            while rest and not ("card_drawn" in rest[0] or "pile_taken" in rest[0]):
                rest = rest[1:]
            return rest
    return None


def _held_by_others(history: list[JsonDict] | None, seat: int) -> list[list[int]]:
    """Per seat, the cards the round's events show in its hand: a taken discard pile and cards
    taken back, less those melded or discarded since."""
    held: list[list[int]] = [[], [], []]
    pile: list[int] = []
    for event in history or ():
        kind, body = next(iter(event.items()))
        who = body.get("seat", 0)
        if kind == "pile_taken":
            pile = _ids(body.get("cards", []))
            held[who] += pile
        elif kind == "took_back":
            if body.get("pile_returned"):
                held[who] = [c for c in held[who] if c not in pile]
            held[who] += _ids(body.get("cards", []))
        elif kind == "meld_laid":
            gone = set(_ids(body.get("meld", {}).get("cards", [])))
            held[who] = [c for c in held[who] if c not in gone]
        elif kind == "card_added" or kind == "discarded":
            card = body.get("card", {}).get("id", 0)
            held[who] = [c for c in held[who] if c != card]
        elif kind == "round_started":
            held = [[], [], []]
    held[seat] = []
    return held


def _turn(
    view: JsonDict, phase: str, hand: list[int], melds: list[dict[str, Any]], events: list[JsonDict] | None
) -> Turn:
    """The turn player's bookkeeping, as far as the view and this turn's events tell it."""
    locked = list(view["locked_cards"])
    taken = [e["pile_taken"] for e in events or () if "pile_taken" in e]
    returned = [e["took_back"] for e in events or () if "took_back" in e]
    pile_taken = bool(taken) and not any(r.get("pile_returned") for r in returned)
    if events is None:  # only the view: a taken pile shows as its top card (0 also when none)
        pile_taken = phase == "play" and (view["top_card"] != 0 or view["must_meld_top"] or bool(locked))
    top = view["top_card"] if pile_taken else -1
    halves = view["opening_half_points"]
    closed = view["melding_closed"]
    undo = None
    picked_up = any("more_pile_taken" in e for e in events or ())
    if (
        phase == "play"
        and not closed
        and not picked_up
        and (events is not None or view["can_take_back"] or halves == 0)
    ):
        pile = (_ids(taken[-1].get("cards", [])) if taken else [*locked, top]) if pile_taken else None
        undo = _undo(hand, melds, events, pile)
    return Turn(
        top=top,
        locked=locked,
        pile_taken=pile_taken,
        halves=halves,
        opening=view["opening"],
        melded=halves > 0,
        undo=undo,
        closed=closed,
        no_take=phase == "draw" and closed,
    )


def _undo(
    hand: list[int], melds: list[dict[str, Any]], events: list[JsonDict] | None, pile: list[int] | None
) -> Undo:
    """What ``take_back`` would restore: this turn's melded cards back in the hand, the melds as
    the turn found them, a taken pile given back."""
    melded: list[int] = []
    before: dict[int, dict[str, Any] | None] = {}
    for event in events or ():
        kind, body = next(iter(event.items()))
        if kind == "meld_laid":
            meld = body.get("meld", {})
            melded += _ids(meld.get("cards", []))
            before.setdefault(meld.get("index", 0), None)
        elif kind == "card_added":
            meld = body.get("meld", {})
            card = body.get("card", {}).get("id", 0)
            melded.append(card)
            if meld.get("index", 0) not in before:
                grown = _meld(meld)
                cards = grown["cards"]
                if body.get("low_end"):
                    grown = {**grown, "low": grown["low"] + 1, "cards": cards[1:]}
                else:
                    grown = {**grown, "cards": cards[:-1]}
                before[meld.get("index", 0)] = grown
    old = [before.get(i, m) for i, m in enumerate(melds)]
    old_melds = [m for m in old if m is not None]
    start_hand = hand + melded
    if pile is not None:
        gone = set(pile)
        start_hand = [c for c in start_hand if c not in gone]
    return Undo(hand=start_hand, melds=old_melds, discard=pile)
