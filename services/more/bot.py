"""What a More search bot needs from the game: a full state made from one seat's view
(``determinize``), a cheap sensible move for playouts (``playout_move``) and the moves worth
searching (``candidate_moves``), which the search compares on the same samples (``SAME_SAMPLES``).

A seat sees the melds, the discard pile, every hand's size and its own hand; it does not see
the other hands, the draw pile or the More piles. The events of the round tell it more: the
cards of a discard pile another seat took are in that seat's hand until it melds or discards
them, and this turn's melding (what ``take_back`` would return). ``determinize`` keeps what the
events tell and deals every other unseen card at random to the other hands, the More piles and
the draw pile; the match seed (the future refills and deals) is sampled too. The sample also
notes whether the Solo has taken a discard pile in the round so far (the playouts ask).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

from services.engine import JsonDict
from services.more.cards import DECK_SIZE, SUIT_NAMES, identity, is_pankal, meld_points, natural_at, points
from services.more.rules import OPENING_HALVES, PHASES, PILE_STATES, Options, State, Turn, Undo

IDENTITY = [identity(card) for card in range(DECK_SIZE)]
POINTS = [points(card) for card in range(DECK_SIZE)]
PANKAL = [is_pankal(card) for card in range(DECK_SIZE)]
# per rank, the ranks within two of it (not itself), as a bit mask
NEIGHBOURS = [sum(1 << r for r in range(rank - 2, rank + 3) if r != rank and r >= 0) for rank in range(15)]
PHASE_KEYS = {proto: key for key, proto in PHASES.items()}
PILE_KEYS = {proto: key for key, proto in PILE_STATES.items()}
TURN_ENDS = ("discarded", "round_started", "dealt")


# ---------------------------------------------------------------- determinization


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
MELDS_WEIGHED = 6  # melding steps of each kind the search weighs while the turn must meld
# A move's worth is small beside the deal's: the search compares its candidates on the same samples.
SAME_SAMPLES = True


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
    if state.solo >= 0:
        totals = state.round_result(-1)["totals"]
    lead = totals[seat] - max(t for p, t in enumerate(totals) if p != seat)
    return 1.0 / (1.0 + math.exp(-max(-2000.0, min(2000.0, lead)) / EVALUATE_SCALE))


def candidate_moves(state: State, seat: int, rng: random.Random) -> list[JsonDict]:
    """The moves worth searching, from the seat's hand, the public table and the events only:
    every bid; drawing and taking the discard pile, when both are allowed, for the Solo and, once
    the Solo has taken a pile in the round so far, for a Pair partner; while the 7.5 minimum binds
    or a taken pile's top card must still be melded, the first melding steps of each kind and
    taking back; everywhere else the playout policy's move alone.
    Which pile to take decides who melds the most. A Pair partner facing a Solo who takes no
    piles (the ``policy`` level's) does best with the policy's draws, which the playouts, whose
    Solo takes every pile, would talk him out of. Searched discards lost to the policy's: a
    playout cut off a few turns on counts the cards in hand against their holder, so it gives up
    the dear cards that later make the melds."""
    moves = state.legal_moves(seat)
    if state.phase == "bidding":
        return moves
    if state.phase == "draw":
        policy = playout_move(state, seat, None)
        weighed = seat == state.solo or getattr(state, "solo_takes_piles", False)
        if not weighed or {"take_pile": {}} not in moves:
            return [policy]
        return [policy, {"draw": {}} if "take_pile" in policy else {"take_pile": {}}]
    if state.phase == "play":
        t = state.t
        if (t.opening and t.halves < OPENING_HALVES) or not any("discard" in m for m in moves):
            return _first_steps(moves)
    return [playout_move(state, seat, None)]


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
