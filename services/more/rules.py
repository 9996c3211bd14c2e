"""More: the three-player Biriba variant (the Solo against the Pair). Pure rules engine.

Rules: ``docs/rules/more.md`` (how this engine reads ``shared/rules/original/more.txt``).
A turn is built from primitive steps: ``draw`` or ``take_pile``; then any number of
``lay_meld`` (legal-move lists offer 3-card melds) and ``add_to_meld`` (one card at
one end); ``take_back`` undoes this turn's melding; ``discard`` ends the turn.
Melds of a turn stay tentative until the discard (or a More-pile pickup).
"""

from __future__ import annotations

from typing import Self

import msgspec

from services.engine import (
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
from services.more import take
from services.more.cards import (
    CARD_DICTS,
    DECK_SIZE,
    HALF_POINTS,
    Meld,
    extend,
    half_points,
    identity,
    is_biriba,
    is_dirty,
    is_pankal,
    meld_view,
    name,
    parse_meld,
    points,
)
from services.more.moves import MAX_BID, MOVE_FIELDS, check_options, parse_move
from services.more.scoring import match_winners, score_round
from services.more.steps import (
    MeldFacts,
    SideMelds,
    Table,
    addition_steps,
    lone_card,
    meld_facts,
    three_card_steps,
)

PLAYERS = 3
HAND_SIZE = 11
MORE_PILE_SIZE = 11
TARGET = 3100
THRESHOLD = 1500  # "above 1500": strictly greater
OPENING_HALVES = 15  # 7.5 points
KNOWN_MELDS = 64  # melds whose facts a state remembers

GAME = GameInfo(
    name="more",
    title="More",
    package="more",
    service="More",
    min_players=PLAYERS,
    max_players=PLAYERS,
    move_cap=60_000,
    options=(
        OptionInfo("bid_for_solo", "bool", "Bid-for-Solo variant: sealed bids of 0-3 choose the Solo", False),
        OptionInfo("max_rounds", "uint32", "0: play to 3100; N > 0: the match also ends after N rounds", 0),
    ),
)

PHASES = {"bidding": "PHASE_BIDDING", "draw": "PHASE_DRAW", "play": "PHASE_PLAY", "over": "PHASE_OVER"}
PILE_STATES = {
    "waiting": "PILE_STATE_WAITING",
    "taken": "PILE_STATE_TAKEN",
    "drawn": "PILE_STATE_IN_DRAW_PILE",
}
ROLES = {"solo": "ROLE_SOLO", "pair": "ROLE_PAIR"}


class Options(msgspec.Struct, kw_only=True):
    bid_for_solo: bool = False
    max_rounds: int = 0  # 0: play to the target


class Undo(msgspec.Struct, kw_only=True):
    """What take_back restores: the turn's start."""

    hand: list[int]
    melds: list[Meld]
    discard: list[int] | None  # the discard pile, if the turn took it


class Turn(msgspec.Struct, kw_only=True):
    """The turn player's bookkeeping of this turn (a fresh one each turn)."""

    top: int = -1  # the taken discard pile's top card (must be melded this turn)
    locked: list[int] = msgspec.field(default_factory=list)  # the rest of that pile: not meldable this turn
    pile_taken: bool = False
    halves: int = 0  # going-down value melded this turn, in half points
    opening: bool = False  # the 7.5 rule applies to this turn's melds
    melded: bool = False
    undo: Undo | None = None
    closed: bool = False  # take_back used: no more melding this turn
    no_take: bool = False  # the pile was given back: draw instead


class State(EngineState, dict=True):
    """One match. The fields are its stored form; the instance ``__dict__`` holds only caches
    worked out from them (never stored, made again when needed)."""

    seed: int
    options: Options
    totals: list[int] = msgspec.field(name="scores")  # the match scores
    round: int
    dealer: int
    solo: int  # -1 before the deal
    solo_history: list[int]
    phase: str  # a key of PHASES
    bids: list[int]  # -1: not bid yet
    revealed_bids: list[int]
    hands: list[list[int]]
    draw: list[int]  # the top card last
    discard: list[int]  # the top card last
    more: dict[str, list[int]]  # per side ("pair", "solo"): its More pile
    more_state: dict[str, str]  # per side: a key of PILE_STATES
    melds: list[Meld]  # the table's melds (cards.py), each dict replaced, never changed in place
    down: list[bool]  # per seat: has gone down in the current round
    exempt: dict[str, bool]  # per side: someone went down with 7.5, the minimum binds nobody
    turn: int
    t: Turn
    rounds: list[JsonDict]  # score_round's results
    winner_seats: list[int] = msgspec.field(name="winners")

    def __post_init__(self) -> None:
        self._take: bool | None = None  # may the turn player take the pile (until the next move)
        # meld_facts of the melds seen (melds are never changed in place: keyed by identity,
        # each entry holding its meld so that the id stays its own)
        self._facts: dict[int, tuple[JsonDict, MeldFacts]] = {}
        # per side, (index, meld, facts) of its melds, for the meld list they were read from
        # (the list is replaced, never changed in place, whenever the melds change)
        self._sides: tuple[list[JsonDict], dict[str, SideMelds]] | None = None
        # per seat, the Table of the cards it may meld (None: made when next asked), kept up to
        # date by the moves that change the hand
        self._tables: list[Table | None] = [None] * PLAYERS

    # ---- construction and snapshots ----

    @classmethod
    def new(cls, players: int, seed: int, options: JsonDict) -> Self:
        GAME.check_players(players)
        state = cls._blank(seed, Options(**check_options(options)))
        state._start_round()
        return state

    @classmethod
    def _blank(cls, seed: int, options: Options) -> Self:
        """A match before its first round."""
        return cls(
            seed=seed,
            options=options,
            totals=[0] * PLAYERS,
            round=0,
            dealer=rng(seed, "dealer").randrange(PLAYERS),
            solo=-1,
            solo_history=[],
            phase="draw",
            bids=[-1] * PLAYERS,
            revealed_bids=[],
            hands=[[] for _ in range(PLAYERS)],
            draw=[],
            discard=[],
            more={"pair": [], "solo": []},
            more_state={"pair": "waiting", "solo": "waiting"},
            melds=[],
            down=[False] * PLAYERS,
            exempt={"pair": False, "solo": False},
            turn=0,
            t=Turn(),
            rounds=[],
            winner_seats=[],
        )

    @classmethod
    def from_dict(cls, data: JsonDict) -> Self:
        if "down" not in data:  # stored before the 7.5 bookkeeping: a side with melds went down with 7.5
            melds = data["melds"]
            sides = {side: any(m["side"] == side for m in melds) for side in ("pair", "solo")}
            data = {**data, "down": [False] * PLAYERS, "exempt": sides}
        return super().from_dict(data)

    # ---- queries ----

    def side(self, seat: int) -> str:
        return "solo" if seat == self.solo else "pair"

    def active_seats(self) -> list[int]:
        phase = self.phase
        if phase == "over":
            return []
        if phase == "bidding":
            return [p for p in range(PLAYERS) if self.bids[p] < 0]
        return [self.turn]

    def is_over(self) -> bool:
        return self.phase == "over"

    def scores(self) -> list[int]:
        return list(self.totals)

    def winners(self) -> list[int]:
        return list(self.winner_seats)

    def legal_moves(self, seat: int) -> list[JsonDict]:
        s = self
        phase = s.phase
        if phase == "bidding":
            if seat not in self.active_seats():
                return []
            return [{"bid": {"amount": a}} for a in range(MAX_BID + 1)]
        if seat != s.turn or phase == "over":
            return []
        if phase == "draw":
            # _validate's take_pile checks (the turn player in the draw phase)
            if s.discard and not s.t.no_take:
                if self._take is None:
                    self._take = self._top_meldable(seat, s.discard[-1])
                if self._take:
                    return [{"draw": {}}, {"take_pile": {}}]
            return [{"draw": {}}]
        t = s.t
        hand = s.hands[seat]
        moves = [] if t.closed else self._melding_steps(seat, hand, t)
        if self._can_take_back():
            moves.append({"take_back": {}})
        if self._may_discard(seat, hand, t):
            moves += [{"discard": {"card": c}} for c in sorted(hand, key=_sort_key)]
        return moves

    def _may_discard(self, seat: int, hand: list[int], t: Turn) -> bool:
        """Every card's discard is allowed or refused alike (``_validate``'s discard checks)."""
        if t.top >= 0 and t.top in hand:
            return False
        if t.opening and 0 < t.halves < OPENING_HALVES:
            return False
        return len(hand) != 1 or bool(self._legal_if(seat, "discard", {"card": hand[0]}))

    def _melding_steps(self, seat: int, hand: list[int], t: Turn) -> list[JsonDict]:
        """The listed lay_meld (3-card) and add_to_meld steps. Generated legal by construction;
        a step that would leave fewer than two cards in the hand is validated in full."""
        s = self
        ace_ok = s.totals[seat] > THRESHOLD
        table = self._table(seat)
        moves = three_card_steps(table, ace_ok)
        if len(hand) < 5:  # a 3-card meld would leave fewer than two cards
            moves = [m for m in moves if self._legal_if(seat, "lay_meld", m["lay_meld"])]
        adds = addition_steps(self._side_melds("solo" if seat == s.solo else "pair"), table, ace_ok)
        if len(hand) < 3:  # an addition would leave fewer than two cards
            adds = [m for m in adds if self._legal_if(seat, "add_to_meld", m["add_to_meld"])]
        moves += adds
        return moves

    def _table(self, seat: int) -> Table:
        """The Table of the cards the turn player ``seat`` may meld: his hand less a taken pile's
        locked cards."""
        table = self._tables[seat]
        hand = self.hands[seat]
        locked = self.t.locked
        if table is None or table.size != len(hand) - len(locked):
            if locked:
                locked_set = set(locked)
                hand = [c for c in hand if c not in locked_set]
            table = self._tables[seat] = Table(hand)
        return table

    def _hand_gained(self, seat: int, card: int) -> None:
        table = self._tables[seat]
        if table is not None:
            table.add(card)

    def _hand_lost(self, seat: int, card: int) -> None:
        table = self._tables[seat]
        if table is not None:
            table.remove(card)

    def _side_melds(self, side: str) -> SideMelds:
        """``side``'s melds on the table, in table order."""
        melds = self.melds
        known = self._sides
        if known is None or known[0] is not melds:
            known = self._sides = (melds, {})
        entries = known[1].get(side)
        if entries is None:
            entries = known[1][side] = SideMelds(
                [(i, m, self._meld_facts(m)) for i, m in enumerate(melds) if m["side"] == side]
            )
        return entries

    def _place_meld(self, index: int, meld: Meld) -> MeldFacts:
        """Put ``meld`` on the table at ``index`` (a new one at the end, or a grown one in place of
        the meld it grew from), in a new meld list, keeping ``_side_melds``' answer up to date.
        Returns the meld's facts."""
        old = self.melds
        melds = self.melds = old[:]
        if index == len(old):
            melds.append(meld)
        else:
            melds[index] = meld
        facts = self._meld_facts(meld)
        known = self._sides
        if known is None or known[0] is not old:
            return facts  # worked out when next asked
        entries = known[1].get(meld["side"])  # the other side's stay as they are
        if entries is not None:
            entries.place((index, meld, facts))
        self._sides = (melds, known[1])
        return facts

    def _meld_facts(self, meld: JsonDict) -> MeldFacts:
        known = self._facts.get(id(meld))
        if known is not None and known[0] is meld:
            return known[1]
        if len(self._facts) > KNOWN_MELDS:  # mostly melds of earlier turns by now
            self._facts.clear()
        facts = meld_facts(meld)
        self._facts[id(meld)] = (meld, facts)
        return facts

    def _legal_if(self, seat: int, kind: str, body: JsonDict) -> list[JsonDict]:
        """``[move]`` if the move is allowed now, else ``[]``."""
        try:
            self._validate(seat, kind, body)
        except RuleViolation:
            return []
        return [{kind: body}]

    def opening_events(self) -> list[Event]:
        # Round 1's set-up depends only on the seed and the options: it is made again on a
        # fresh match, so the events are the same whenever they are asked for (the ones a later
        # round's start emits: round_started, then roles, the deal and each seat's hand).
        s = self
        fresh = type(self)._blank(s.seed, s.options)
        return fresh._start_round()

    def timeout_move(self, seat: int) -> JsonDict:
        """A plain, safe turn: bid 0; draw (never take the pile); in the play phase meld what the
        hand allows, one listed step at a time (additions to the side's melds first, then new
        melds, each the first listed), then discard the least valuable card (lowest points, then
        a non-pankal, then the lowest id). Melding makes the scores grow, so a match of timeouts
        reaches the target and ends. A player the 7.5 minimum binds melds only if that whole
        melding reaches 7.5; if no discard is allowed, the turn's melding is taken back first."""
        moves = self.legal_moves(seat)
        if not moves:
            raise NotYourTurn(seat)
        for kind in ("bid", "draw"):
            for move in moves:
                if kind in move:
                    return move
        step = _first_melding_step(moves)
        t = self.t
        opens = not t.opening or t.halves >= OPENING_HALVES
        if step is not None and (opens or self._melding_opens(seat)):
            return step
        discards = [m["discard"]["card"] for m in moves if "discard" in m]
        if discards:
            card = min(discards, key=lambda c: (points(c), is_pankal(c), c))
            return {"discard": {"card": card}}
        return next((m for m in moves if "take_back" in m), moves[0])

    def _melding_opens(self, seat: int) -> bool:
        """Does the timeout policy's melding, played out from here on a copy, reach 7.5?"""
        trial = self.from_dict(self.to_dict())
        while True:
            step = _first_melding_step(trial.legal_moves(seat))
            if step is None:
                return trial.t.halves >= OPENING_HALVES
            trial.apply(seat, step)
            if trial.t.halves >= OPENING_HALVES:
                return True

    # ---- moves ----

    def apply(self, seat: int, move: JsonDict) -> list[Event]:
        kind, body = parse_move(move)
        made = self._validate(seat, kind, body)
        self._take = None
        if made is not None:
            return _PLACE[kind](self, seat, body, made)
        return _APPLY[kind](self, seat, body)

    def _validate(self, seat: int, kind: str, b: JsonDict) -> Meld | None:
        """Raise unless ``seat`` may make this move now; mutates nothing. A melding step's
        result: the new meld (no side yet) or the grown one."""
        s = self
        phase = s.phase
        if (seat != s.turn or (phase != "play" and phase != "draw")) and seat not in self.active_seats():
            raise NotYourTurn(seat)
        if kind == "add_to_meld" and b["meld"] >= len(s.melds):
            raise MalformedMove("move.add_to_meld.meld", f"there is no meld {b['meld']}")
        if phase == "bidding":
            if kind != "bid":
                raise RuleViolation("bid_first", "every player bids 0-3 for the Solo before the deal")
            return None
        if kind == "bid":
            raise RuleViolation("no_bidding", "bids are made only at the start of a Bid-for-Solo round")
        # the turn player, in the draw or the play phase
        if phase == "draw":
            if kind != "draw" and kind != "take_pile":
                raise RuleViolation("draw_first", "start your turn by drawing or taking the discard pile")
        elif kind == "draw" or kind == "take_pile":
            raise RuleViolation("already_drew", "you have already drawn this turn")
        return _CHECK[kind](self, seat, b)

    # the checks of each kind of move by the turn player (_validate's rest)

    def _check_draw(self, seat: int, b: JsonDict) -> None:
        return None

    def _check_take_pile(self, seat: int, b: JsonDict) -> None:
        s = self
        if not s.discard:
            raise RuleViolation("pile_empty", "the discard pile is empty")
        if s.t.no_take:
            raise RuleViolation("pile_given_back", "you gave the discard pile back this turn: draw")
        if self._take is None:
            self._take = self._top_meldable(seat, s.discard[-1])
        if not self._take:
            raise RuleViolation(
                "take_pile_meld_top",
                f"you may take the discard pile only if you can meld its top card "
                f"({name(s.discard[-1])}) this turn",
            )

    def _check_take_back(self, seat: int, b: JsonDict) -> None:
        if not self._can_take_back():
            raise RuleViolation("nothing_to_take_back", "there is nothing of this turn to take back")

    def _check_discard(self, seat: int, b: JsonDict) -> None:
        t = self.t
        hand = self.hands[seat]
        card = b["card"]
        self._check_in_hand(seat, card, "discard")
        if t.top >= 0 and t.top in hand:
            raise RuleViolation(
                "meld_top_card",
                f"the top card of the discard pile you took ({name(t.top)}) must be melded this "
                "turn before you discard",
            )
        self._check_opening(t.halves)
        if len(hand) == 1:
            side = self.side(seat)
            self._check_exit(self._side_melds(side).melds(), side, 0, True)

    def _check_lay_meld(self, seat: int, b: JsonDict) -> Meld:
        t = self.t
        if t.closed:
            raise RuleViolation("melding_closed", "you took back your melds: discard to end your turn")
        hand = self.hands[seat]
        cards = b["cards"]
        for card in cards:
            self._check_in_hand(seat, card, "lay_meld")
        meld, rule = parse_meld(cards)
        if meld is None:
            raise RuleViolation(rule, _MELD_MESSAGES[rule])
        if meld["kind"] == "ace_set":
            self._check_ace_set(seat)
        left = len(hand) - len(cards)
        if left <= 1:
            side = self.side(seat)
            after = [*self._side_melds(side).melds(), meld]
            self._check_exit(after, side, left, False)
            if left == 0:
                self._check_opening(t.halves + sum(map(HALF_POINTS.__getitem__, cards)))
        return meld

    def _check_add_to_meld(self, seat: int, b: JsonDict) -> Meld:
        t = self.t
        if t.closed:
            raise RuleViolation("melding_closed", "you took back your melds: discard to end your turn")
        index, card = b["meld"], b["card"]
        self._check_in_hand(seat, card, "add_to_meld")
        meld = self.melds[index]
        side = self.side(seat)
        if meld["side"] != side:
            raise RuleViolation("own_side_melds", "you may add cards only to your own side's melds")
        if meld["kind"] == "ace_set":
            self._check_ace_set(seat)
        grown = extend(meld, card, b["low_end"])
        if grown is None:
            end = "low" if b["low_end"] else "high"
            raise RuleViolation(
                "meld_fit",
                f"{name(card)} does not fit at the {end} end of meld {index}: runs are one suit in "
                "sequence (no wrap, at most 14 cards), at most one pankal per meld",
            )
        left = len(self.hands[seat]) - 1
        if left <= 1:
            after = [grown if i == index else m for i, m, _ in self._side_melds(side).entries]
            self._check_exit(after, side, left, False)
            if left == 0:
                self._check_opening(t.halves + half_points(card))
        return grown

    def _can_take_back(self) -> bool:
        t = self.t
        return t.undo is not None and not t.closed and (t.melded or t.pile_taken)

    def _check_in_hand(self, seat: int, card: int, kind: str) -> None:
        if card not in self.hands[seat]:
            raise RuleViolation("not_in_hand", f"card {card} ({name(card)}) is not in your hand")
        if kind != "discard" and card in self.t.locked:
            raise RuleViolation(
                "pile_cards_locked",
                f"{name(card)} came with the discard pile you took: it can be melded from your next turn",
            )

    def _check_ace_set(self, seat: int) -> None:
        if self.totals[seat] <= THRESHOLD:
            raise RuleViolation(
                "ace_set_1500", "ace-sets are allowed only to a player whose own score is above 1500"
            )

    def _check_opening(self, halves: int) -> None:
        if self.t.opening and 0 < halves < OPENING_HALVES:
            raise RuleViolation(
                "going_down_7_5",
                f"above 1500 your side goes down with at least 7.5 points melded in one turn "
                f"(you have {halves / 2:g}): meld more or take back",
            )

    def _check_exit(self, side_melds: list[JsonDict], side: str, left: int, by_discard: bool) -> None:
        """Refuse a step that leaves ``left`` (0 or 1) cards when the hand could not legally empty."""
        biribas = [m for m in side_melds if is_biriba(m)]
        waiting = self.more_state[side] == "waiting"
        pickup = bool(biribas) and waiting
        out = not waiting and any(is_dirty(m) for m in biribas) and any(not is_dirty(m) for m in biribas)
        if left == 0 and not by_discard and not pickup:
            if out:
                raise RuleViolation("meld_last_card", "you may not meld your last card: go out by discarding")
            raise RuleViolation(
                "empty_hand",
                "you may empty your hand only to take your side's More pile (after a biriba) or to go out "
                "(pure and dirty biribas, More pile taken)",
            )
        if not (pickup or out):
            raise RuleViolation(
                "empty_hand",
                "this would leave you a last card you could not discard: you may empty your hand only to "
                "take your side's More pile (after a biriba) or to go out (pure and dirty biribas, More "
                "pile taken)",
            )

    def _top_meldable(self, seat: int, top: int) -> bool:
        """Does some legal continuation of the turn meld ``top`` and end with a discard?"""
        s = self
        side = "solo" if seat == s.solo else "pair"
        side_melds = self._side_melds(side)
        table = self._table(seat)  # the whole hand: nothing is locked before the draw
        ace_ok = s.totals[seat] > THRESHOLD
        if lone_card(top, table, side_melds, ace_ok):
            return False  # the common case, decided on the hand alone
        counts = table.counts[:]
        counts[take.IDENT[top]] += 1
        problem = take.Problem(
            counts,
            take.IDENT[top],
            side_melds.melds(),
            ace_ok,
            OPENING_HALVES if s.t.opening else 0,
            len(s.discard) - 1,
            s.more_state[side] == "waiting",
            side_melds.clean(),
            table.present(top),
            table.size + 1,
        )
        return take.can_take(problem)

    # ---- applying (validated moves only) ----

    def _do_bid(self, seat: int, b: JsonDict) -> list[Event]:
        s = self
        s.bids[seat] = b["amount"]
        events = [Event({"bid_placed": {"seat": seat}})]
        if min(s.bids) < 0:
            return events
        high = max(s.bids)
        left = (s.dealer + 1) % PLAYERS
        solo = next(p for p in _clockwise(left) if s.bids[p] == high)
        for p in range(PLAYERS):
            s.totals[p] += -2 * high if p == solo else high
        s.revealed_bids = list(s.bids)
        events.append(
            Event(
                {
                    "bids_revealed": {
                        "bids": list(s.bids),
                        "solo": solo,
                        "payment": high,
                        "scores": list(s.totals),
                    }
                }
            )
        )
        return events + self._deal(solo)

    def _do_draw(self, seat: int, b: JsonDict) -> list[Event]:
        s = self
        card = s.draw.pop()
        hand = s.hands[seat]
        hand.append(card)
        self._hand_gained(seat, card)
        s.phase = "play"
        # melds are never changed in place (a grown meld is a new dict): a list copy will do
        s.t.undo = Undo(hand=hand[:], melds=s.melds[:], discard=None)
        return [
            Event({"card_drawn": {"seat": seat}}),
            Event({"drew_card": {"card": CARD_DICTS[card].copy()}}, to=(seat,)),
        ]

    def _do_take_pile(self, seat: int, b: JsonDict) -> list[Event]:
        s, t = self, self.t
        pile = s.discard
        hand = list(s.hands[seat])
        t.undo = Undo(hand=hand, melds=list(s.melds), discard=list(pile))
        t.top, t.locked, t.pile_taken = pile[-1], pile[:-1], True
        s.hands[seat].extend(pile)
        self._hand_gained(seat, pile[-1])  # the rest is locked
        s.discard = []
        s.phase = "play"
        return [Event({"pile_taken": {"seat": seat, "cards": [CARD_DICTS[c].copy() for c in pile]}})]

    def _do_lay_meld(self, seat: int, b: JsonDict, meld: Meld) -> list[Event]:
        s = self
        meld["side"] = self.side(seat)
        cards = b["cards"]
        hand = s.hands[seat]
        for card in cards:
            hand.remove(card)
            self._hand_lost(seat, card)
        index = len(s.melds)
        facts = self._place_meld(index, meld)
        self._melded(cards)
        events = [Event({"meld_laid": {"seat": seat, "meld": meld_view(meld, index, facts.wild)}})]
        if not hand:
            events += self._maybe_pickup(seat)
        return events

    def _do_add_to_meld(self, seat: int, b: JsonDict, grown: Meld) -> list[Event]:
        s = self
        index, card = b["meld"], b["card"]
        facts = self._place_meld(index, grown)
        hand = s.hands[seat]
        hand.remove(card)
        self._hand_lost(seat, card)
        self._melded([card])
        body = {
            "seat": seat,
            "card": CARD_DICTS[card].copy(),
            "low_end": b["low_end"],
            "meld": meld_view(grown, index, facts.wild),
        }
        events = [Event({"card_added": body})]
        if not hand:
            events += self._maybe_pickup(seat)
        return events

    def _melded(self, cards: list[int]) -> None:
        t = self.t
        t.melded = True
        t.halves += sum(map(HALF_POINTS.__getitem__, cards))

    def _maybe_pickup(self, seat: int) -> list[Event]:
        """An emptied hand (validated: the side may) takes the side's More pile."""
        s = self
        if s.hands[seat]:
            return []
        side = self.side(seat)
        pile = s.more[side]
        s.hands[seat] = pile
        self._tables[seat] = None
        s.more[side] = []
        s.more_state[side] = "taken"
        s.t.undo = None  # hidden cards seen: this turn's melds are final
        return [
            Event({"more_pile_taken": {"seat": seat, "side": ROLES[side], "count": len(pile)}}),
            Event({"more_pile_cards": {"cards": [CARD_DICTS[c].copy() for c in pile]}}, to=(seat,)),
        ]

    def _do_take_back(self, seat: int, b: JsonDict) -> list[Event]:
        s, t = self, self.t
        undo = t.undo
        assert undo is not None  # _validate: _can_take_back
        held = set(s.hands[seat])
        returned = [c for c in undo.hand if c not in held]
        s.hands[seat] = list(undo.hand)
        # the Table follows the hand back (a handful of cards; made afresh it would cost a whole
        # hand): the melded cards return, and the top card of a pile given back leaves it (the
        # rest of the pile was locked, never in it)
        table = self._tables[seat]
        if table is not None:
            if undo.discard is not None and t.top in held:
                table.remove(t.top)
            for card in returned:
                table.add(card)
        s.melds = undo.melds
        pile_returned = undo.discard is not None
        if undo.discard is not None:
            s.discard = list(undo.discard)
            s.phase = "draw"
            t.top, t.locked, t.pile_taken, t.no_take = -1, [], False, True
        t.halves, t.melded, t.undo, t.closed = 0, False, None, True
        return [
            Event(
                {
                    "took_back": {
                        "seat": seat,
                        "cards": [CARD_DICTS[c].copy() for c in returned],
                        "pile_returned": pile_returned,
                    }
                }
            )
        ]

    def _do_discard(self, seat: int, b: JsonDict) -> list[Event]:
        s = self
        card = b["card"]
        hand = s.hands[seat]
        hand.remove(card)
        locked = s.t.locked
        if card not in locked:  # a locked card was never in the Table
            self._hand_lost(seat, card)
        if locked:  # they can be melded from the next turn on
            table = self._tables[seat]
            if table is not None:
                for other in locked:
                    if other != card:
                        table.add(other)
        s.discard.append(card)
        self._went_down(seat)
        went_out = not hand and s.more_state[self.side(seat)] != "waiting"
        events = [Event({"discarded": {"seat": seat, "card": CARD_DICTS[card].copy(), "went_out": went_out}})]
        if went_out:
            return events + self._end_round(seat)
        if not hand:
            events += self._maybe_pickup(seat)
        events += self._next_turn()
        return events

    # ---- turns and rounds ----

    def _next_turn(self) -> list[Event]:
        s = self
        events: list[Event] = []
        if not s.draw:
            waiting = [side for side in ("pair", "solo") if s.more_state[side] == "waiting"]
            if not waiting:
                return self._end_round(-1)
            if len(waiting) == 2:
                cards = s.more["pair"] + s.more["solo"]
                rng(s.seed, "refill", s.round).shuffle(cards)
                source = "REFILL_BOTH_MORE_PILES"
            else:
                cards = s.more[waiting[0]]
                source = f"REFILL_{waiting[0].upper()}_MORE_PILE"
            for side in waiting:
                s.more[side] = []
                s.more_state[side] = "drawn"
            s.draw = cards
            events.append(Event({"draw_pile_refilled": {"source": source, "size": len(cards)}}))
        s.turn = (s.turn + 1) % PLAYERS
        self._begin_turn()
        return events

    def _begin_turn(self) -> None:
        s = self
        s.phase = "draw"
        s.t = Turn(opening=self.minimum_binds(s.turn))

    def minimum_binds(self, seat: int) -> bool:
        """The 7.5 going-down minimum binds ``seat``: above 1500, not down, and nobody of his side
        has gone down with at least 7.5 (a partner who went down with less exempts nobody)."""
        s = self
        return s.totals[seat] > THRESHOLD and not s.down[seat] and not s.exempt[self.side(seat)]

    def _went_down(self, seat: int) -> None:
        """Record the end of a turn: a first melding turn is the seat's going down."""
        s, t = self, self.t
        if t.melded and not s.down[seat]:
            s.down[seat] = True
            if t.halves >= OPENING_HALVES:
                s.exempt[self.side(seat)] = True

    def _start_round(self) -> list[Event]:
        s = self
        s.round += 1
        self._tables = [None] * PLAYERS
        if s.round > 1:
            s.dealer = (s.dealer + 1) % PLAYERS
        s.solo = -1
        s.bids = [-1] * PLAYERS
        s.revealed_bids = []
        s.hands = [[] for _ in range(PLAYERS)]
        s.draw = []
        s.discard = []
        s.more = {"pair": [], "solo": []}
        s.more_state = {"pair": "waiting", "solo": "waiting"}
        s.melds = []
        s.down = [False] * PLAYERS
        s.exempt = {"pair": False, "solo": False}
        s.turn = (s.dealer + 1) % PLAYERS
        s.t = Turn()
        bidding = s.options.bid_for_solo
        events = [Event({"round_started": {"round": s.round, "dealer": s.dealer, "bidding": bidding}})]
        if bidding:
            s.phase = "bidding"
            return events
        return events + self._deal(self._choose_solo())

    def _choose_solo(self) -> int:
        """Lowest score; then Solo least recently; then clockwise from the dealer's left; cap of 2."""
        s = self
        history = s.solo_history
        left = (s.dealer + 1) % PLAYERS

        def last_solo(p: int) -> int:
            return max((i for i, solo in enumerate(history) if solo == p), default=-1)

        order = sorted(range(PLAYERS), key=lambda p: (s.totals[p], last_solo(p), (p - left) % PLAYERS))
        if len(history) >= 2 and history[-1] == history[-2] == order[0]:
            return order[1]
        return order[0]

    def _deal(self, solo: int) -> list[Event]:
        s = self
        s.solo = solo
        s.solo_history.append(solo)
        self._tables = [None] * PLAYERS  # the hands are dealt again
        deck = list(range(DECK_SIZE))
        rng(s.seed, "deal", s.round).shuffle(deck)
        left = (s.dealer + 1) % PLAYERS
        for i, p in enumerate(_clockwise(left)):
            s.hands[p] = deck[i * HAND_SIZE : (i + 1) * HAND_SIZE]
        base = PLAYERS * HAND_SIZE
        s.more = {
            "pair": deck[base : base + MORE_PILE_SIZE],
            "solo": deck[base + MORE_PILE_SIZE : base + 2 * MORE_PILE_SIZE],
        }
        s.draw = deck[base + 2 * MORE_PILE_SIZE :]
        s.discard = [s.draw.pop()]
        s.turn = left
        self._begin_turn()
        roles = [ROLES[self.side(p)] for p in range(PLAYERS)]
        events = [
            Event({"roles_assigned": {"solo": solo, "roles": roles, "first_player": left}}),
            Event(
                {
                    "dealt": {
                        "hand_sizes": [HAND_SIZE] * PLAYERS,
                        "draw_pile_size": len(s.draw),
                        "more_pile_size": MORE_PILE_SIZE,
                        "discard": CARD_DICTS[s.discard[-1]].copy(),
                    }
                }
            ),
        ]
        for p in range(PLAYERS):
            events.append(
                Event({"hand_dealt": {"cards": [CARD_DICTS[c].copy() for c in s.hands[p]]}}, to=(p,))
            )
        return events

    def round_result(self, went_out: int) -> JsonDict:
        """Score the round as it stands (``went_out``: the seat that went out, -1 for none)."""
        return score_round(self, went_out)

    def _end_round(self, went_out: int) -> list[Event]:
        s = self
        result = self.round_result(went_out)
        s.totals = list(result["totals"])
        s.rounds.append(result)
        s.t = Turn()
        events = [Event({"round_ended": {"result": result}})]
        limit = s.options.max_rounds
        if max(s.totals) >= TARGET or (limit and s.round >= limit):
            s.phase = "over"
            s.winner_seats = match_winners(s.totals, went_out)
            return events
        return events + self._start_round()

    # ---- the observer ----

    def _meld_view(self, index: int) -> JsonDict:
        meld = self.melds[index]
        return meld_view(meld, index, self._meld_facts(meld).wild)

    def view(self, seat: int | None) -> JsonDict:
        s, t = self, self.t
        me = seat if seat is not None and 0 <= seat < PLAYERS else -1  # -1: a spectator
        own = me >= 0
        dealt = s.solo >= 0
        turn_hand = s.hands[s.turn]
        return {
            "phase": PHASES[s.phase],
            "round": s.round,
            "dealer": s.dealer,
            "roles": [ROLES[self.side(p)] if dealt else "ROLE_UNSPECIFIED" for p in range(PLAYERS)],
            "scores": list(s.totals),
            "turn": s.turn,
            "hand": [CARD_DICTS[c].copy() for c in sorted(s.hands[me], key=_sort_key)] if own else [],
            "hand_sizes": [len(h) for h in s.hands],
            "melds": [self._meld_view(i) for i in range(len(s.melds))],
            "discard_pile": [CARD_DICTS[c].copy() for c in s.discard],
            "draw_pile_size": len(s.draw),
            "pair_more_pile": PILE_STATES[s.more_state["pair"]],
            "pair_more_pile_size": len(s.more["pair"]),
            "solo_more_pile": PILE_STATES[s.more_state["solo"]],
            "solo_more_pile_size": len(s.more["solo"]),
            "solo_history": list(s.solo_history),
            "must_meld_top": t.top >= 0 and t.top in turn_hand,
            "top_card": max(t.top, 0),
            "locked_cards": list(t.locked),
            "opening": t.opening,
            "opening_half_points": t.halves,
            "minimum_binds": [dealt and self.minimum_binds(p) for p in range(PLAYERS)],
            "can_take_back": self._can_take_back(),
            "melding_closed": t.closed,
            "bid_made": [b >= 0 for b in s.bids] if s.options.bid_for_solo else [],
            "bids": list(s.revealed_bids),
            "my_bid": s.bids[me] if own else -1,
            "rounds": _copy_rounds(s.rounds),
            "bid_for_solo": s.options.bid_for_solo,
            "max_rounds": s.options.max_rounds,
            "target_score": TARGET,
        }


# ---- helpers ----

_MELD_MESSAGES = {
    "meld_too_short": "a meld needs at least 3 cards",
    "one_pankal": "a meld may hold at most one pankal (2 or joker standing in for another card)",
    "runs_only": "only runs are allowed: 3 or more cards of one suit in sequence, ace low (A-2-3) or high "
    "(Q-K-A) but never around (K-A-2), cards listed low to high; ace-sets above 1500",
}


def _copy_rounds(rounds: list[JsonDict]) -> list[JsonDict]:
    """A deep copy of the round results (``score_round``'s fixed shape)."""
    return [{**r, "seats": [seat.copy() for seat in r["seats"]], "totals": r["totals"][:]} for r in rounds]


_PLACE = {"lay_meld": State._do_lay_meld, "add_to_meld": State._do_add_to_meld}  # with the validated meld
_CHECK = {kind: getattr(State, f"_check_{kind}") for kind in MOVE_FIELDS if kind != "bid"}
_APPLY = {kind: getattr(State, f"_do_{kind}") for kind in MOVE_FIELDS if kind not in _PLACE}


def _first_melding_step(moves: list[JsonDict]) -> JsonDict | None:
    """The timeout policy's melding step: the first listed addition, else the first new meld."""
    for kind in ("add_to_meld", "lay_meld"):
        for move in moves:
            if kind in move:
                return move
    return None


def _clockwise(start: int) -> list[int]:
    return [(start + i) % PLAYERS for i in range(PLAYERS)]


# suit, rank, id, as one number per card (a joker's suit is -1: first)
_sort_key = tuple(
    ((suit_ + 1) * 16 + rank_) * 128 + card for card in range(DECK_SIZE) for rank_, suit_ in [identity(card)]
).__getitem__
