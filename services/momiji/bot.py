"""What a Momiji search bot needs from the game: a full state made from one seat's view
(``determinize``) and a cheap sensible move for playouts (``playout_move``).

A seat sees every stack, the display, the discard pile and its own hand; it does not see the
other hands nor the deck's order (nor Temple Bell cards another seat is looking at). The events
tell it some cards of the other hands: the cards a seat collected from the display, took with the
Stone Lantern or swapped in with the Koi Pond stay known until they are placed, discarded or
swapped out. ``determinize`` keeps those where they are and deals every other unseen card at
random to the other hands, the peek and the deck.
"""

from __future__ import annotations

import random
from typing import Any

from services.engine import JsonDict
from services.momiji.cards import (
    CARDS_PER_TYPE,
    GOAL_COST,
    HAND_LIMIT,
    LEAF_NAMES,
    POWER_COST,
    TEA_HOUSE,
    ctype,
    cvalue,
    goal_best,
    sort_key,
)
from services.momiji.moves import COLLECT, DRAFT, LIMIT, PLAYING, RAIN, TEMPLE
from services.momiji.rules import State

# ---------------------------------------------------------------- determinization

# The last hands the events told: (view, history, (seat, events), cards known per seat)
_last_known: list[tuple[JsonDict, list[JsonDict] | None, tuple[int, int], list[list[int]]] | None] = [None]


def determinize(
    view: JsonDict, seat: int, rng: random.Random, history: list[JsonDict] | None = None
) -> State:
    """A full state ``seat``'s view cannot tell from the true one (see the module's docstring)."""
    areas = view["players"]
    players = len(areas)
    types = len(view["leaf_types"])
    ids = _ids
    hand = ids(view["hand"])
    display = ids(view["display"])
    discard = ids(view["discard_pile"])
    peek = ids(view["temple_bell_cards"])
    stacks: list[list[list[int]]] = [[[] for _ in range(types)] for _ in range(players)]
    for area in areas:
        for stack in area["stacks"]:
            stacks[area["seat"]][LEAF_NAMES.index(stack["type"])] = ids(stack["cards"])
    seen = set(hand) | set(display) | set(discard) | set(peek)
    seen.update(c for area in stacks for st in area for c in st)
    unseen = [c for c in range(types * CARDS_PER_TYPE) if c not in seen]
    last = _last_known[0]
    if last is not None and last[0] is view and last[1] is history and last[2] == (seat, len(history or ())):
        known = last[3]  # a search asks again and again about the same information
    else:
        known = _known_hands(history, seat, players, set(unseen), [a["hand_size"] for a in areas])
        _last_known[0] = (view, history, (seat, len(history or ())), known)
    for cards in known:
        for c in cards:
            unseen.remove(c)
    rng.shuffle(unseen)
    hands: list[list[int]] = []
    for area in areas:
        s = area["seat"]
        if s == seat:
            hands.append(sorted(hand, key=sort_key))
            continue
        dealt = [*known[s]] + [unseen.pop() for _ in range(area["hand_size"] - len(known[s]))]
        hands.append(sorted(dealt, key=sort_key))
    if view["phase"] == TEMPLE and not peek:  # another seat looks at the cards the deck lacks
        peek = [unseen.pop() for _ in range(len(unseen) - view["deck_size"])]
    goals = [g["goal"] for g in view["goals"]]
    data: dict[str, Any] = {
        "players": players,
        "seed": 0,  # the deal is the only chance: the seed is never read again
        "options": {"draft_landscapes": view["phase"] == DRAFT},
        "deck": unseen,
        "display": display,
        "discard": discard,
        "hands": hands,
        "stacks": stacks,
        "acorns": [a["acorns"] for a in areas],
        "goals": goals,
        "holders": [g["holder"] if g["activated"] else None for g in view["goals"]],
        "landscapes": [[p["power"] for p in a["landscape"]] for a in areas],
        "used": [[p["power"] for p in a["landscape"] if p["used"]] for a in areas],
        "phase": view["phase"],
        "turn": view["turn_seat"],
        "round": view["round"],
        "draft_picks": sum(len(a["landscape"]) for a in areas) if view["phase"] == DRAFT else 0,
        "main_done": view["main_action_done"],
        "discard_used": view["discard_used"],
        "power_used": view["power_used"],
        "bamboo": view["bamboo_bridge_active"],
        "play_types": [LEAF_NAMES.index(t) for t in view["play_types"]],
        "rain_pending": list(view["rain_shower_seats"]),
        "peek": peek,
        "ending": view["ending"],
        "end_reason": view["end_reason"],
    }
    return State.from_dict(data)


def _ids(cards: list[JsonDict]) -> list[int]:
    return [c.get("id", 0) for c in cards]


def _known_hands(
    history: list[JsonDict] | None, seat: int, players: int, unseen: set[int], sizes: list[int]
) -> list[list[int]]:
    """Per seat, the cards the events show went into its hand and are still unseen elsewhere
    (none for ``seat`` itself, whose hand the view shows)."""
    known: list[list[int]] = [[] for _ in range(players)]
    for event in history or ():
        kind, body = next(iter(event.items()))
        who = body.get("seat", 0)
        if kind == "collected":
            known[who] += _ids(body.get("cards", []))
        elif kind == "display_card_taken":
            known[who].append(body.get("card", {}).get("id", 0))
        elif kind == "cards_swapped":
            _drop(known[who], body.get("hand_card", {}).get("id", 0))
            known[who].append(body.get("display_card", {}).get("id", 0))
        elif kind == "card_placed":
            _drop(known[who], body.get("card", {}).get("id", 0))
        elif kind == "cards_discarded":
            for card in _ids(body.get("cards", [])):
                _drop(known[who], card)
    known[seat] = []
    placed: set[int] = set()
    for s in range(players):
        # what later events moved out of sight again (or a history that starts late) is no knowledge
        cards = [c for c in dict.fromkeys(known[s]) if c in unseen and c not in placed]
        known[s] = cards[: sizes[s]]
        placed.update(known[s])
    return known


def _drop(cards: list[int], card: int) -> None:
    if card in cards:
        cards.remove(card)


# ---------------------------------------------------------------- playouts

# Draft preference: the powers that pay back their acorn most surely first.
DRAFT_ORDER = (
    "POWER_TEA_HOUSE",
    "POWER_MOUNTAIN_PATH",
    "POWER_MOSS_GARDEN",
    "POWER_STONE_LANTERN",
    "POWER_BAMBOO_BRIDGE",
    "POWER_TEMPLE_BELL",
    "POWER_KOI_POND",
    "POWER_PAGODA",
    "POWER_RAIN_SHOWER",
)
START_BONUS = 0.8  # a 0 on an empty stack scores nothing yet, but opens a stack


def candidate_moves(state: State, seat: int, rng: random.Random, deep: bool = True) -> list[JsonDict]:
    """The moves worth searching: every main action, power and end of the turn, but of the
    moves that come in dozens of equivalent forms only the likeliest: the pair the policy would
    discard for an acorn, the most useful display card for the Stone Lantern, and the Koi Pond
    swaps of the least useful hand card. The same at every level (``deep``: no playout here
    runs long)."""
    moves = state.legal_moves(seat)
    if state.phase != "PHASE_MAIN":
        return moves
    hand = state.hands[seat]
    use = {c: _usefulness(state, seat, c) for c in hand}
    worst_hand = min(hand, key=lambda c: (use[c], cvalue(c), c)) if hand else -1
    pair = sorted(hand, key=lambda c: (use[c], cvalue(c), c))[:2]
    pair.sort(key=hand.index)
    best_display = max(state.display, key=lambda c: (_usefulness(state, seat, c), c)) if state.display else -1
    wanted = []
    for move in moves:
        kind, body = next(iter(move.items()))
        if kind == "discard_for_acorn" and body["cards"] != pair:
            continue
        if kind == "stone_lantern" and body["card"] != best_display:
            continue
        if kind == "koi_pond" and body["hand_card"] != worst_hand:
            continue
        wanted.append(move)
    return wanted


def playout_move(state: State, seat: int, rng: random.Random) -> JsonDict:
    """A cheap sensible move: Tea House whenever it is there; a main action chosen between the
    best play (points it adds to the stacks), the best collect (cards that fit the seat's stacks)
    and a goal the seat leads; then a useful power, two dead cards for an acorn, and the turn's
    end. Discards (hand limit, Rain Shower) give up the least useful card."""
    phase = state.phase
    hand = state.hands[seat]
    if phase == DRAFT:
        mine = state.landscapes[seat]
        choices = [p for p in DRAFT_ORDER if p not in mine]
        return {"draft_power": {"power": choices[min(int(rng.random() * 2.5), len(choices) - 1)]}}
    if phase == COLLECT:
        return {"collect": {"type": LEAF_NAMES[_best_collect(state, seat, rng)[0]]}}
    if phase == PLAYING:
        card = _best_placement(state, seat, hand, in_play=True)
        return {"place_card": {"card": card}} if card is not None else {"finish_play": {}}
    if phase == TEMPLE:
        keep = max(state.peek, key=lambda c: _usefulness(state, seat, c) + rng.random() * 0.1)
        rest = [c for c in state.peek if c != keep]
        rng.shuffle(rest)
        return {"temple_bell_choose": {"keep": keep, "back_on_top": rest}}
    if phase in (RAIN, LIMIT):
        return {"discard_card": {"card": _least_useful(state, seat, hand, rng)}}
    return _main_step(state, seat, hand, rng)


def _main_step(state: State, seat: int, hand: list[int], rng: random.Random) -> JsonDict:
    acorns = state.acorns[seat]
    free = [p for p in state.landscapes[seat] if p not in state.used[seat]]
    if not state.power_used and acorns >= POWER_COST and TEA_HOUSE in free:
        return {"use_power": {"power": TEA_HOUSE}}
    if not state.main_done and state.main_possible(seat):
        return _main_action(state, seat, hand, rng)
    if not state.power_used and acorns >= POWER_COST:
        power = _useful_power(state, seat, hand, free, rng)
        if power is not None:
            return power
    if not state.discard_used and len(hand) >= 2:
        ranked = sorted(hand, key=lambda c: _usefulness(state, seat, c) + rng.random() * 0.05)
        worst = ranked[:2]
        if len(hand) > HAND_LIMIT or all(_usefulness(state, seat, c) == 0 for c in worst):
            worst.sort(key=hand.index)
            return {"discard_for_acorn": {"cards": worst}}
    return {"end_turn": {}}


def _main_action(state: State, seat: int, hand: list[int], rng: random.Random) -> JsonDict:
    play_card, play_value = _best_play(state, seat, hand)
    options: list[tuple[float, JsonDict]] = []
    if play_card is not None:
        crowded = 2.0 if len(hand) >= HAND_LIMIT else 0.0
        options.append((play_value + crowded, {"place_card": {"card": play_card}}))
    if state.display:
        kind, value = _best_collect(state, seat, rng)
        options.append((value, {"collect": {"type": LEAF_NAMES[kind]}}))
    elif state.deck and state.acorns[seat] >= 1:
        options.append((1.0, {"reveal": {}}))
    if state.acorns[seat] >= GOAL_COST:
        for goal, holder in zip(state.goals, state.holders, strict=True):
            if holder is None and goal_best(goal, state.goal_values(goal)) == [seat]:
                options.append((4.0, {"activate_goal": {"goal": goal}}))
    if not options:  # nothing adds anything: whatever main action is left
        placeable = [c for c in hand if state.can_place(seat, c, state.bamboo)]
        if placeable:
            return {"place_card": {"card": placeable[0]}}
        if state.deck and state.acorns[seat] >= 1:
            return {"reveal": {}}
        goal = state.goals[state.holders.index(None)]
        return {"activate_goal": {"goal": goal}}
    return max(options, key=lambda o: o[0] + rng.random() * 0.6)[1]


def _useful_power(
    state: State, seat: int, hand: list[int], free: list[str], rng: random.Random
) -> JsonDict | None:
    if "POWER_MOSS_GARDEN" in free:
        card = _best_placement(state, seat, hand, in_play=False)
        if card is not None and _gain(state, seat, card) >= 2:
            return {"moss_garden": {"card": card}}
    if "POWER_MOUNTAIN_PATH" in free and len(state.deck) >= 2 and len(hand) <= HAND_LIMIT - 2:
        return {"use_power": {"power": "POWER_MOUNTAIN_PATH"}}
    if "POWER_STONE_LANTERN" in free and state.display:
        card = max(state.display, key=lambda c: _usefulness(state, seat, c) + rng.random() * 0.1)
        if _usefulness(state, seat, card) >= 1.5:
            return {"stone_lantern": {"card": card}}
    return None


def _usefulness(state: State, seat: int, card: int) -> float:
    """How much a card is worth keeping for ``seat``'s stacks: 0 for a card that can never go on
    its stack, most for one that fits now."""
    stack = state.stacks[seat][ctype(card)]
    value = cvalue(card)
    if not stack:
        return 1.0 if value == 0 else 0.5
    top = cvalue(stack[-1])
    if top == 3 or value < top or (value == 3 and state.torii_supply() == 0):
        return 0.0
    return 1.5 if value <= top + 1 else 0.7


def _gain(state: State, seat: int, card: int) -> float:
    """The points a placement adds to the seat's stacks now (a new stack's 0: a small bonus)."""
    stack = state.stacks[seat][ctype(card)]
    if not stack:
        return START_BONUS
    size = len(stack)
    return cvalue(card) * (size + 1) - cvalue(stack[-1]) * size + (1.0 if cvalue(card) == 3 else 0.0)


def _best_placement(state: State, seat: int, hand: list[int], in_play: bool) -> int | None:
    """The hand card whose placement adds most now (within the play's shape during a play)."""
    best, best_gain = None, 0.0
    for card in hand:
        if in_play and state.play_problem(card) is not None:
            continue
        if not state.can_place(seat, card, state.bamboo):
            continue
        gain = _gain(state, seat, card)
        if gain > best_gain:
            best, best_gain = card, gain
    return best


def _best_play(state: State, seat: int, hand: list[int]) -> tuple[int | None, float]:
    """The first card of the best play and what the play adds: one card per type (the best of
    each), or two of one type; acorn pairs are not counted."""
    per_type: dict[int, tuple[float, int]] = {}
    for card in hand:
        if state.can_place(seat, card, state.bamboo):
            gain = _gain(state, seat, card)
            kind = ctype(card)
            if gain > 0 and (kind not in per_type or gain > per_type[kind][0]):
                per_type[kind] = (gain, card)
    if not per_type:
        return None, 0.0
    first_gain, first = max(per_type.values())
    spread = sum(g for g, _ in per_type.values())
    # two of one type: the best card, then one that fits on it
    stack_size = len(state.stacks[seat][ctype(first)])
    second = 0.0
    for card in hand:
        if (
            card != first
            and ctype(card) == ctype(first)
            and cvalue(first) <= cvalue(card) <= cvalue(first) + 1
        ):
            v = cvalue(card)
            if v == 3 and state.torii_supply() == 0:
                continue
            second = max(second, v * (stack_size + 2) - cvalue(first) * (stack_size + 1))
    return first, max(spread, first_gain + second)


def _best_collect(state: State, seat: int, rng: random.Random) -> tuple[int, float]:
    """The display type worth collecting most, and how much."""
    value: dict[int, float] = {}
    for card in state.display:
        kind = ctype(card)
        value[kind] = value.get(kind, 0.0) + 0.3 + _usefulness(state, seat, card)
    kind = max(value, key=lambda k: value[k] + rng.random() * 0.3)
    return kind, value[kind]


def _least_useful(state: State, seat: int, hand: list[int], rng: random.Random) -> int:
    return min(hand, key=lambda c: _usefulness(state, seat, c) + cvalue(c) * 0.01 + rng.random() * 0.05)
