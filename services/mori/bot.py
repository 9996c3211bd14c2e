"""Mori's bot adapter (``services/bots``): determinization, playout policy, evaluation.

What a seat knows beyond its view: every card played in the current round (``card_played`` and
``trick_won`` are public), so with ``history`` the other seats' score piles are known
exactly and a seat that did not follow a suit is known to hold none of it. Without it the
piles are sampled from the unseen cards, with their sizes and X counts as the view shows.
"""

from __future__ import annotations

import math
import random

from services.engine import JsonDict
from services.mori.rules import (
    CLAIM,
    DICE_COUNT,
    FIRST_X_CARD,
    HAND_SEASON_CARDS,
    HAND_X_CARDS,
    OVER,
    PHASE_NAMES,
    PLAY,
    SUIT_NAMES,
    Play,
    State,
    Trick,
    X,
    card_np,
    card_suit,
    card_vp,
    cards_in_play,
    deck_for,
    score_piles,
    trick_winner,
)

PHASE_OF = {name: phase for phase, name in PHASE_NAMES.items()}
SUIT_OF = {name: suit for suit, name in enumerate(SUIT_NAMES)}
PLAYOUT_STEPS = 60
SAMPLING_TRIES = 20


def _play_of(play: JsonDict) -> Play:
    if "card" in play:
        return Play(play["seat"], "card", play["card"]["id"])
    return Play(play["seat"], "die", play["die"]["id"])


class _Seen:
    """What the seat's history of the current round tells: piles and voids of every seat."""

    def __init__(self, players: int) -> None:
        self.piles: list[list[int]] = [[] for _ in range(players)]
        self.voids: list[set[int]] = [set() for _ in range(players)]


def _read_history(history: list[JsonDict] | None, players: int) -> _Seen | None:
    if not history:
        return None
    start = next((i for i in range(len(history) - 1, -1, -1) if "round_started" in history[i]), None)
    if start is None:
        return None
    seen = _Seen(players)
    lead: int | None = None
    for event in history[start + 1 :]:
        if "trick_won" in event:
            won = event["trick_won"]
            seen.piles[won["winner"]] += [p["card"]["id"] for p in won["plays"] if "card" in p]
            lead = None
        elif "card_played" in event or "die_played" in event:
            body = event.get("card_played") or event["die_played"]
            if "card" in body:
                suit = card_suit(body["card"]["id"])
                if lead is not None and suit not in (X, lead):
                    seen.voids[body["seat"]].add(lead)
            after = SUIT_OF.get(body["lead_suit"], X)
            lead = None if after == X else after
    return seen


def determinize(
    view: JsonDict, seat: int, rng: random.Random, history: list[JsonDict] | None = None
) -> State:
    n = view["player_count"]
    phase = PHASE_OF[view["phase"]]
    players = view["players"]
    faces = [X] * DICE_COUNT
    plays = [*view["trick"]["plays"], *view["last_trick"]["plays"]]
    for die in [*view["mat"], *(d for p in players for d in p["aid"] + p["pile_dice"])]:
        faces[die["id"]] = SUIT_OF[die["face"]]
    for play in plays:
        if "die" in play:
            faces[play["die"]["id"]] = SUIT_OF[play["die"]["face"]]
    hand = [c["id"] for c in view["hand"]]
    trick_plays = [_play_of(p) for p in view["trick"]["plays"]] if phase == PLAY else []
    last_trick = None
    if phase == CLAIM:
        last = view["last_trick"]
        last_trick = Trick(
            number=last["number"],
            leader=last["leader"],
            plays=[_play_of(p) for p in last["plays"]],
            winner=last["winner"],
            reason=last["reason"],
        )

    seen = _read_history(history, n)
    if seen is not None and any(len(seen.piles[p]) != players[p]["pile_size"] for p in range(n) if p != seat):
        seen = None  # a history that does not reach this view's round: the view alone
    known_piles: list[list[int]] = seen.piles if seen is not None else [[] for _ in range(n)]
    if seen is None and last_trick is not None and last_trick.winner != seat:
        known_piles[last_trick.winner] = [p.item for p in last_trick.plays if p.kind == "card"]
    known_piles[seat] = [c["id"] for c in players[seat]["pile"]]
    voids = seen.voids if seen is not None else [set() for _ in range(n)]

    known = set(hand) | {p.item for p in trick_plays if p.kind == "card"}
    for pile in known_piles:
        known.update(pile)
    unseen = sorted(cards_in_play(n) - known)
    rng.shuffle(unseen)
    others = [p for p in range(n) if p != seat]
    pile_x = {p: players[p]["pile_x_cards"] - sum(card_suit(c) == X for c in known_piles[p]) for p in others}
    pile_room = {p: players[p]["pile_size"] - len(known_piles[p]) for p in others}
    hand_room = {p: players[p]["hand_size"] for p in others}
    unused_count = len(deck_for(n)) - HAND_SEASON_CARDS * n

    piles = [list(pile) for pile in known_piles]
    hands: list[list[int]] = [[] for _ in range(n)]
    hands[seat] = hand
    # X cards: a seat's own two start in its hand, so one unseen is in its owner's hand or in
    # a pile (the seat's own ones, and those its owner's hand has no room for, in a pile).
    xs = [c for c in unseen if card_suit(c) == X]
    seasons = [c for c in unseen if card_suit(c) != X]
    needed = sum(pile_x.values())
    must = [c for c in xs if _x_owner(c, n) == seat]
    for p in others:
        own = [c for c in xs if _x_owner(c, n) == p]
        must += own[: max(0, len(own) - hand_room[p])]
    free = [c for c in xs if c not in must]
    to_piles = must + free[: max(0, needed - len(must))]
    to_hands = sorted(free[max(0, needed - len(must)) :], key=lambda c: _x_owner(c, n) < 0)
    for card in to_piles:
        target = rng.choice([p for p in others if pile_x[p] > 0] or others)
        pile_x[target] -= 1
        pile_room[target] -= 1
        piles[target].append(card)
    for card in to_hands:
        owner = _x_owner(card, n)
        choices = [owner] if owner in hand_room and hand_room[owner] > 0 else []
        choices = choices or [p for p in others if hand_room[p] > 0] or others
        target = rng.choice(choices)
        hand_room[target] -= 1
        hands[target].append(card)
    # Season cards: piles first (no constraint), then hands respecting known voids.
    for p in others:
        take = max(0, pile_room[p])
        piles[p] += seasons[:take]
        seasons = seasons[take:]
    unused = _deal_hands(seasons, hands, hand_room, voids, unused_count, rng)

    return State(
        players=n,
        seed=rng.getrandbits(62),
        first_player=(view["start_player"] - view["round"] + 1) % n,
        round=view["round"],
        start_player=view["start_player"],
        phase=phase,
        turn=view["turn"],
        trick_leader=view["trick"]["leader"],
        tricks_done=view["tricks_played"],
        mat=[d["id"] for d in view["mat"]],
        faces=faces,
        unused=sorted(unused),
        tricks_won=[p["tricks_won"] for p in players],
        totals=[p["total"] for p in players],
        hands=[h if p == seat else sorted(h) for p, h in enumerate(hands)],
        aids=[[d["id"] for d in p["aid"]] for p in players],
        piles=[sorted(pile) for pile in piles],
        pile_dice=[[d["id"] for d in p["pile_dice"]] for p in players],
        trick_plays=trick_plays,
        round_scores=[list(p["round_scores"]) for p in players],
        last_trick=last_trick,
    )


def _x_owner(card: int, players: int) -> int:
    """The seat whose hand an X card starts in; -1 for the X card shuffled into the deck."""
    owner = (card - FIRST_X_CARD) // HAND_X_CARDS
    return owner if owner < players else -1


def _deal_hands(
    cards: list[int],
    hands: list[list[int]],
    room: dict[int, int],
    voids: list[set[int]],
    unused_count: int,
    rng: random.Random,
) -> list[int]:
    """Deal ``cards`` into the hands' free room (no card of a suit a seat is void in) and the
    unused rest; returns the unused cards. Falls back to ignoring voids when they cannot
    all be kept (a sample that breaks no count is still consistent with the view)."""
    for attempt in range(SAMPLING_TRIES + 1):
        strict = attempt < SAMPLING_TRIES
        free = dict(room)
        dealt: dict[int, list[int]] = {p: [] for p in room}
        unused: list[int] = []
        order = sorted(cards, key=lambda c: sum(card_suit(c) in voids[p] for p in room), reverse=True)
        ok = True
        for card in order:
            seats = [p for p in room if free[p] > 0 and not (strict and card_suit(card) in voids[p])]
            weights = [free[p] for p in seats] + (
                [unused_count - len(unused)] if len(unused) < unused_count else []
            )
            if not weights:
                ok = False
                break
            pick = rng.choices(range(len(weights)), weights)[0]
            if pick == len(seats):
                unused.append(card)
            else:
                dealt[seats[pick]].append(card)
                free[seats[pick]] -= 1
        if ok:
            for p, extra in dealt.items():
                hands[p] += extra
            return unused
        rng.shuffle(cards)
    raise AssertionError("unreachable: the last attempt ignores voids")


# --------------------------------------------------------------------------- playouts


def _value(card: int) -> float:
    """A card's worth in a score pile (X cards: the majority rule cuts both ways)."""
    return -0.5 if card_suit(card) == X else float(card_vp(card) - card_np(card))


def playout_move(state: State, seat: int, rng: random.Random) -> JsonDict:
    moves = state.legal_moves(seat)
    if len(moves) == 1 or rng.random() < 0.1:
        return rng.choice(moves)
    if state.phase == CLAIM:
        suited = [m for m in moves if state.faces[m["claim_die"]["die"]] != X]
        return rng.choice(suited or moves)
    plays = state.trick_plays
    last = len(plays) == state.players - 1
    others = sum(_value(p.item) for p in plays if p.kind == "card")
    best, best_score = moves[0], -math.inf
    for move in moves:
        kind, item = (
            ("card", move["play_card"]["card"]) if "play_card" in move else ("die", move["play_die"]["die"])
        )
        winner, _, _ = trick_winner(state.trick_leader, [*plays, Play(seat, kind, item)], state.faces)
        own = _value(item) if kind == "card" else 0.0
        score = (others + 0.3) * (1.0 if last else 0.5) if winner == seat else -own
        if kind == "die":
            score -= 0.4  # a die kept is a later trick's cheap winner
        score += rng.random() * 1.5
        if score > best_score:
            best, best_score = move, score
    return best


def evaluate(state: State, seat: int) -> float:
    """The seat's lead over the best other seat, as if the round ended now, squashed to [0, 1]."""
    if state.phase == OVER:
        totals = state.totals
    else:
        piles = [state.piles[p] + state.hands[p] for p in range(state.players)]
        dice = [state.pile_dice[p] + state.aids[p] for p in range(state.players)]
        results = score_piles(piles, dice, state.faces)
        totals = [state.totals[p] + results[p]["score"] for p in range(state.players)]
    best_other = max(t for p, t in enumerate(totals) if p != seat)
    return 1.0 / (1.0 + math.exp(-(totals[seat] - best_other) / 3.0))
