"""Momiji moves: parsing, legal-move generation and application (validate fully, then mutate).

Functions here take the ``State`` of ``services/momiji/rules.py`` as ``s``. Each ``_do_<kind>``
first runs every check (raising ``MalformedMove`` / ``RuleViolation``) and only then changes
the state, so a refused move changes nothing.
"""

from __future__ import annotations

import itertools
from typing import Any

from services.engine import Event, JsonDict, MalformedMove, NotYourTurn, RuleViolation, split_move
from services.momiji.cards import (
    BAMBOO_BRIDGE,
    CARDS_PER_TYPE,
    DISCARD_GAIN,
    GOAL_COST,
    GOAL_NAMES,
    HAND_LIMIT,
    KOI_POND,
    LANDSCAPE_SIZE,
    LEAF_NAMES,
    LEAF_WORDS,
    MOSS_GARDEN,
    MOUNTAIN_PATH,
    MOUNTAIN_PATH_DRAW,
    PAGODA,
    PAIR_GAIN,
    POWER_COST,
    POWER_MOVES,
    POWER_WORDS,
    POWERS,
    RAIN_SHOWER,
    REVEAL_COST,
    REVEAL_COUNT,
    STONE_LANTERN,
    TEA_HOUSE,
    TEA_HOUSE_GAIN,
    TEMPLE_BELL,
    TEMPLE_BELL_PEEK,
    card_dict,
    card_words,
    ctype,
    cvalue,
    sort_key,
)
from services.momiji.table import Table

DRAFT, MAIN, COLLECT, PLAYING, TEMPLE, RAIN, LIMIT, OVER = (
    "PHASE_DRAFT",
    "PHASE_MAIN",
    "PHASE_COLLECT",
    "PHASE_PLAYING",
    "PHASE_TEMPLE_BELL",
    "PHASE_RAIN_SHOWER",
    "PHASE_HAND_LIMIT",
    "PHASE_OVER",
)
DECK_EMPTY, LAST_TORII, NO_END = "END_REASON_DECK_EMPTY", "END_REASON_LAST_TORII", "END_REASON_UNSPECIFIED"

# Move kind -> {field: value kind}: card = a card id, cards = repeated card ids, leaf/power/goal = enums.
MOVE_FIELDS: dict[str, dict[str, str]] = {
    "draft_power": {"power": "power"},
    "collect": {"type": "leaf"},
    "reveal": {},
    "place_card": {"card": "card"},
    "finish_play": {},
    "activate_goal": {"goal": "goal"},
    "discard_for_acorn": {"cards": "cards"},
    "use_power": {"power": "power"},
    "stone_lantern": {"card": "card"},
    "koi_pond": {"hand_card": "card", "display_card": "card"},
    "moss_garden": {"card": "card"},
    "pagoda": {"type": "leaf"},
    "temple_bell_choose": {"keep": "card", "back_on_top": "cards"},
    "discard_card": {"card": "card"},
    "end_turn": {},
}

# What the seat must do in each pending phase (the message of a wrong_phase refusal).
PHASE_WORDS = {
    DRAFT: "the landscape draft is under way: pick a power with draft_power",
    MAIN: "it is the turn's free phase (main action, discard for an acorn, a power, or end_turn)",
    COLLECT: "after revealing cards you must collect one type from the display",
    PLAYING: "a play is under way: place_card more cards or finish_play",
    TEMPLE: "choose which Temple Bell card to keep (temple_bell_choose)",
    RAIN: "the other players are discarding for the Rain Shower",
    LIMIT: f"you must discard down to {HAND_LIMIT} cards with discard_card",
    OVER: "the match is over",
}


# --------------------------------------------------------------------------- parsing


def parse_move(s: Table, move: Any) -> tuple[str, dict[str, Any]]:
    """(kind, fields) with enums turned into type indices / names; MalformedMove if not well formed."""
    kind, body = split_move(move, MOVE_FIELDS)
    spec = MOVE_FIELDS[kind]
    out: dict[str, Any] = {}
    for key, what in spec.items():
        where = f"move.{kind}.{key}"
        value = body.get(key, [] if what == "cards" else 0)
        if what == "card":
            out[key] = _card(s, value, where)
        elif what == "cards":
            if not isinstance(value, list):
                raise MalformedMove(where, "must be a list of card ids")
            out[key] = [_card(s, v, where) for v in value]
        elif what == "leaf":
            out[key] = _enum(value, LEAF_NAMES[: s.types], where, "leaf type in this match")
        elif what == "power":
            out[key] = POWERS[_enum(value, POWERS, where, "landscape power")]
        else:
            out[key] = GOAL_NAMES[_enum(value, GOAL_NAMES, where, "goal")]
    return kind, out


def _card(s: Table, value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < s.types * CARDS_PER_TYPE:
        raise MalformedMove(where, f"{value!r} is not a card id (0-{s.types * CARDS_PER_TYPE - 1})")
    return value


def _enum(value: Any, names: tuple[str, ...], where: str, what: str) -> int:
    """Index into ``names`` of an enum given by name or by proto number (index + 1)."""
    if isinstance(value, str) and value in names:
        return names.index(value)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= len(names):
        return value - 1
    raise MalformedMove(where, f"{value!r} is not a {what}")


# --------------------------------------------------------------------------- legal moves


def legal_moves(s: Table, seat: int) -> list[JsonDict]:
    phase = s.phase
    hand = s.hands[seat]
    if phase == DRAFT:
        return [{"draft_power": {"power": p}} for p in POWERS if p not in s.landscapes[seat]]
    if phase == COLLECT:
        return _collect_moves(s)
    if phase == PLAYING:
        places: list[JsonDict] = [
            {"place_card": {"card": c}}
            for c in hand
            if s.play_problem(c) is None and s.can_place(seat, c, s.bamboo)
        ]
        return [*places, {"finish_play": {}}]
    if phase == TEMPLE:
        return [
            {"temple_bell_choose": {"keep": keep, "back_on_top": list(order)}}
            for keep in s.peek
            for order in itertools.permutations([c for c in s.peek if c != keep])
        ]
    if phase in (RAIN, LIMIT):
        return [{"discard_card": {"card": c}} for c in hand]
    if phase != MAIN:
        return []
    moves: list[JsonDict] = []
    if not s.main_done:
        moves += _collect_moves(s)
        if s.acorns[seat] >= REVEAL_COST and s.deck:
            moves.append({"reveal": {}})
        moves += [{"place_card": {"card": c}} for c in hand if s.can_place(seat, c, s.bamboo)]
        if s.acorns[seat] >= GOAL_COST:
            moves += [
                {"activate_goal": {"goal": g}} for g, h in zip(s.goals, s.holders, strict=True) if h is None
            ]
    if not s.discard_used:
        moves += [{"discard_for_acorn": {"cards": [a, b]}} for a, b in itertools.combinations(hand, 2)]
    if not s.power_used and s.acorns[seat] >= POWER_COST:
        for p in s.landscapes[seat]:
            if p not in s.used[seat]:
                moves += _power_moves(s, seat, p)
    if s.main_done or not s.main_possible(seat):
        moves.append({"end_turn": {}})
    return moves


def _collect_moves(s: Table) -> list[JsonDict]:
    present = sorted({ctype(c) for c in s.display})
    return [{"collect": {"type": LEAF_NAMES[t]}} for t in present]


def _power_moves(s: Table, seat: int, p: str) -> list[JsonDict]:
    hand = s.hands[seat]
    if p in (MOUNTAIN_PATH, TEMPLE_BELL):
        return [{"use_power": {"power": p}}] if s.deck else []
    if p in (BAMBOO_BRIDGE, TEA_HOUSE, RAIN_SHOWER):
        return [{"use_power": {"power": p}}]
    if p == STONE_LANTERN:
        return [{"stone_lantern": {"card": c}} for c in s.display]
    if p == KOI_POND:
        return [{"koi_pond": {"hand_card": h, "display_card": d}} for h in hand for d in s.display]
    if p == MOSS_GARDEN:
        return [{"moss_garden": {"card": c}} for c in hand if s.can_place(seat, c, s.bamboo)]
    return [
        {"pagoda": {"type": LEAF_NAMES[t]}}
        for t, st in enumerate(s.stacks[seat])
        if st and cvalue(st[-1]) != 3
    ]


# --------------------------------------------------------------------------- apply


def apply_move(s: Table, seat: int, move: JsonDict) -> list[Event]:
    kind, args = parse_move(s, move)
    if seat not in s.active_seats():
        raise NotYourTurn(seat)
    events = HANDLERS[kind](s, seat, **args)
    events += s.check_end(seat)
    return events


def _phase(s: Table, kind: str, *phases: str) -> None:
    if s.phase not in phases:
        raise RuleViolation("wrong_phase", f"{kind} is not possible now: {PHASE_WORDS[s.phase]}")


def _main_action(s: Table) -> None:
    if s.phase == MAIN and s.main_done:
        raise RuleViolation("one_main_action", "you have already taken your main action this turn")


def _in_hand(s: Table, seat: int, card: int) -> None:
    if card not in s.hands[seat]:
        raise RuleViolation("card_not_in_hand", f"{card_words(card)} is not in your hand")


def _in_display(s: Table, card: int) -> None:
    if card not in s.display:
        raise RuleViolation("card_not_in_display", f"{card_words(card)} is not in the display")


def _acorns(s: Table, seat: int, need: int, what: str) -> None:
    if s.acorns[seat] < need:
        raise RuleViolation("not_enough_acorns", f"{what} costs {need} acorn(s); you have {s.acorns[seat]}")


def _placeable(s: Table, seat: int, card: int) -> None:
    problem = s.place_problem(seat, card, s.bamboo)
    if problem is not None:
        raise RuleViolation(*problem)


def _drawn(seat: int, cards: list[int]) -> list[Event]:
    public = Event({"cards_drawn": {"seat": seat, "count": len(cards), "cards": []}})
    secret = {"seat": seat, "count": len(cards), "cards": [card_dict(c) for c in cards]}
    return [public, Event({"cards_drawn": secret}, to=(seat,))]


def _place(s: Table, seat: int, card: int, moss: bool) -> Event:
    s.hands[seat].remove(card)
    s.stacks[seat][ctype(card)].append(card)
    s.bamboo = False
    closed = cvalue(card) == 3
    return Event(
        {"card_placed": {"seat": seat, "card": card_dict(card), "closed": closed, "moss_garden": moss}}
    )


def _do_draft_power(s: Table, seat: int, power: str) -> list[Event]:
    _phase(s, "draft_power", DRAFT)
    if power in s.landscapes[seat]:
        raise RuleViolation("power_already_chosen", f"{POWER_WORDS[power]} is already in your landscape")
    s.landscapes[seat] = sorted([*s.landscapes[seat], power], key=POWERS.index)
    s.draft_picks += 1
    if s.draft_picks == s.players * LANDSCAPE_SIZE:
        s.phase, s.turn, s.round = MAIN, 0, 1
    else:
        s.turn = s.draft_picks % s.players
    return [Event({"power_drafted": {"seat": seat, "power": power}})]


def _do_collect(s: Table, seat: int, type: int) -> list[Event]:
    _phase(s, "collect", MAIN, COLLECT)
    _main_action(s)
    if not any(ctype(c) == type for c in s.display):
        raise RuleViolation("type_not_in_display", f"there is no {LEAF_WORDS[type]} card in the display")
    taken = [c for c in s.display if ctype(c) == type]
    s.display = [c for c in s.display if ctype(c) != type]
    s.to_hand(seat, taken)
    s.main_done, s.phase = True, MAIN
    body = {"seat": seat, "type": LEAF_NAMES[type], "cards": [card_dict(c) for c in taken]}
    return [Event({"collected": body}), *s.refill_display(seat)]


def _do_reveal(s: Table, seat: int) -> list[Event]:
    _phase(s, "reveal", MAIN)
    _main_action(s)
    _acorns(s, seat, REVEAL_COST, "revealing 4 more cards")
    if not s.deck:
        raise RuleViolation("deck_empty", "the deck is empty: there is nothing to reveal")
    events = [s.gain(seat, -REVEAL_COST, "ACORN_REASON_REVEAL")]
    added = s.draw(REVEAL_COUNT)
    s.display = sorted(s.display + added, key=sort_key)
    s.phase = COLLECT
    body = {"seat": seat, "cards": [card_dict(c) for c in added], "revealed": True}
    return [*events, Event({"display_added": body})]


def _do_place_card(s: Table, seat: int, card: int) -> list[Event]:
    _phase(s, "place_card", MAIN, PLAYING)
    _main_action(s)
    _in_hand(s, seat, card)
    if s.phase == PLAYING:
        problem = s.play_problem(card)
        if problem is not None:
            raise RuleViolation(*problem)
    _placeable(s, seat, card)
    s.play_types.append(ctype(card))
    s.phase, s.main_done = PLAYING, True
    return [_place(s, seat, card, moss=False)]


def _do_finish_play(s: Table, seat: int) -> list[Event]:
    _phase(s, "finish_play", PLAYING)
    mixed = len(set(s.play_types)) >= 2
    pairs = s.acorn_pairs(seat) if mixed else 0
    body = {
        "seat": seat,
        "types": [LEAF_NAMES[t] for t in s.play_types],
        "cards": len(s.play_types),
        "acorn_pairs": pairs,
    }
    events = [Event({"play_finished": body})]
    if pairs:
        events.append(s.gain(seat, PAIR_GAIN * pairs, "ACORN_REASON_ACORN_PAIRS"))
    s.play_types, s.phase = [], MAIN
    return events


def _do_activate_goal(s: Table, seat: int, goal: str) -> list[Event]:
    _phase(s, "activate_goal", MAIN)
    _main_action(s)
    if goal not in s.goals:
        raise RuleViolation("goal_not_in_play", f"{goal} is not one of this match's goal tokens")
    index = s.goals.index(goal)
    if s.holders[index] is not None:
        raise RuleViolation("goal_taken", f"{goal} was already activated by seat {s.holders[index]}")
    _acorns(s, seat, GOAL_COST, "activating a goal")
    events = [s.gain(seat, -GOAL_COST, "ACORN_REASON_GOAL")]
    s.holders[index] = seat
    s.main_done = True
    return [*events, Event({"goal_activated": {"seat": seat, "goal": goal}})]


def _do_discard_for_acorn(s: Table, seat: int, cards: list[int]) -> list[Event]:
    if len(cards) != 2 or cards[0] == cards[1]:
        raise MalformedMove("move.discard_for_acorn.cards", "name exactly two different cards")
    _phase(s, "discard_for_acorn", MAIN)
    if s.discard_used:
        raise RuleViolation("discard_once_per_turn", "you may discard two cards for an acorn once per turn")
    for c in cards:
        _in_hand(s, seat, c)
    for c in cards:
        s.hands[seat].remove(c)
    s.discard += cards
    s.discard_used = True
    body = {"seat": seat, "cards": [card_dict(c) for c in cards], "reason": "DISCARD_REASON_FOR_ACORN"}
    return [Event({"cards_discarded": body}), s.gain(seat, DISCARD_GAIN, "ACORN_REASON_DISCARD")]


def _power_check(s: Table, seat: int, power: str) -> None:
    _phase(s, POWER_MOVES.get(power, "use_power"), MAIN)
    if s.power_used:
        raise RuleViolation("power_once_per_turn", "you may use one landscape power per turn")
    if power not in s.landscapes[seat]:
        raise RuleViolation("power_not_in_landscape", f"{POWER_WORDS[power]} is not in your landscape")
    if power in s.used[seat]:
        raise RuleViolation("power_once_per_game", f"you have already used {POWER_WORDS[power]} this game")
    _acorns(s, seat, POWER_COST, "a landscape power")


def _power_pay(s: Table, seat: int, power: str) -> list[Event]:
    s.used[seat].append(power)
    s.power_used = True
    return [
        Event({"power_used": {"seat": seat, "power": power}}),
        s.gain(seat, -POWER_COST, "ACORN_REASON_POWER"),
    ]


def _do_use_power(s: Table, seat: int, power: str) -> list[Event]:
    if power in POWER_MOVES:
        raise MalformedMove("move.use_power.power", f"{POWER_WORDS[power]} is used with {POWER_MOVES[power]}")
    _power_check(s, seat, power)
    if power in (MOUNTAIN_PATH, TEMPLE_BELL) and not s.deck:
        raise RuleViolation("deck_empty", f"the deck is empty: {POWER_WORDS[power]} has nothing to draw")
    events = _power_pay(s, seat, power)
    if power == MOUNTAIN_PATH:
        drawn = s.draw(MOUNTAIN_PATH_DRAW)
        s.to_hand(seat, drawn)
        events += _drawn(seat, drawn)
    elif power == BAMBOO_BRIDGE:
        s.bamboo = True
    elif power == TEA_HOUSE:
        events.append(s.gain(seat, TEA_HOUSE_GAIN, "ACORN_REASON_TEA_HOUSE"))
    elif power == TEMPLE_BELL:
        s.peek = s.draw(TEMPLE_BELL_PEEK)
        s.phase = TEMPLE
        body = {"seat": seat, "cards": [card_dict(c) for c in s.peek]}
        events.append(Event({"temple_bell_peek": body}, to=(seat,)))
    elif power == RAIN_SHOWER:
        s.rain_pending = [o for o in range(s.players) if o != seat and s.hands[o]]
        if s.rain_pending:
            s.phase = RAIN
    return events


def _do_stone_lantern(s: Table, seat: int, card: int) -> list[Event]:
    _power_check(s, seat, STONE_LANTERN)
    _in_display(s, card)
    events = _power_pay(s, seat, STONE_LANTERN)
    s.display.remove(card)
    s.to_hand(seat, [card])
    events.append(Event({"display_card_taken": {"seat": seat, "card": card_dict(card)}}))
    return events


def _do_koi_pond(s: Table, seat: int, hand_card: int, display_card: int) -> list[Event]:
    _power_check(s, seat, KOI_POND)
    _in_hand(s, seat, hand_card)
    _in_display(s, display_card)
    events = _power_pay(s, seat, KOI_POND)
    s.hands[seat].remove(hand_card)
    s.to_hand(seat, [display_card])
    s.display = sorted([c for c in s.display if c != display_card] + [hand_card], key=sort_key)
    body = {"seat": seat, "hand_card": card_dict(hand_card), "display_card": card_dict(display_card)}
    return [*events, Event({"cards_swapped": body})]


def _do_moss_garden(s: Table, seat: int, card: int) -> list[Event]:
    _power_check(s, seat, MOSS_GARDEN)
    _in_hand(s, seat, card)
    _placeable(s, seat, card)
    events = _power_pay(s, seat, MOSS_GARDEN)
    return [*events, _place(s, seat, card, moss=True)]


def _do_pagoda(s: Table, seat: int, type: int) -> list[Event]:
    _power_check(s, seat, PAGODA)
    st = s.stacks[seat][type]
    if not st:
        raise RuleViolation("stack_empty", f"you have no {LEAF_WORDS[type]} stack")
    if cvalue(st[-1]) == 3:
        raise RuleViolation("stack_closed", f"your {LEAF_WORDS[type]} stack is closed with a torii")
    events = _power_pay(s, seat, PAGODA)
    card = st.pop()
    s.discard.append(card)
    return [*events, Event({"stack_card_removed": {"seat": seat, "card": card_dict(card)}})]


def _do_temple_bell_choose(s: Table, seat: int, keep: int, back_on_top: list[int]) -> list[Event]:
    _phase(s, "temple_bell_choose", TEMPLE)
    if keep not in s.peek:
        raise RuleViolation("card_not_peeked", f"{card_words(keep)} is not among the Temple Bell cards")
    rest = [c for c in s.peek if c != keep]
    if sorted(back_on_top) != sorted(rest):
        raise RuleViolation("temple_bell_return_rest", "back_on_top must list every other peeked card once")
    s.to_hand(seat, [keep])
    s.deck.extend(reversed(back_on_top))
    s.peek = []
    s.phase = MAIN
    returned = Event({"temple_bell_returned": {"seat": seat, "count": len(back_on_top)}})
    return [*_drawn(seat, [keep]), returned]


def _do_discard_card(s: Table, seat: int, card: int) -> list[Event]:
    _phase(s, "discard_card", RAIN, LIMIT)
    _in_hand(s, seat, card)
    s.hands[seat].remove(card)
    s.discard.append(card)
    reason = "DISCARD_REASON_RAIN_SHOWER" if s.phase == RAIN else "DISCARD_REASON_HAND_LIMIT"
    events = [Event({"cards_discarded": {"seat": seat, "cards": [card_dict(card)], "reason": reason}})]
    if s.phase == RAIN:
        s.rain_pending.remove(seat)
        if not s.rain_pending:
            s.phase = MAIN
    elif len(s.hands[seat]) <= HAND_LIMIT:
        events += s.pass_turn()
    return events


def _do_end_turn(s: Table, seat: int) -> list[Event]:
    _phase(s, "end_turn", MAIN)
    if not s.main_done and s.main_possible(seat):
        raise RuleViolation(
            "main_action_required", "take a main action first (collect, play or activate a goal)"
        )
    if len(s.hands[seat]) > HAND_LIMIT:
        s.phase = LIMIT
        body = {"seat": seat, "phase": LIMIT, "hand_size": len(s.hands[seat])}
        return [Event({"phase_changed": body})]
    return s.pass_turn()


HANDLERS = {kind: globals()[f"_do_{kind}"] for kind in MOVE_FIELDS}
