"""What a More search bot needs from the game: a full state made from one seat's view
(``determinize``, in ``services.more.sample``), a cheap sensible move for playouts
(``playout_move``) and the moves worth searching (``candidate_moves``), which the search compares
on the same samples (``SAME_SAMPLES``); in the round's last turns, played out to its end.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

from services.engine import JsonDict
from services.more.cards import DECK_SIZE, identity, is_pankal, meld_points, natural_at, points
from services.more.rules import HAND_SIZE, OPENING_HALVES, PLAYERS, State
from services.more.sample import determinize

__all__ = ["candidate_moves", "determinize", "evaluate", "playout_move", "playout_steps", "round_of"]

IDENTITY = [identity(card) for card in range(DECK_SIZE)]
POINTS = [points(card) for card in range(DECK_SIZE)]
PANKAL = [is_pankal(card) for card in range(DECK_SIZE)]
# per rank, the ranks within two of it (not itself), as a bit mask
NEIGHBOURS = [sum(1 << r for r in range(rank - 2, rank + 3) if r != rank and r >= 0) for rank in range(15)]


# ---------------------------------------------------------------- playouts

# A Pair partner takes a pile of up to SMALL_PILE cards whenever he can. A larger one fills his
# hand with cards that count against him alone, while the partner he must outscore shares the
# melds, so he takes it only against a Solo who takes piles (one has in the round so far) and is
# not far behind: the Solo's melds, half as much again, within PILE_MARGIN points of the Pair's.
# A pile the Pair leaves such a Solo is his: with partners who took only small piles the Solo
# won nearly every one-round match. With fewer than LATE_PILE cards left to draw a partner takes
# only a pile of one card (the others would stay in his hand when the round ends).
SMALL_PILE = 6
PILE_MARGIN = 150
LATE_PILE = 25
# Below this many cards left to draw (the draw pile and the More piles that will refill it),
# discards give up the dearest cards rather than the cheapest, and the Solo melds his pankals.
LATE = 25
PANKAL_MELD_SIZE = 5  # a meld this long takes a pankal at any time (a biriba is 7)
# A playout stops after a few turns of every seat and the position is scored by ``evaluate``
# (the searches that remain, ``candidate_moves``, weigh melding steps, whose worth shows soon).
PLAYOUT_STEPS = 45
EVALUATE_SCALE = 150.0  # points of lead that make a win about three times likelier than a loss
LEAD_BOUND = 2000.0  # a lead past it changes nothing (the curve is flat), and exp stays finite
MELDS_WEIGHED = 6  # melding steps of each kind the search weighs while the turn must meld
# A move's worth is small beside the deal's: the search compares its candidates on the same samples.
SAME_SAMPLES = True
# With this many cards or fewer left to draw, a playout runs to the end of the round, which
# scores what every hand still holds: a deep search (``hard``) then weighs the first discards
# and, for every seat, drawing against taking the discard pile (the last turns decide who
# holds the least); ``medium`` leaves those moves to the policy.
ENDGAME = 20
ENDGAME_DISCARDS = 8  # the discards weighed there, in the policy's order (a hand may hold dozens)
DEALT_TO_DRAW = DECK_SIZE - PLAYERS * HAND_SIZE - 1  # left to draw when a round has just been dealt


def playout_steps(state: State) -> int | None:
    """``PLAYOUT_STEPS``, or no limit in the endgame (a playout still stops where its round ends)."""
    return None if _to_draw(state) <= ENDGAME else PLAYOUT_STEPS


def round_of(state: State) -> int:
    return state.round


def playout_move(state: State, seat: int, rng: random.Random | None) -> JsonDict:
    """A cheap sensible move: bid nothing; take the discard pile when its top card can be melded
    (a Pair partner as ``_wants_pile`` says),
    else draw; meld what the hand allows, one step at a time in ``_meld_rank``'s order (the Solo
    keeps his pankals back while the round is young); then discard as ``_discard_key`` ranks the
    hand (equal cards told apart by ``rng``, or by card id without it)."""
    phase = state.phase
    if phase == "bidding":
        return {"bid": {"amount": 0}}
    if phase == "draw":
        if _wants_pile(state, seat) and {"take_pile": {}} in state.legal_moves(seat):
            return {"take_pile": {}}
        return {"draw": {}}
    t = state.t
    if t.opening and t.halves < OPENING_HALVES:
        # the 7.5 minimum binds: the timeout policy melds only what reaches it
        move = state.timeout_move(seat)
        if "discard" not in move or len(state.hands[seat]) == 1:
            return move
        return {"discard": {"card": _best_discard(state, seat, rng)}}
    moves = state.legal_moves(seat)
    best = _best_meld_step(state, seat, moves)
    if best is not None:
        return best
    if any("discard" in m for m in moves):
        if len(state.hands[seat]) == 1:
            return {"discard": {"card": state.hands[seat][0]}}
        return {"discard": {"card": _best_discard(state, seat, rng)}}
    # no discard allowed yet (a taken pile's top card): any melding step, else take it back
    step = next((m for m in moves if "lay_meld" in m or "add_to_meld" in m), None)
    return step or next((m for m in moves if "take_back" in m), moves[0])


def _best_meld_step(state: State, seat: int, moves: list[JsonDict]) -> JsonDict | None:
    """The melding step ``seat`` makes now, by ``_meld_rank`` (None: none worth making). A Pair
    partner never melds down to his last card while his side's More pile waits: emptying his
    hand would take the pile's eleven cards into it, which count against him alone while his
    partner, whom he must outscore, shares the melds and the bonus of taking it."""
    late = _pankals_now(state, seat)
    keep = 2 if seat != state.solo and state.more_state["pair"] == "waiting" else 0
    left = len(state.hands[seat])
    best: JsonDict | None = None
    best_rank = 0
    for move in moves:
        if "discard" in move or "take_back" in move:
            continue
        if keep and left - (3 if "lay_meld" in move else 1) < keep:
            continue
        rank_ = _meld_rank(state, move, late)
        if rank_ > best_rank:
            best, best_rank = move, rank_
    return best


def _to_draw(state: State) -> int:
    """The cards left to draw in the current round: the draw pile and the More piles that will refill it."""
    waiting = state.more_state
    return len(state.draw) + sum(len(pile) for side, pile in state.more.items() if waiting[side] == "waiting")


def _pankals_now(state: State, seat: int) -> bool:
    """Whether ``seat`` melds a pankal anywhere it fits: a Pair partner always (what he holds when
    the round ends counts against him alone, and his partner is one of the seats he must
    outscore), the Solo once the round nears its end."""
    return seat != state.solo or _to_draw(state) < LATE


def _wants_pile(state: State, seat: int) -> bool:
    if seat == state.solo:
        return True
    if _to_draw(state) < LATE_PILE:
        return len(state.discard) <= 1
    if len(state.discard) <= SMALL_PILE:
        return True
    if not getattr(state, "solo_takes_piles", False):
        return False
    melded = {"solo": 0, "pair": 0}
    for meld in state.melds:
        melded[meld["side"]] += meld_points(meld)
    return 3 * melded["solo"] + 2 * PILE_MARGIN >= 2 * melded["pair"]


def _meld_rank(state: State, move: JsonDict, late: bool) -> int:
    """How much a melding step is worth making now (0: not now): an addition before a new meld,
    to the longest meld first; a pankal (it makes the meld dirty: half the biriba bonus) only
    when ``late`` (``_pankals_now``) or onto a meld near a biriba."""
    if "add_to_meld" in move:
        body = move["add_to_meld"]
        meld = state.melds[body["meld"]]
        size = len(meld["cards"])
        card = body["card"]
        if PANKAL[card] and not _natural_add(meld, card, body["low_end"]):
            return 20 + size if late or size >= PANKAL_MELD_SIZE else 0
        return 40 + size
    if "lay_meld" in move:
        if _wild_lay(move["lay_meld"]["cards"]):
            return 10 if late else 0
        return 30
    return 0


def _natural_add(meld: dict[str, Any], card: int, low_end: bool) -> bool:
    if meld["kind"] != "run":
        return False
    pos = meld["low"] - 1 if low_end else meld["low"] + len(meld["cards"])
    return natural_at(card, meld["suit"], pos)


def _wild_lay(cards: list[int]) -> bool:
    """Whether a 3-card run (low to high) holds a pankal standing in for another card (a 2 of
    the run's suit between its ace and its 3 is natural)."""
    for i, card in enumerate(cards):
        if PANKAL[card]:
            if i != 1 or card >= 104:
                return True
            suit_ = IDENTITY[card][1]
            return not (IDENTITY[cards[0]] == (1, suit_) and IDENTITY[cards[2]] == (3, suit_))
    return False


def _best_discard(state: State, seat: int, rng: random.Random | None) -> int:
    hand = state.hands[seat]
    key = _discard_key(state, seat, rng)
    return min((c for c in hand if c != state.t.top), key=key)


def _feeds(state: State, seat: int) -> int:
    """The next seat's wanted cards (a bit per suit * 16 + rank, as in ``_discard_key``), when
    it is not a partner: the ends of its side's runs."""
    nxt = (seat + 1) % 3
    side = "solo" if nxt == state.solo else "pair"
    if side == ("solo" if seat == state.solo else "pair"):
        return 0
    wanted = 0
    for meld in state.melds:
        if meld["side"] == side and meld["kind"] == "run":
            low, high, suit_ = meld["low"] - 1, meld["low"] + len(meld["cards"]), meld["suit"]
            for pos in (low, high):
                if 1 <= pos <= 14:
                    wanted |= 1 << (suit_ * 16 + (1 if pos == 14 else pos))
    return wanted


def _discard_key(
    state: State, seat: int, rng: random.Random | None
) -> Callable[[int], tuple[bool, bool, bool, int, float]]:
    """No pankal while another card will do, nor a card the next opponent can add to a meld
    (he would take the pile), a card with no neighbour of its suit in the hand before one that
    may still join a run, the cheapest first but the dearest once the draw pile runs low (what
    is left in a hand counts against it)."""
    hand = state.hands[seat]
    feeds = _feeds(state, seat)
    late = _to_draw(state) < LATE
    ranks = [0] * 5  # per suit (a joker's -1 last), a bit per rank held
    for card in hand:
        rank_, suit_ = IDENTITY[card]
        ranks[suit_] |= 1 << rank_

    last = late and len(hand) <= 2 and seat != state.solo

    def key(card: int) -> tuple[bool, bool, bool, int, float]:
        if last:  # the card kept is what the hand will count at the end: the cheapest
            return (False, False, False, -POINTS[card], rng.random() if rng else card)
        rank_, suit_ = IDENTITY[card]
        near = suit_ >= 0 and bool(ranks[suit_] & NEIGHBOURS[rank_])
        fed = suit_ >= 0 and bool(feeds >> (suit_ * 16 + rank_) & 1)
        cost = POINTS[card]
        return (PANKAL[card], fed, near, -cost if late else cost, rng.random() if rng else card)

    return key


def evaluate(state: State, seat: int) -> float:
    """How likely ``seat`` looks to win: its lead over the best other seat with the round scored
    as it stands, through a logistic curve."""
    if state.is_over():
        winners = state.winners()
        return 1.0 / len(winners) if seat in winners else 0.0
    totals = state.totals
    # A playout stopped where its round ended sees the next one just dealt: the totals say it all.
    if state.solo >= 0 and not (
        state.phase == "draw" and not state.melds and _to_draw(state) == DEALT_TO_DRAW
    ):
        totals = state.round_result(-1)["totals"]
    lead = totals[seat] - max(t for p, t in enumerate(totals) if p != seat)
    return 1.0 / (1.0 + math.exp(-max(-LEAD_BOUND, min(LEAD_BOUND, lead)) / EVALUATE_SCALE))


def candidate_moves(state: State, seat: int, rng: random.Random, deep: bool = True) -> list[JsonDict]:
    """The moves worth searching, from the seat's hand, the public table and the events only:
    every bid; drawing and taking the discard pile, when both are allowed, for the Solo, for a
    Pair partner once the Solo has taken a pile in the round so far, and for everyone in a deep
    search's endgame (``ENDGAME``); while the 7.5 minimum binds or a taken pile's top card must
    still be melded, the first melding steps of each kind and taking back; the policy's move and
    the first other discards in a deep search's endgame; everywhere else the playout policy's
    move alone.
    Which pile to take decides who melds the most. A Pair partner facing a Solo who takes no
    piles (the ``policy`` level's) does best with the policy's draws, which the playouts, whose
    Solo takes every pile, would talk him out of. Searched discards lost to the policy's before
    the endgame: a playout cut off a few turns on counts the cards in hand against their holder,
    so it gives up the dear cards that later make the melds. In the endgame the playouts reach
    the round's end, where that count is the score."""
    moves = state.legal_moves(seat)
    if state.phase == "bidding":
        return moves
    endgame = deep and _to_draw(state) <= ENDGAME
    if state.phase == "play":
        t = state.t
        if (t.opening and t.halves < OPENING_HALVES) or not any("discard" in m for m in moves):
            return _first_steps(moves)
    policy = playout_move(state, seat, None)
    if state.phase == "draw":
        weighed = endgame or seat == state.solo or getattr(state, "solo_takes_piles", False)
        if not weighed or {"take_pile": {}} not in moves:
            return [policy]
        return [policy, {"draw": {}} if "take_pile" in policy else {"take_pile": {}}]
    if state.phase == "play" and endgame:
        return [policy, *_other_discards(state, seat, moves, policy)]
    return [policy]


def _other_discards(state: State, seat: int, moves: list[JsonDict], policy: JsonDict) -> list[JsonDict]:
    """The first ``ENDGAME_DISCARDS`` discards in the policy's order, one of each card (two copies
    are the same card), but the policy's own move."""
    key = _discard_key(state, seat, None)
    cards = sorted((m["discard"]["card"] for m in moves if "discard" in m), key=key)
    seen: set[tuple[int, int]] = set()
    discards = []
    for card in cards:
        if IDENTITY[card] not in seen and len(seen) < ENDGAME_DISCARDS:
            seen.add(IDENTITY[card])
            if policy != {"discard": {"card": card}}:
                discards.append({"discard": {"card": card}})
    return discards


def _first_steps(moves: list[JsonDict]) -> list[JsonDict]:
    """The first few melding steps of each kind, taking back and the other moves listed."""
    wanted: list[JsonDict] = []
    counts = {"lay_meld": 0, "add_to_meld": 0}
    for move in moves:
        kind = next(iter(move))
        if kind in counts:
            if counts[kind] < MELDS_WEIGHED:
                wanted.append(move)
            counts[kind] += 1
        else:
            wanted.append(move)
    return wanted
