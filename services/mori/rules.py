"""Mori: the pure rules engine (3-5 players, Season cards, X cards and dice).

How the rulebook is read, and every decision where it is silent: ``docs/rules/mori.md``.

Cards are integers: a Season card is ``suit * 11 + rank`` (suits 0-3 = Spring, Summer,
Autumn, Winter; ranks 0-10), an X card is 44-54. Dice are 0-9 with a face per die
(0-3 a season, 4 = X). A turn is one move: ``play_card`` or ``play_die`` while a trick is
being played, then ``claim_die`` by the trick's winner. Chance (shuffle, dice roll) is
drawn from ``rng(seed, "deal"|"dice", round)``.
"""

from __future__ import annotations

from typing import Any, Self

import msgspec

from services.engine import (
    BadOptions,
    EngineState,
    Event,
    GameInfo,
    JsonDict,
    MalformedMove,
    MoveError,
    NotYourTurn,
    OptionInfo,
    RuleViolation,
    rng,
    split_move,
)

# --------------------------------------------------------------------------- constants

SPRING, SUMMER, AUTUMN, WINTER, X = 0, 1, 2, 3, 4
SEASONS = (SPRING, SUMMER, AUTUMN, WINTER)
SUIT_NAMES = ("SUIT_SPRING", "SUIT_SUMMER", "SUIT_AUTUMN", "SUIT_WINTER", "SUIT_X")
NO_SUIT_NAME = "SUIT_UNSPECIFIED"
SEASON_WORDS = ("Spring", "Summer", "Autumn", "Winter", "X")

# Printed values by rank, the same in every suit (docs/rules/mori.md). Rot = NP.
VP = (2, 0, 1, 0, 1, 2, 1, 2, 1, 2, 3)
NP = (0, 0, 0, 1, 0, 0, 1, 0, 2, 1, 2)
ROT = NP

RANKS_PER_SUIT = 11
SEASON_CARD_COUNT = 44
FIRST_X_CARD = 44
X_CARD_COUNT = 11
CARD_COUNT = SEASON_CARD_COUNT + X_CARD_COUNT  # 55
DICE_COUNT = 10
DIE_FACES = (SPRING, SUMMER, AUTUMN, WINTER, X, X)  # six faces of every die
HAND_SEASON_CARDS = 9
HAND_X_CARDS = 2

# Deck per player count: the Season ranks used and the X cards shuffled into the deck.
DECK_RANKS = {3: range(1, 8), 4: range(1, 10), 5: range(0, 11)}
DECK_X_CARDS = {3: 0, 4: 0, 5: 1}

PLAY, CLAIM, OVER = "play", "claim", "over"
PHASE_NAMES = {PLAY: "PHASE_PLAY", CLAIM: "PHASE_CLAIM", OVER: "PHASE_OVER"}

WIN_HIGHEST_TRUMP_CARD = "WIN_REASON_HIGHEST_TRUMP_CARD"
WIN_FIRST_TRUMP_DIE = "WIN_REASON_FIRST_TRUMP_DIE"
WIN_HIGHEST_LEAD_CARD = "WIN_REASON_HIGHEST_LEAD_CARD"
WIN_FIRST_LEAD_DIE = "WIN_REASON_FIRST_LEAD_DIE"
WIN_ALL_X_LEADER = "WIN_REASON_ALL_X_LEADER"
NO_REASON = "WIN_REASON_UNSPECIFIED"

MOVE_FIELDS = {"play_card": "card", "play_die": "die", "claim_die": "die"}

GAME = GameInfo(
    name="mori",
    title="Mori",
    package="mori",
    service="Mori",
    min_players=3,
    max_players=5,
    move_cap=3_000,
    options=(
        OptionInfo(
            name="first_player",
            type="uint32",
            description="Seat that starts the first round; each later round the next seat clockwise starts.",
            default=0,
        ),
    ),
)


class NotTrickWinner(NotYourTurn):
    """A ``claim_die`` from a seat that did not win the trick just finished."""

    def __init__(self, seat: int, message: str) -> None:
        RuleViolation.__init__(self, "claim_by_trick_winner", message)
        self.seat = seat


# --------------------------------------------------------------------------- card helpers


class Play(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """One play of a trick, stored as ``[seat, "card" | "die", id]``. Only scalars: no cycle."""

    seat: int
    kind: str  # "card" or "die"
    item: int  # the card's or the die's id


class Trick(msgspec.Struct, kw_only=True):
    """A trick: the one under way (``winner`` 0, ``reason`` unspecified) or the one just won."""

    number: int
    leader: int
    plays: list[Play]
    winner: int
    reason: str


def card_suit(card: int) -> int:
    return X if card >= FIRST_X_CARD else card // RANKS_PER_SUIT


def card_rank(card: int) -> int:
    return 0 if card >= FIRST_X_CARD else card % RANKS_PER_SUIT


def card_vp(card: int) -> int:
    return 0 if card >= FIRST_X_CARD else VP[card_rank(card)]


def card_np(card: int) -> int:
    return 0 if card >= FIRST_X_CARD else NP[card_rank(card)]


def trump_of(lead: int) -> int:
    """The trump suit: the season after the lead suit (Winter -> Spring)."""
    return (lead + 1) % 4


def deck_for(players: int) -> list[int]:
    """The Season deck (plus the shuffled-in X card for 5 players), before shuffling."""
    cards = [suit * RANKS_PER_SUIT + rank for suit in SEASONS for rank in DECK_RANKS[players]]
    x_in_deck = DECK_X_CARDS[players]
    cards += [FIRST_X_CARD + HAND_X_CARDS * players + i for i in range(x_in_deck)]
    return cards


def hand_x_cards(players: int, seat: int) -> list[int]:
    return [FIRST_X_CARD + HAND_X_CARDS * seat + i for i in range(HAND_X_CARDS)]


def cards_in_play(players: int) -> set[int]:
    """Every card that takes part in a round for this player count."""
    cards = set(deck_for(players))
    for seat in range(players):
        cards.update(hand_x_cards(players, seat))
    return cards


def trick_winner(leader: int, plays: list[Play], faces: list[int]) -> tuple[int, str, int | None]:
    """(winner seat, reason, lead suit or None) of a complete trick.

    ``plays`` are in play order. Order of the tests: highest trump card, first trump die,
    highest lead-suit card, first lead-suit die, the leader.
    """
    lead = lead_suit_of(plays, faces)
    if lead is None:
        return leader, WIN_ALL_X_LEADER, None
    trump = trump_of(lead)
    for suit, (card_reason, die_reason) in (
        (trump, (WIN_HIGHEST_TRUMP_CARD, WIN_FIRST_TRUMP_DIE)),
        (lead, (WIN_HIGHEST_LEAD_CARD, WIN_FIRST_LEAD_DIE)),
    ):
        cards = [(card_rank(p.item), p.seat) for p in plays if p.kind == "card" and card_suit(p.item) == suit]
        if cards:
            return max(cards)[1], card_reason, lead
        dice = [p.seat for p in plays if p.kind == "die" and faces[p.item] == suit]
        if dice:
            return dice[0], die_reason, lead
    return leader, WIN_ALL_X_LEADER, lead  # unreachable: the lead suit was set by a play


def play_suit(kind: str, item: int, faces: list[int]) -> int:
    return card_suit(item) if kind == "card" else faces[item]


def lead_suit_of(plays: list[Play], faces: list[int]) -> int | None:
    """The suit of the first suited card or die in the trick, None if all plays are X."""
    for play in plays:
        suit = play_suit(play.kind, play.item, faces)
        if suit != X:
            return suit
    return None


def x_bonuses(x_counts: list[int]) -> list[int]:
    """X majority: most Xs lose 1 per X, next-most gain 1 per X; 0 Xs is never in a group."""
    levels = sorted({c for c in x_counts if c > 0}, reverse=True)
    most = levels[0] if levels else None
    second = levels[1] if len(levels) > 1 else None
    return [-c if c == most else c if c == second else 0 for c in x_counts]


def score_piles(piles: list[list[int]], pile_dice: list[list[int]], faces: list[int]) -> list[JsonDict]:
    """Round results (without totals) of every seat from its score pile."""
    vps = [sum(card_vp(c) for c in pile) for pile in piles]
    nps = [sum(card_np(c) for c in pile) for pile in piles]
    xs = [
        sum(1 for c in pile if card_suit(c) == X) + sum(1 for d in dice if faces[d] == X)
        for pile, dice in zip(piles, pile_dice, strict=True)
    ]
    bonus = x_bonuses(xs)
    return [
        {
            "seat": seat,
            "vp": vps[seat],
            "np": nps[seat],
            "x_count": xs[seat],
            "x_bonus": bonus[seat],
            "score": vps[seat] - nps[seat] + bonus[seat],
        }
        for seat in range(len(piles))
    ]


# --------------------------------------------------------------------------- the state


class State(EngineState):
    """One match of Mori: plain data only, so ``to_dict`` is its JSON-compatible form."""

    players: int
    seed: int
    first_player: int
    round: int
    start_player: int
    phase: str
    turn: int
    trick_leader: int
    tricks_done: int
    mat: list[int]  # dice ids on the dice mat
    faces: list[int]  # the face each die (by id) was rolled to in the current round
    unused: list[int]  # the deck's cards nobody was dealt in the current round
    tricks_won: list[int]
    totals: list[int]
    # By seat:
    hands: list[list[int]]
    aids: list[list[int]]  # dice on the player aid
    piles: list[list[int]]  # cards of the score pile
    pile_dice: list[list[int]]  # dice of the score pile
    trick_plays: list[Play]
    round_scores: list[list[int]]
    last_trick: Trick | None  # the trick just won, while its winner claims a die

    # ----------------------------------------------------------------- construction

    @classmethod
    def new(cls, players: int, seed: int, options: JsonDict) -> Self:
        GAME.check_players(players)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise BadOptions("seed", f"the seed must be an integer, not {seed!r}")
        opts = parse_options(options, players)
        state = cls._before_deal(players, seed, opts["first_player"])
        state._start_round(1)
        return state

    @classmethod
    def _before_deal(cls, players: int, seed: int, first_player: int) -> Self:
        """The match before round 1 is dealt (``round`` 0, no cards or dice anywhere)."""
        return cls(
            players=players,
            seed=seed,
            first_player=first_player,
            round=0,
            start_player=first_player,
            phase=PLAY,
            turn=first_player,
            trick_leader=first_player,
            tricks_done=0,
            mat=[],
            faces=[X] * DICE_COUNT,
            unused=[],
            tricks_won=[0] * players,
            totals=[0] * players,
            hands=[[] for _ in range(players)],
            aids=[[] for _ in range(players)],
            piles=[[] for _ in range(players)],
            pile_dice=[[] for _ in range(players)],
            trick_plays=[],
            round_scores=[[] for _ in range(players)],
            last_trick=None,
        )

    def opening_events(self) -> list[Event]:
        # Round 1's deal and roll depend only on the seed, the player count and the first
        # player, so they are made again on a fresh state: the same events whenever asked.
        return self._before_deal(self.players, self.seed, self.first_player)._start_round(1)

    def timeout_move(self, seat: int) -> JsonDict:
        """The timeout policy (docs/rules/mori.md §10): the lowest-ranked legal Season card
        (X cards only when no Season card may be played; dice stay on the aid); when
        claiming, the first die of the mat in its order (suited dice before X dice)."""
        if self.phase == OVER or seat != self.turn:
            raise NotYourTurn(seat)
        if self.phase == CLAIM:
            return {"claim_die": {"die": _mat_order(self.mat, self.faces)[0]}}
        lead = self.lead_suit() if self._holds_lead(seat) else None
        cards = [c for c in self.hands[seat] if lead is None or card_suit(c) in (lead, X)]
        season = [c for c in cards if card_suit(c) != X]
        card = min(season, key=lambda c: (card_rank(c), c)) if season else min(cards)
        return {"play_card": {"card": card}}

    # ----------------------------------------------------------------- queries

    def active_seats(self) -> list[int]:
        return [] if self.phase == OVER else [self.turn]

    def is_over(self) -> bool:
        return self.phase == OVER

    def scores(self) -> list[int]:
        return list(self.totals)

    def winners(self) -> list[int]:
        if not self.is_over():
            return []
        best = max(self.totals)
        return [seat for seat, total in enumerate(self.totals) if total == best]

    def lead_suit(self) -> int | None:
        return lead_suit_of(self.trick_plays, self.faces)

    def legal_moves(self, seat: int) -> list[JsonDict]:
        if self.phase == OVER or seat != self.turn:
            return []
        # Every card and die has its own id, so twins (X cards, dice of one face) are
        # distinct moves and every one of them is listed (docs/rules/mori.md §7).
        if self.phase == CLAIM:
            return [{"claim_die": {"die": d}} for d in _mat_order(self.mat, self.faces)]
        lead = self.lead_suit() if self._holds_lead(seat) else None
        moves: list[JsonDict] = [
            {"play_card": {"card": card}}
            for card in self.hands[seat]
            if lead is None or card_suit(card) in (lead, X)
        ]
        moves += [{"play_die": {"die": d}} for d in self.aids[seat]]
        return moves

    def _holds_lead(self, seat: int) -> bool:
        lead = self.lead_suit()
        return lead is not None and any(card_suit(c) == lead for c in self.hands[seat])

    # ----------------------------------------------------------------- moves

    def apply(self, seat: int, move: JsonDict) -> list[Event]:
        kind, item = parse_move(move)
        self._check(seat, kind, item)
        if kind == "claim_die":
            return self._claim(seat, item)
        return self._play(seat, kind, item)

    def _check(self, seat: int, kind: str, item: int) -> None:
        """Raise if ``seat`` may not make this move now; changes nothing."""
        if self.phase == OVER or not isinstance(seat, int) or not 0 <= seat < self.players:
            raise NotYourTurn(seat)
        if kind == "claim_die":
            if self.phase != CLAIM:
                if seat == self.turn:
                    raise RuleViolation(
                        "claim_after_trick",
                        "a die is claimed only after winning a trick; now you must play a card or die "
                        "into the trick",
                    )
                raise NotTrickWinner(
                    seat, f"seat {seat} cannot claim a die: only a trick's winner claims, right after it"
                )
            if seat != self.turn:
                raise NotTrickWinner(
                    seat,
                    f"seat {seat} did not win the last trick: only its winner, seat {self.turn}, "
                    "claims a die from the mat",
                )
            if item not in self.mat:
                raise RuleViolation("die_not_on_mat", f"die {item} is not on the dice mat")
            return
        if self.phase == CLAIM:
            if seat == self.turn:
                raise RuleViolation(
                    "claim_die_first",
                    "as the trick winner you must first claim a die from the mat, then lead the next trick",
                )
            raise NotYourTurn(seat)
        if seat != self.turn:
            raise NotYourTurn(seat)
        if kind == "play_die":
            if item not in self.aids[seat]:
                raise RuleViolation("die_not_on_aid", f"die {item} is not on your player aid")
            return
        if item not in self.hands[seat]:
            raise RuleViolation("card_not_in_hand", f"card {item} is not in your hand")
        suit = card_suit(item)
        lead = self.lead_suit()
        if suit != X and lead is not None and suit != lead and self._holds_lead(seat):
            raise RuleViolation(
                "follow_suit",
                f"you hold a {SEASON_WORDS[lead]} card, so you must follow the lead suit "
                f"{SEASON_WORDS[lead]} (an X card or any die from your aid is also allowed)",
            )

    def _play(self, seat: int, kind: str, item: int) -> list[Event]:
        if kind == "play_card":
            self.hands[seat].remove(item)
        else:
            self.aids[seat].remove(item)
        self.trick_plays.append(Play(seat, "card" if kind == "play_card" else "die", item))
        lead = self.lead_suit()
        lead_name = NO_SUIT_NAME if lead is None else SUIT_NAMES[lead]
        if kind == "play_card":
            events = [Event({"card_played": {"seat": seat, "card": card_dict(item), "lead_suit": lead_name}})]
        else:
            die = die_dict(item, self.faces)
            events = [Event({"die_played": {"seat": seat, "die": die, "lead_suit": lead_name}})]
        if len(self.trick_plays) < self.players:
            self.turn = (seat + 1) % self.players
            return events
        winner, reason, lead = trick_winner(self.trick_leader, self.trick_plays, self.faces)
        for play in self.trick_plays:
            (self.piles if play.kind == "card" else self.pile_dice)[winner].append(play.item)
        self.piles[winner].sort()
        self.pile_dice[winner].sort()
        self.tricks_done += 1
        self.tricks_won[winner] += 1
        self.last_trick = Trick(
            number=self.tricks_done,
            leader=self.trick_leader,
            plays=self.trick_plays,
            winner=winner,
            reason=reason,
        )
        record = self._trick_view(self.last_trick)
        events.append(
            Event(
                {
                    "trick_won": {
                        "winner": winner,
                        "number": record["number"],
                        "plays": record["plays"],
                        "lead_suit": record["lead_suit"],
                        "trump_suit": record["trump_suit"],
                        "reason": reason,
                    }
                }
            )
        )
        self.trick_plays = []
        self.trick_leader = winner
        self.phase = CLAIM
        self.turn = winner
        return events

    def _claim(self, seat: int, die: int) -> list[Event]:
        self.mat.remove(die)
        self.aids[seat].append(die)
        self.aids[seat].sort()
        self.last_trick = None
        events = [
            Event(
                {"die_claimed": {"seat": seat, "die": die_dict(die, self.faces), "dice_left": len(self.mat)}}
            )
        ]
        if self.mat:
            self.phase = PLAY
            self.turn = seat
            self.trick_leader = seat
            return events
        return events + self._end_round()

    def _end_round(self) -> list[Event]:
        for seat in range(self.players):
            self.piles[seat] = sorted(self.piles[seat] + self.hands[seat])
            self.pile_dice[seat] = sorted(self.pile_dice[seat] + self.aids[seat])
            self.hands[seat] = []
            self.aids[seat] = []
        results = score_piles(self.piles, self.pile_dice, self.faces)
        for result in results:
            seat = result["seat"]
            self.round_scores[seat].append(result["score"])
            self.totals[seat] += result["score"]
            result["total"] = self.totals[seat]
        events = [Event({"round_ended": {"round": self.round, "results": results}})]
        if self.round < self.players:
            return events + self._start_round(self.round + 1)
        self.phase = OVER
        self.turn = 0
        return events

    def _start_round(self, number: int) -> list[Event]:
        """Shuffle and deal, roll the dice onto the mat; the round's start player leads."""
        n = self.players
        self.round = number
        self.start_player = (self.first_player + number - 1) % n
        deck = deck_for(n)
        rng(self.seed, "deal", number).shuffle(deck)
        for seat in range(n):
            dealt = deck[seat * HAND_SEASON_CARDS : (seat + 1) * HAND_SEASON_CARDS]
            self.hands[seat] = sorted(dealt + hand_x_cards(n, seat))
            self.aids[seat] = []
            self.piles[seat] = []
            self.pile_dice[seat] = []
        self.unused = sorted(deck[n * HAND_SEASON_CARDS :])
        roll = rng(self.seed, "dice", number)
        self.faces = [roll.choice(DIE_FACES) for _ in range(DICE_COUNT)]
        self.mat = list(range(DICE_COUNT))
        self.phase = PLAY
        self.turn = self.start_player
        self.trick_leader = self.start_player
        self.trick_plays = []
        self.tricks_done = 0
        self.last_trick = None
        self.tricks_won = [0] * n
        events = [
            Event(
                {
                    "round_started": {
                        "round": number,
                        "start_player": self.start_player,
                        "mat": self._mat_view(),
                        "hand_sizes": [len(h) for h in self.hands],
                    }
                }
            )
        ]
        for seat in range(n):
            hand = [card_dict(c) for c in self.hands[seat]]
            events.append(Event({"hand_dealt": {"round": number, "seat": seat, "hand": hand}}, to=(seat,)))
        return events

    # ----------------------------------------------------------------- the observer

    def view(self, seat: int | None) -> JsonDict:
        own = seat if isinstance(seat, int) and 0 <= seat < self.players else None
        if self.phase == PLAY:
            trick = self._trick_view(
                Trick(
                    number=self.tricks_done + 1,
                    leader=self.trick_leader,
                    plays=self.trick_plays,
                    winner=0,
                    reason=NO_REASON,
                ),
                complete=False,
            )
        else:
            # While claiming, the trick to come (none after the round's last trick: number 0).
            upcoming = self.phase == CLAIM and len(self.mat) > 1
            trick = _empty_trick(self.tricks_done + 1 if upcoming else 0, self.trick_leader)
        last = (
            self._trick_view(self.last_trick)
            if self.phase == CLAIM and self.last_trick is not None
            else _empty_trick(0, 0)
        )
        return {
            "player_count": self.players,
            "round": self.round,
            "rounds": self.players,
            "start_player": self.start_player,
            "phase": PHASE_NAMES[self.phase],
            "turn": self.turn,
            "hand": [card_dict(c) for c in self.hands[own]] if own is not None else [],
            "trick": trick,
            "last_trick": last,
            "mat": self._mat_view(),
            "players": [self._player_view(p, p == own) for p in range(self.players)],
            "tricks_played": self.tricks_done,
        }

    def _player_view(self, seat: int, own: bool) -> JsonDict:
        pile = self.piles[seat]
        return {
            "seat": seat,
            "hand_size": len(self.hands[seat]),
            "aid": [die_dict(d, self.faces) for d in self.aids[seat]],
            "pile_size": len(pile),
            "pile_x_cards": sum(1 for c in pile if card_suit(c) == X),
            "pile_dice": [die_dict(d, self.faces) for d in self.pile_dice[seat]],
            "pile": [card_dict(c) for c in pile] if own else [],
            "tricks_won": self.tricks_won[seat],
            "round_scores": list(self.round_scores[seat]),
            "total": self.totals[seat],
        }

    def _mat_view(self) -> list[JsonDict]:
        return [die_dict(d, self.faces) for d in _mat_order(self.mat, self.faces)]

    def _trick_view(self, trick: Trick, complete: bool = True) -> JsonDict:
        plays = trick.plays
        lead = lead_suit_of(plays, self.faces)
        return {
            "number": trick.number,
            "leader": trick.leader,
            "plays": [play_dict(p.seat, p.kind, p.item, self.faces) for p in plays],
            "lead_suit": NO_SUIT_NAME if lead is None else SUIT_NAMES[lead],
            "trump_suit": NO_SUIT_NAME if lead is None else SUIT_NAMES[trump_of(lead)],
            "complete": complete,
            "winner": trick.winner,
            "reason": trick.reason,
        }


# --------------------------------------------------------------------------- helpers


def parse_options(options: JsonDict | None, players: int) -> JsonDict:
    """The options dict with defaults filled; BadOptions for unknown or invalid values."""
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise BadOptions("options", "options must be a MoriOptions object")
    known = {info.name: info.default for info in GAME.options}
    for key in options:
        if key not in known:
            raise BadOptions(f"options.{key}", f"Mori has no option {key!r}")
    result = {**known, **options}
    first = result["first_player"]
    if isinstance(first, bool) or not isinstance(first, int) or not 0 <= first < players:
        raise BadOptions(
            "options.first_player", f"first_player must be a seat from 0 to {players - 1}, not {first!r}"
        )
    return result


def parse_move(move: Any) -> tuple[str, int]:
    """(kind, id) of a well-formed move dict; MalformedMove otherwise."""
    kind, body = split_move(move, {k: (field,) for k, field in MOVE_FIELDS.items()})
    name = MOVE_FIELDS[kind]
    value = body.get(name, 0)
    limit = CARD_COUNT if name == "card" else DICE_COUNT
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < limit:
        raise MalformedMove(
            f"move.{kind}.{name}", f"{name} must be an id from 0 to {limit - 1}, not {value!r}"
        )
    return kind, value


def card_dict(card: int) -> JsonDict:
    suit = card_suit(card)
    return {
        "id": card,
        "suit": SUIT_NAMES[suit],
        "rank": card_rank(card),
        "vp": card_vp(card),
        "np": card_np(card),
        "rot": 0 if suit == X else ROT[card_rank(card)],
    }


def die_dict(die: int, faces: list[int]) -> JsonDict:
    return {"id": die, "face": SUIT_NAMES[faces[die]]}


def play_dict(seat: int, kind: str, item: int, faces: list[int]) -> JsonDict:
    if kind == "card":
        return {"seat": seat, "card": card_dict(item)}
    return {"seat": seat, "die": die_dict(item, faces)}


def _empty_trick(number: int, leader: int) -> JsonDict:
    return {
        "number": number,
        "leader": leader,
        "plays": [],
        "lead_suit": NO_SUIT_NAME,
        "trump_suit": NO_SUIT_NAME,
        "complete": False,
        "winner": 0,
        "reason": NO_REASON,
    }


def _mat_order(dice: list[int], faces: list[int]) -> list[int]:
    """Dice as the mat lies: by face (Spring, Summer, Autumn, Winter, X), then by id."""
    return sorted(dice, key=lambda d: (faces[d], d))


__all__ = ["GAME", "MoveError", "NotTrickWinner", "State"]
