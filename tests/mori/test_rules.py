"""Mori: one hand-built position per rule (docs/rules/mori.md, issue 3)."""

from __future__ import annotations

import json

import pytest

from services.engine import BadOptions, MalformedMove, NotYourTurn, RuleViolation
from services.mori import rules
from services.mori.rules import GAME, Play, State
from tests.engine_checks import refused

SP, SU, AU, WI, X = 0, 1, 2, 3, 4

# The printed card values, copied from docs/rules/mori.md (not from the engine).
TABLE_VP = {0: 2, 1: 0, 2: 1, 3: 0, 4: 1, 5: 2, 6: 1, 7: 2, 8: 1, 9: 2, 10: 3}
TABLE_NP = {0: 0, 1: 0, 2: 0, 3: 1, 4: 0, 5: 0, 6: 1, 7: 0, 8: 2, 9: 1, 10: 2}


def c(suit: int, rank: int) -> int:
    """Card id of a Season card."""
    return suit * 11 + rank


XC = [44 + i for i in range(11)]  # X card ids


def build(
    players: int = 4,
    *,
    hands: list[list[int]],
    aids: list[list[int]] | None = None,
    faces: list[int] | None = None,
    mat: list[int] | None = None,
    plays: list[list] | None = None,
    leader: int = 0,
    turn: int | None = None,
    phase: str = "play",
    piles: list[list[int]] | None = None,
    pile_dice: list[list[int]] | None = None,
    round_number: int = 1,
    totals: list[int] | None = None,
    round_scores: list[list[int]] | None = None,
    tricks_done: int = 0,
    last_trick: dict | None = None,
    first_player: int = 0,
) -> State:
    d = State.new(players, 1, {"first_player": first_player}).to_dict()
    plays = plays or []
    d.update(
        hands=[sorted(h) for h in hands],
        aids=aids or [[] for _ in range(players)],
        faces=faces or [SP] * 10,
        mat=list(range(10)) if mat is None else mat,
        trick_plays=plays,
        trick_leader=leader,
        turn=(leader + len(plays)) % players if turn is None else turn,
        phase=phase,
        piles=[sorted(p) for p in piles] if piles else [[] for _ in range(players)],
        pile_dice=pile_dice or [[] for _ in range(players)],
        round=round_number,
        start_player=(first_player + round_number - 1) % players,
        totals=totals or [0] * players,
        round_scores=round_scores or [[] for _ in range(players)],
        tricks_done=tricks_done,
        last_trick=last_trick,
        unused=[],
    )
    return State.from_dict(d)


def play(state: State, seat: int, card: int):
    return state.apply(seat, {"play_card": {"card": card}})


def play_die(state: State, seat: int, die: int):
    return state.apply(seat, {"play_die": {"die": die}})


def claim(state: State, seat: int, die: int):
    return state.apply(seat, {"claim_die": {"die": die}})


def bodies(events, kind: str) -> list[dict]:
    return [e.body[kind] for e in events if kind in e.body]


def trick_result(events) -> dict:
    (won,) = bodies(events, "trick_won")
    return won


# ---------------------------------------------------------------- game info, options, setup


def test_game_info():
    assert (GAME.name, GAME.title, GAME.package, GAME.service) == ("mori", "Mori", "mori", "Mori")
    assert (GAME.min_players, GAME.max_players) == (3, 5)
    assert [o.name for o in GAME.options] == ["first_player"]


@pytest.mark.parametrize("players", [2, 6, 0])
def test_player_count_outside_3_to_5_is_refused(players):
    with pytest.raises(BadOptions):
        State.new(players, 1, {"first_player": 0})


@pytest.mark.parametrize(
    "options", [{"first_player": 4}, {"first_player": -1}, {"first_player": True}, {"colour": 1}, []]
)
def test_bad_options_are_refused(options):
    with pytest.raises(BadOptions):
        State.new(4, 1, options)


def test_options_default_is_seat_zero():
    assert State.new(4, 9, {}).start_player == 0
    assert State.new(4, 9, {"first_player": 0}).to_dict() == State.new(4, 9, {}).to_dict()


def season_ranks(cards: list[int]) -> set[int]:
    return {x % 11 for x in cards if x < 44}


@pytest.mark.parametrize(
    ("players", "ranks", "deck_x", "unused"),
    [(3, range(1, 8), 0, 1), (4, range(1, 10), 0, 0), (5, range(0, 11), 1, 0)],
)
def test_deck_and_deal_per_player_count(players, ranks, deck_x, unused):
    state = State.new(players, 42, {})
    season_dealt = [x for h in state.hands for x in h if x < 44]
    x_dealt = [x for h in state.hands for x in h if x >= 44]
    everything = season_dealt + [x for x in state.unused if x < 44]
    assert sorted(everything) == sorted(s * 11 + r for s in range(4) for r in ranks)
    assert len(state.unused) == unused
    assert len(x_dealt) == 2 * players + deck_x
    assert len(set(x_dealt)) == len(x_dealt)
    for hand in state.hands:
        assert len(hand) == 11  # 9 dealt + 2 X cards
    # every hand holds 9 cards of the dealt deck (5 players: the deck's X card may be one of them)
    from_deck = sum(1 for h in state.hands for x in h if x < 44) + deck_x
    assert from_deck == 9 * players
    assert (state.round, state.players, state.view(None)["rounds"]) == (1, players, players)


def test_three_player_unused_card_is_never_shown():
    state = State.new(3, 7, {})
    (hidden,) = state.unused
    for seat in (None, 0, 1, 2):
        # card ids only: a text search for '"id": n' would also match a die with the same id
        assert hidden not in card_ids_in(state.view(seat))


def test_rounds_equal_players_and_start_player_rotates_clockwise():
    for players in (3, 4, 5):
        state = State.new(players, 3, {"first_player": players - 1})
        starts = [state.start_player]
        ends = 0
        while not state.is_over():
            seat = state.active_seats()[0]
            events = state.apply(seat, state.legal_moves(seat)[0])
            ends += len(bodies(events, "round_ended"))
            starts += [b["start_player"] for b in bodies(events, "round_started")]
        assert ends == players
        assert starts == [(players - 1 + r) % players for r in range(players)]


# ---------------------------------------------------------------- dice


def test_dice_rolled_from_the_seeded_source():
    rolls = {tuple(State.new(4, seed, {}).faces) for seed in range(30)}
    assert len(rolls) > 20  # the seed decides the roll
    assert State.new(4, 5, {}).faces == State.new(4, 5, {}).faces
    for faces in rolls:
        assert set(faces) <= {SP, SU, AU, WI, X}
    assert any(X in f for f in rolls)
    state = State.new(4, 5, {})
    assert sorted(state.mat) == list(range(10))


def test_mat_is_sorted_by_suit_with_x_dice_in_the_centre():
    state = build(hands=[[c(SP, 1)]] * 4, faces=[X, WI, SP, X, SU, AU, SP, WI, X, SU])
    mat = state.view(0)["mat"]
    faces = [d["face"] for d in mat]
    assert (
        faces
        == ["SUIT_SPRING"] * 2 + ["SUIT_SUMMER"] * 2 + ["SUIT_AUTUMN"] + ["SUIT_WINTER"] * 2 + ["SUIT_X"] * 3
    )
    assert sorted(d["id"] for d in mat) == list(range(10))


def finished_trick(players: int = 3) -> State:
    """Seat 1 wins a trick (Summer 7 over Summer 2 and Summer 5); seat 1 must claim."""
    state = build(
        players,
        hands=[[c(SU, 2), c(AU, 1)], [c(SU, 7), c(AU, 2)], [c(SU, 5), c(AU, 3)]],
        faces=[SP, SU, AU, WI, X, X, SP, SU, AU, WI],
    )
    play(state, 0, c(SU, 2))
    play(state, 1, c(SU, 7))
    events = play(state, 2, c(SU, 5))
    assert trick_result(events)["winner"] == 1
    return state


def test_claiming_a_die_is_the_winners_own_move_face_unchanged():
    state = finished_trick()
    assert state.active_seats() == [1]
    moves = state.legal_moves(1)
    assert moves and all(set(m) == {"claim_die"} for m in moves)
    assert state.legal_moves(0) == [] and state.legal_moves(2) == []
    # every die on the mat, in the mat's order: Spring, Summer, Autumn, Winter, X
    assert [m["claim_die"]["die"] for m in moves] == [0, 6, 1, 7, 2, 8, 3, 9, 4, 5]
    events = claim(state, 1, 9)
    assert bodies(events, "die_claimed") == [
        {"seat": 1, "die": {"id": 9, "face": "SUIT_WINTER"}, "dice_left": 9}
    ]
    assert state.aids[1] == [9] and state.faces[9] == WI and 9 not in state.mat
    assert state.view(0)["players"][1]["aid"] == [{"id": 9, "face": "SUIT_WINTER"}]
    # the winner then leads the next trick
    assert state.active_seats() == [1] and state.trick_leader == 1
    assert all(set(m) <= {"play_card", "play_die"} for m in state.legal_moves(1))


def test_claim_by_a_seat_that_did_not_win_is_refused():
    state = finished_trick()
    refused(state, 0, {"claim_die": {"die": 3}}, NotYourTurn, "claim_by_trick_winner")
    refused(state, 2, {"claim_die": {"die": 3}}, RuleViolation, "claim_by_trick_winner")


def test_claim_of_a_die_not_on_the_mat_is_refused():
    state = finished_trick()
    state.mat.remove(3)
    refused(state, 1, {"claim_die": {"die": 3}}, RuleViolation, "die_not_on_mat")


def test_winner_must_claim_before_leading():
    state = finished_trick()
    refused(state, 1, {"play_card": {"card": c(AU, 2)}}, RuleViolation, "claim_die_first")
    refused(state, 0, {"play_card": {"card": c(AU, 1)}}, NotYourTurn, "not_your_turn")


def test_claim_while_a_trick_is_being_played_is_refused():
    state = build(hands=[[c(SP, 1)], [c(SP, 2)], [c(SP, 3)], [c(SP, 4)]])
    refused(state, 0, {"claim_die": {"die": 0}}, RuleViolation, "claim_after_trick")
    refused(state, 2, {"claim_die": {"die": 0}}, NotYourTurn, "claim_by_trick_winner")


def test_round_ends_at_once_when_the_last_die_leaves_the_mat():
    # claim phase with one die left; seat 2 won the last trick; hands and aids still hold things
    faces = [X, SP, SU, AU, WI, X, SP, SU, AU, WI]
    state = build(
        3,
        hands=[[c(SP, 5)], [XC[0]], []],
        aids=[[1], [0], []],
        faces=faces,
        mat=[9],
        phase="claim",
        turn=2,
        leader=2,
        tricks_done=10,
        piles=[[c(SU, 7)], [], [c(WI, 3), XC[2]]],
        pile_dice=[[], [5], [2]],
    )
    events = claim(state, 2, 9)
    (ended,) = bodies(events, "round_ended")
    assert ended["round"] == 1
    res = {r["seat"]: r for r in ended["results"]}
    # seat 0: Summer 7 (2 VP) + hand Spring 5 (2 VP), aid die Spring (0): 4
    assert (res[0]["vp"], res[0]["np"], res[0]["x_count"], res[0]["score"]) == (4, 0, 0, 4)
    # seat 1: hand X card + aid X die + pile X die: 3 Xs, the most -> -3
    assert (res[1]["x_count"], res[1]["x_bonus"], res[1]["score"]) == (3, -3, -3)
    # seat 2: Winter 3 (NP 1), X card, Summer die, claimed Winter die: 1 X, next-most -> +1
    assert (res[2]["vp"], res[2]["np"], res[2]["x_count"], res[2]["x_bonus"]) == (0, 1, 1, 1)
    assert res[2]["score"] == 0
    assert [r["total"] for r in ended["results"]] == [4, -3, 0]
    # a new round was dealt at once, started by the next seat clockwise
    (started,) = bodies(events, "round_started")
    assert started["round"] == 2 and started["start_player"] == 1
    assert state.round == 2 and state.active_seats() == [1] and len(state.mat) == 10
    assert [len(h) for h in state.hands] == [11, 11, 11]
    assert state.round_scores == [[4], [-3], [0]] and state.totals == [4, -3, 0]
    dealt = [e for e in events if "hand_dealt" in e.body]
    assert [e.to for e in dealt] == [(0,), (1,), (2,)]


def test_last_round_ends_the_game_with_shared_victory():
    state = build(
        3,
        hands=[[], [], [c(SU, 6)]],
        mat=[4],
        phase="claim",
        turn=0,
        leader=0,
        round_number=3,
        tricks_done=10,
        totals=[10, 9, 11],
        round_scores=[[5, 5], [4, 5], [6, 5]],
        piles=[[c(SP, 10)], [c(SP, 9), c(SP, 1)], []],
    )
    # seat 0: +3 -2 = 1 -> 11; seat 1: +2 -1 = 1 -> 10; seat 2: Summer 6: 1 - 1 = 0 -> 11
    events = claim(state, 0, 4)
    assert state.is_over() and state.active_seats() == [] and state.legal_moves(0) == []
    assert state.scores() == [11, 10, 11]
    assert state.winners() == [0, 2]
    assert bodies(events, "round_started") == []
    refused(state, 0, {"play_card": {"card": 0}}, NotYourTurn)


def test_winners_empty_until_over_and_single_winner():
    state = State.new(3, 1, {})
    assert state.winners() == [] and state.scores() == [0, 0, 0]
    state = build(3, hands=[[], [], []], mat=[0], phase="claim", turn=1, round_number=3, totals=[1, 5, 2])
    claim(state, 1, 0)
    assert state.winners() == [1]


# ---------------------------------------------------------------- playing to a trick


def test_play_a_card_from_hand():
    state = build(hands=[[c(SP, 3), c(SU, 4)], [c(SP, 5)], [c(SP, 6)], [c(SP, 7)]])
    events = play(state, 0, c(SU, 4))
    assert bodies(events, "card_played")[0]["lead_suit"] == "SUIT_SUMMER"
    assert state.hands[0] == [c(SP, 3)] and state.active_seats() == [1]
    assert state.trick_plays == [Play(0, "card", c(SU, 4))]


def test_play_a_die_from_the_aid_face_unchanged():
    state = build(hands=[[c(SP, 3)], [c(SP, 5)], [c(SP, 6)], [c(SP, 7)]], aids=[[2, 5], [], [], []])
    state.faces[2] = AU
    events = play_die(state, 0, 2)
    assert bodies(events, "die_played") == [
        {"seat": 0, "die": {"id": 2, "face": "SUIT_AUTUMN"}, "lead_suit": "SUIT_AUTUMN"}
    ]
    assert state.aids[0] == [5] and state.faces[2] == AU


def test_card_not_in_hand_and_die_not_on_aid_are_refused():
    state = build(hands=[[c(SP, 3)], [c(SP, 5)], [c(SP, 6)], [c(SP, 7)]], aids=[[2], [3], [], []])
    refused(state, 0, {"play_card": {"card": c(SP, 5)}}, RuleViolation, "card_not_in_hand")
    refused(state, 0, {"play_die": {"die": 3}}, RuleViolation, "die_not_on_aid")
    refused(state, 1, {"play_card": {"card": c(SP, 5)}}, NotYourTurn, "not_your_turn")


@pytest.mark.parametrize(
    ("move", "field"),
    [
        ({"play_card": {"card": 55}}, "move.play_card.card"),
        ({"play_card": {"card": -1}}, "move.play_card.card"),
        ({"play_card": {"card": "3"}}, "move.play_card.card"),
        ({"play_card": {"card": True}}, "move.play_card.card"),
        ({"play_die": {"die": 10}}, "move.play_die.die"),
        ({"claim_die": {"die": 10}}, "move.claim_die.die"),
        ({"play_card": {"card": 1, "die": 2}}, "move.play_card.die"),
        ({"play_card": 3}, "move.play_card"),
        ({"pass": {}}, "move"),
        ({}, "move"),
        ({"play_card": {"card": 1}, "play_die": {"die": 1}}, "move"),
        ([1], "move"),
    ],
)
def test_malformed_moves(move, field):
    state = build(hands=[[c(SP, 3)], [c(SP, 5)], [c(SP, 6)], [c(SP, 7)]], aids=[[2], [], [], []])
    refused(state, 0, move, MalformedMove, field)


def test_must_follow_the_lead_suit_when_holding_it():
    state = build(
        hands=[[c(AU, 4)], [c(AU, 2), c(WI, 9), c(SP, 1)], [c(SP, 6)], [c(SP, 7)]],
    )
    play(state, 0, c(AU, 4))
    refused(state, 1, {"play_card": {"card": c(WI, 9)}}, RuleViolation, "follow_suit")
    refused(state, 1, {"play_card": {"card": c(SP, 1)}}, RuleViolation, "follow_suit")
    assert state.legal_moves(1) == [{"play_card": {"card": c(AU, 2)}}]
    play(state, 1, c(AU, 2))


def test_any_card_when_not_holding_the_lead_suit():
    state = build(hands=[[c(AU, 4)], [c(WI, 9), c(SP, 1)], [c(SP, 6)], [c(SP, 7)]])
    play(state, 0, c(AU, 4))
    assert {m["play_card"]["card"] for m in state.legal_moves(1)} == {c(WI, 9), c(SP, 1)}
    play(state, 1, c(SP, 1))


def test_x_card_always_allowed_even_holding_the_lead_suit():
    state = build(hands=[[c(AU, 4)], [c(AU, 2), XC[2]], [c(SP, 6)], [c(SP, 7)]])
    play(state, 0, c(AU, 4))
    assert {"play_card": {"card": XC[2]}} in state.legal_moves(1)
    play(state, 1, XC[2])


def test_any_die_allowed_even_holding_the_lead_suit():
    # off-suit die, X die and lead-suit die are all allowed while holding Autumn
    faces = [WI, X, AU, SP, SP, SP, SP, SP, SP, SP]
    for die in (0, 1, 2):
        state = build(
            hands=[[c(AU, 4)], [c(AU, 2), c(WI, 1)], [c(SP, 6)], [c(SP, 7)]], aids=[[], [0, 1, 2], [], []]
        )
        state.faces = list(faces)
        play(state, 0, c(AU, 4))
        assert {"play_die": {"die": die}} in state.legal_moves(1)
        play_die(state, 1, die)
        assert state.trick_plays[-1] == Play(1, "die", die)


def test_lead_with_a_die_sets_the_lead_suit():
    state = build(hands=[[c(AU, 4)], [c(SU, 2), c(WI, 1)], [c(SP, 6)], [c(SP, 7)]], aids=[[3], [], [], []])
    state.faces[3] = SU
    events = play_die(state, 0, 3)
    assert bodies(events, "die_played")[0]["lead_suit"] == "SUIT_SUMMER"
    refused(state, 1, {"play_card": {"card": c(WI, 1)}}, RuleViolation, "follow_suit")
    assert state.legal_moves(1) == [{"play_card": {"card": c(SU, 2)}}]


def test_x_lead_first_suited_play_sets_the_lead_suit():
    state = build(
        hands=[[XC[0]], [c(WI, 2), c(SP, 3)], [c(SP, 6), c(WI, 8)], [c(SU, 7), XC[6]]],
    )
    events = play(state, 0, XC[0])
    assert bodies(events, "card_played")[0]["lead_suit"] == "SUIT_UNSPECIFIED"
    view = state.view(1)["trick"]
    assert view["lead_suit"] == "SUIT_UNSPECIFIED" and view["trump_suit"] == "SUIT_UNSPECIFIED"
    # no suit set yet: any card is allowed
    assert {m["play_card"]["card"] for m in state.legal_moves(1)} == {c(WI, 2), c(SP, 3)}
    events = play(state, 1, c(WI, 2))
    assert bodies(events, "card_played")[0]["lead_suit"] == "SUIT_WINTER"
    assert state.view(None)["trick"]["trump_suit"] == "SUIT_SPRING"
    # seat 2 holds Winter now: must follow Winter
    refused(state, 2, {"play_card": {"card": c(SP, 6)}}, RuleViolation, "follow_suit")
    play(state, 2, c(WI, 8))
    won = trick_result(play(state, 3, c(SU, 7)))
    assert won["winner"] == 2 and won["reason"] == "WIN_REASON_HIGHEST_LEAD_CARD"


def test_x_die_lead_first_suited_play_sets_the_lead_suit():
    state = build(
        hands=[[c(AU, 1)], [c(AU, 2), c(SU, 3)], [c(SU, 6), c(SP, 8)], [c(SU, 7)]], aids=[[4], [], [], []]
    )
    state.faces[4] = X
    play_die(state, 0, 4)
    assert state.lead_suit() is None
    play(state, 1, c(SU, 3))
    refused(state, 2, {"play_card": {"card": c(SP, 8)}}, RuleViolation, "follow_suit")


def test_x_die_acts_as_an_x_card():
    # an X die never follows nor wins: the Spring 1 card wins over an X die and an X card
    state = build(3, hands=[[XC[0]], [c(SP, 1)], [c(SU, 2)]], aids=[[], [], [7]])
    state.faces[7] = X
    play(state, 0, XC[0])
    play(state, 1, c(SP, 1))
    won = trick_result(play_die(state, 2, 7))
    assert won["winner"] == 1 and won["reason"] == "WIN_REASON_HIGHEST_LEAD_CARD"


def test_all_x_trick_goes_to_the_leader():
    state = build(4, hands=[[XC[0]], [XC[2]], [XC[4]], [XC[6]]], aids=[[], [], [5], []], leader=1)
    state.faces[5] = X
    play(state, 1, XC[2])
    play_die(state, 2, 5)
    play(state, 3, XC[6])
    won = trick_result(play(state, 0, XC[0]))
    assert won["winner"] == 1 and won["reason"] == "WIN_REASON_ALL_X_LEADER"
    assert won["lead_suit"] == "SUIT_UNSPECIFIED"
    assert state.active_seats() == [1]


def test_legal_moves_list_both_x_cards_and_every_die_of_a_face():
    state = build(hands=[[XC[0], XC[1], c(SP, 2)], [], [], []], aids=[[1, 2, 3, 6], [], [], []])
    state.faces = [SP, SU, SU, X, SP, SP, X, SP, SP, SP]
    moves = state.legal_moves(0)
    assert moves == [
        {"play_card": {"card": c(SP, 2)}},
        {"play_card": {"card": XC[0]}},
        {"play_card": {"card": XC[1]}},
        {"play_die": {"die": 1}},
        {"play_die": {"die": 2}},
        {"play_die": {"die": 3}},
        {"play_die": {"die": 6}},
    ]
    for move in moves:  # each listed move, sent unchanged, is accepted and plays that very item
        trial = State.from_dict(state.to_dict())
        trial.apply(0, json.loads(json.dumps(move)))
        ((kind, body),) = move.items()
        if kind == "play_card":
            assert body["card"] not in trial.hands[0] and len(trial.hands[0]) == 2
        else:
            assert body["die"] not in trial.aids[0] and len(trial.aids[0]) == 3
        played = Play(0, "card" if kind == "play_card" else "die", next(iter(body.values())))
        assert trial.trick_plays == [played]


def test_three_identical_spring_dice_are_three_listed_claims():
    state = build(
        3,
        hands=[[], [], []],
        mat=[2, 5, 7, 8],
        faces=[SU] * 2 + [SP] + [SU] * 2 + [SP, SU, SP, X, SU],
        phase="claim",
        turn=1,
    )
    moves = state.legal_moves(1)
    assert moves == [{"claim_die": {"die": d}} for d in (2, 5, 7, 8)]
    for die in (2, 5, 7):
        trial = State.from_dict(state.to_dict())
        claim(trial, 1, die)
        assert trial.aids[1] == [die] and sorted([*trial.mat, die]) == [2, 5, 7, 8]


# ---------------------------------------------------------------- who wins a trick


def run_trick(players: int, plays: list[tuple], faces: list[int] | None = None, leader: int = 0) -> dict:
    """plays: (kind, id) in seat order from the leader; returns the trick_won body."""
    hands = [[] for _ in range(players)]
    aids = [[] for _ in range(players)]
    order = [(leader + i) % players for i in range(players)]
    for seat, (kind, item) in zip(order, plays, strict=True):
        (hands if kind == "card" else aids)[seat].append(item)
    state = build(players, hands=hands, aids=aids, faces=faces, leader=leader)
    events = []
    for seat, (kind, item) in zip(order, plays, strict=True):
        events = play(state, seat, item) if kind == "card" else play_die(state, seat, item)
    won = trick_result(events)
    assert state.piles[won["winner"]] == sorted(i for k, i in plays if k == "card")
    assert state.pile_dice[won["winner"]] == sorted(i for k, i in plays if k == "die")
    return won


def test_highest_trump_card_wins_over_higher_lead_cards_and_trump_dice():
    faces = [SU] * 10
    won = run_trick(4, [("card", c(SP, 9)), ("die", 0), ("card", c(SU, 2)), ("card", c(SU, 5))], faces=faces)
    assert (won["winner"], won["reason"]) == (3, "WIN_REASON_HIGHEST_TRUMP_CARD")
    assert (won["lead_suit"], won["trump_suit"]) == ("SUIT_SPRING", "SUIT_SUMMER")


def test_trump_card_zero_beats_a_trump_die():
    won = run_trick(
        5,
        [("card", c(AU, 10)), ("die", 0), ("card", c(WI, 0)), ("card", c(AU, 1)), ("card", XC[0])],
        faces=[WI] * 10,
    )
    assert (won["winner"], won["reason"]) == (2, "WIN_REASON_HIGHEST_TRUMP_CARD")


def test_first_trump_die_wins_when_no_trump_card():
    faces = [AU, AU, SU, SU, SU, SU, SU, SU, SU, SU]
    won = run_trick(4, [("card", c(SU, 9)), ("card", c(SU, 1)), ("die", 0), ("die", 1)], faces=faces)
    assert (won["winner"], won["reason"]) == (2, "WIN_REASON_FIRST_TRUMP_DIE")
    assert won["trump_suit"] == "SUIT_AUTUMN"


def test_winter_lead_has_spring_trump():
    won = run_trick(3, [("card", c(WI, 7)), ("card", c(SP, 1)), ("card", c(SU, 7))], leader=2)
    assert (won["winner"], won["reason"]) == (0, "WIN_REASON_HIGHEST_TRUMP_CARD")
    assert (won["lead_suit"], won["trump_suit"]) == ("SUIT_WINTER", "SUIT_SPRING")


def test_highest_lead_card_wins_without_trump_off_suit_ignored():
    won = run_trick(
        4, [("card", c(AU, 3)), ("card", c(SP, 9)), ("card", c(AU, 7)), ("card", c(AU, 5))], leader=1
    )
    # order: seat1 Autumn 3, seat2 Spring 9, seat3 Autumn 7, seat0 Autumn 5
    assert (won["winner"], won["reason"]) == (3, "WIN_REASON_HIGHEST_LEAD_CARD")


def test_lead_card_zero_beats_a_lead_die():
    faces = [SP] * 10
    won = run_trick(
        5, [("die", 0), ("card", c(SP, 0)), ("card", c(AU, 9)), ("card", XC[0]), ("die", 1)], faces=faces
    )
    assert (won["winner"], won["reason"]) == (1, "WIN_REASON_HIGHEST_LEAD_CARD")


def test_first_lead_die_wins_when_only_dice_follow():
    faces = [WI, WI, AU, SU, SU, SU, SU, SU, SU, SU]
    won = run_trick(4, [("card", XC[0]), ("die", 0), ("die", 1), ("card", c(AU, 8))], faces=faces)
    # lead suit Winter set by seat 1's die; no Spring (trump) played; no Winter card
    assert (won["winner"], won["reason"]) == (1, "WIN_REASON_FIRST_LEAD_DIE")


def test_suited_die_wins_when_it_is_the_only_trump():
    faces = [SU] * 10
    won = run_trick(3, [("card", c(SP, 7)), ("card", c(SP, 6)), ("die", 0)], faces=faces)
    assert (won["winner"], won["reason"]) == (2, "WIN_REASON_FIRST_TRUMP_DIE")


def test_trick_winner_function_order_of_tests():
    faces = [SP, SU, AU, WI, X, X, SP, SU, AU, WI]
    # trump dice only (lead Spring by card, trump Summer by dice 1 and 7): the first one
    plays = [Play(0, "card", c(SP, 4)), Play(1, "die", 7), Play(2, "die", 1)]
    assert rules.trick_winner(0, plays, faces)[:2] == (1, "WIN_REASON_FIRST_TRUMP_DIE")
    # lead set by a die, lead card wins over it
    plays = [Play(0, "die", 0), Play(1, "die", 4), Play(2, "card", c(SP, 1))]
    assert rules.trick_winner(0, plays, faces)[:2] == (2, "WIN_REASON_HIGHEST_LEAD_CARD")


# ---------------------------------------------------------------- score piles and scoring


def test_trick_goes_to_the_winners_score_pile_x_public_cards_hidden():
    faces = [X, SU, SU, SU, SU, SU, SU, SU, SU, SU]
    state = build(3, hands=[[c(SP, 5)], [XC[2]], [c(SP, 8)]], aids=[[], [], [0]], faces=faces)
    play(state, 0, c(SP, 5))
    play(state, 1, XC[2])
    play(state, 2, c(SP, 8))
    assert state.piles[2] == sorted([c(SP, 5), XC[2], c(SP, 8)])
    other = state.view(0)["players"][2]
    assert other["pile_size"] == 3 and other["pile_x_cards"] == 1 and other["pile"] == []
    assert other["tricks_won"] == 1
    own = state.view(2)["players"][2]
    assert [x["id"] for x in own["pile"]] == state.piles[2]


def test_dice_in_a_won_trick_go_to_the_score_pile_apart_from_the_aid():
    faces = [X, SP, SU, SU, SU, SU, SU, SU, SU, SU]
    state = build(3, hands=[[c(SP, 5)], [c(SP, 2)], [c(SP, 1)]], aids=[[0], [1], [2, 3]], faces=faces)
    play_die(state, 0, 0)
    play_die(state, 1, 1)
    play(state, 2, c(SP, 1))
    assert state.pile_dice[2] == [0, 1] and state.aids[2] == [2, 3]
    view = state.view(1)["players"][2]
    assert view["pile_dice"] == [{"id": 0, "face": "SUIT_X"}, {"id": 1, "face": "SUIT_SPRING"}]
    assert view["aid"] == [{"id": 2, "face": "SUIT_SUMMER"}, {"id": 3, "face": "SUIT_SUMMER"}]


def test_card_values_match_the_table():
    for rank in range(11):
        for suit in range(4):
            card = rules.card_dict(c(suit, rank))
            assert (card["vp"], card["np"], card["rot"]) == (TABLE_VP[rank], TABLE_NP[rank], TABLE_NP[rank])
    assert rules.card_dict(XC[3]) == {"id": XC[3], "suit": "SUIT_X", "rank": 0, "vp": 0, "np": 0, "rot": 0}


def test_round_score_is_vp_minus_np_suited_dice_zero():
    piles = [[c(SP, r) for r in range(11)], [c(WI, 8), c(AU, 3)], []]
    dice = [[0, 1, 2, 3], [], [6]]
    faces = [SP, SU, AU, WI, SP, SP, SU, SP, SP, SP]
    res = rules.score_piles(piles, dice, faces)
    assert res[0]["score"] == sum(TABLE_VP.values()) - sum(TABLE_NP.values()) == 15 - 7
    assert (res[1]["vp"], res[1]["np"], res[1]["score"]) == (1, 3, -2)
    assert res[2]["score"] == 0
    assert all(r["x_count"] == 0 and r["x_bonus"] == 0 for r in res)


@pytest.mark.parametrize(
    ("xs", "bonus"),
    [
        ([3, 2, 1, 0], [-3, 2, 0, 0]),  # unique most and next-most
        ([3, 3, 1, 0], [-3, -3, 1, 0]),  # tie for most: all lose; next-most gains
        ([4, 2, 2, 1], [-4, 2, 2, 0]),  # tie for next-most: all gain
        ([2, 2, 2], [-2, -2, -2]),  # everybody with Xs tied for most: nobody gains
        ([2, 0, 0, 0, 0], [-2, 0, 0, 0, 0]),  # a single holder; zero Xs is in no group
        ([0, 0, 0], [0, 0, 0]),
        ([1, 5, 0, 1, 3], [0, -5, 0, 0, 3]),
    ],
)
def test_x_majority(xs, bonus):
    assert rules.x_bonuses(xs) == bonus


def test_x_majority_counts_x_cards_and_x_dice_in_the_pile():
    faces = [X, X, X, SP, SP, SP, SP, SP, SP, SP]
    piles = [[XC[0]], [XC[1], XC[2]], [c(SP, 2)]]
    dice = [[0, 1], [3], [2]]
    res = rules.score_piles(piles, dice, faces)
    assert [r["x_count"] for r in res] == [3, 2, 1]
    assert [r["x_bonus"] for r in res] == [-3, 2, 0]
    assert [r["score"] for r in res] == [-3, 2, 1]


# ---------------------------------------------------------------- views


def test_view_shows_own_hand_only_and_public_information():
    state = State.new(4, 11, {})
    for seat in range(4):
        view = state.view(seat)
        assert [x["id"] for x in view["hand"]] == state.hands[seat]
        assert [p["hand_size"] for p in view["players"]] == [11] * 4
        shown = {x["id"] for x in view["hand"]}
        for other in range(4):
            if other != seat:
                assert not shown & set(state.hands[other])
        assert "seed" not in json.dumps(view)
    spectator = state.view(None)
    assert spectator["hand"] == []
    assert (spectator["round"], spectator["rounds"], spectator["phase"]) == (1, 4, "PHASE_PLAY")
    assert spectator["player_count"] == 4 and len(spectator["mat"]) == 10


def test_view_in_claim_phase_shows_the_trick_just_won():
    state = finished_trick()
    view = state.view(0)
    assert view["phase"] == "PHASE_CLAIM" and view["turn"] == 1
    last = view["last_trick"]
    assert last["complete"] and last["winner"] == 1 and last["reason"] == "WIN_REASON_HIGHEST_LEAD_CARD"
    assert [p["card"]["id"] for p in last["plays"]] == [c(SU, 2), c(SU, 7), c(SU, 5)]
    assert view["trick"]["plays"] == [] and view["tricks_played"] == 1
    claim(state, 1, 0)
    assert state.view(0)["last_trick"]["plays"] == []


@pytest.mark.parametrize(("tricks_before", "mat", "next_number"), [(8, [8, 9], 10), (9, [9], 0)])
def test_claim_view_numbers_the_trick_to_come_and_none_after_the_tenth(tricks_before, mat, next_number):
    state = build(
        3,
        hands=[[c(SP, 5), c(SU, 3)], [c(SP, 1), c(SU, 4)], [c(SP, 2), c(AU, 1)]],
        mat=mat,
        tricks_done=tricks_before,
    )
    play(state, 0, c(SP, 5))
    play(state, 1, c(SP, 1))
    play(state, 2, c(SP, 2))
    for viewer in (None, 0, 1, 2):
        view = state.view(viewer)
        assert view["phase"] == "PHASE_CLAIM" and view["tricks_played"] == tricks_before + 1
        assert view["last_trick"]["number"] == tricks_before + 1 and view["last_trick"]["complete"]
        assert view["trick"]["number"] == next_number and view["trick"]["plays"] == []


def test_view_shows_every_seats_aid_public_pile_contents_and_scores():
    faces = [SP, SU, AU, WI, X, X, SP, SU, AU, WI]
    state = build(
        3,
        hands=[[c(SP, 5), c(AU, 1)], [c(SP, 2)], [c(SP, 1)]],
        aids=[[3], [4], []],
        faces=faces,
        piles=[[XC[0], c(SU, 9)], [], []],
        pile_dice=[[5, 6], [], []],
        round_number=2,
        totals=[4, -1, 2],
        round_scores=[[4], [-1], [2]],
    )
    state.tricks_won = [1, 0, 0]
    expected = {
        "seat": 0,
        "hand_size": 2,
        "aid": [{"id": 3, "face": "SUIT_WINTER"}],
        "pile_size": 2,
        "pile_x_cards": 1,
        "pile_dice": [{"id": 5, "face": "SUIT_X"}, {"id": 6, "face": "SUIT_SPRING"}],
        "pile": [],
        "tricks_won": 1,
        "round_scores": [4],
        "total": 4,
    }
    for viewer in (None, 1, 2):
        assert state.view(viewer)["players"][0] == expected
    own = state.view(0)["players"][0]
    assert [x["id"] for x in own["pile"]] == [c(SU, 9), XC[0]]
    assert own == {**expected, "pile": own["pile"]}
    assert state.view(2)["players"][1]["aid"] == [{"id": 4, "face": "SUIT_X"}]
    assert [p["total"] for p in state.view(None)["players"]] == [4, -1, 2]


# ---------------------------------------------------------------- review: rules checked again by hand


def test_first_trump_die_is_the_first_played_not_the_lowest_seat():
    # leader 2: seats play 2, 3, 0, 1; seats 3 and 0 both play a Summer (trump) die: seat 3 was first
    faces = [SU, SU, SP, SP, SP, SP, SP, SP, SP, SP]
    won = run_trick(
        4, [("card", c(SP, 5)), ("die", 0), ("die", 1), ("card", c(SP, 9))], faces=faces, leader=2
    )
    assert (won["winner"], won["reason"]) == (3, "WIN_REASON_FIRST_TRUMP_DIE")


def test_first_lead_die_is_the_first_played_not_the_lowest_seat():
    # leader 1 plays an X; seat 2's Winter die sets the lead suit; seat 0's Winter die comes later
    faces = [WI, WI, SP, SP, SP, SP, SP, SP, SP, SP]
    won = run_trick(3, [("card", XC[2]), ("die", 0), ("die", 1)], faces=faces, leader=1)
    assert (won["winner"], won["reason"]) == (2, "WIN_REASON_FIRST_LEAD_DIE")
    assert (won["lead_suit"], won["trump_suit"]) == ("SUIT_WINTER", "SUIT_SPRING")


def test_off_suit_dice_and_cards_that_are_not_trump_never_win():
    # lead Spring (trump Summer): an Autumn die, a Winter card and an X die lose to the Spring 1
    faces = [AU, X, SP, SP, SP, SP, SP, SP, SP, SP]
    won = run_trick(
        5,
        [("card", c(SP, 1)), ("die", 0), ("card", c(WI, 10)), ("die", 1), ("card", c(AU, 10))],
        faces=faces,
    )
    assert (won["winner"], won["reason"]) == (0, "WIN_REASON_HIGHEST_LEAD_CARD")


def test_trump_die_beats_every_lead_card_and_lead_die():
    faces = [SP, SU, SP, SP, SP, SP, SP, SP, SP, SP]
    won = run_trick(
        4, [("die", 0), ("card", c(SP, 10)), ("die", 1), ("card", c(SP, 9))], faces=faces, leader=3
    )
    # order: seat 3 Spring die (lead Spring), seat 0 Spring 10, seat 1 Summer die (trump), seat 2 Spring 9
    assert (won["winner"], won["reason"]) == (1, "WIN_REASON_FIRST_TRUMP_DIE")


def test_x_card_lead_then_a_suited_die_sets_the_suit_to_follow_and_the_trump():
    state = build(
        hands=[[XC[0]], [c(SP, 1)], [c(AU, 2), c(WI, 3)], [c(WI, 1), c(AU, 9)]],
        aids=[[], [6], [], []],
        faces=[SP] * 6 + [AU] + [SP] * 3,
    )
    play(state, 0, XC[0])
    # nothing set yet: seat 1 may play its Spring card or its die
    assert state.legal_moves(1) == [{"play_card": {"card": c(SP, 1)}}, {"play_die": {"die": 6}}]
    events = play_die(state, 1, 6)
    assert bodies(events, "die_played")[0]["lead_suit"] == "SUIT_AUTUMN"
    assert state.view(None)["trick"]["trump_suit"] == "SUIT_WINTER"
    # seat 2 holds Autumn: the die set the suit it must follow
    refused(state, 2, {"play_card": {"card": c(WI, 3)}}, RuleViolation, "follow_suit")
    play(state, 2, c(AU, 2))
    # seat 3 must follow Autumn too; its Autumn 9 beats the Autumn die and the Autumn 2
    refused(state, 3, {"play_card": {"card": c(WI, 1)}}, RuleViolation, "follow_suit")
    won = trick_result(play(state, 3, c(AU, 9)))
    assert (won["winner"], won["reason"]) == (3, "WIN_REASON_HIGHEST_LEAD_CARD")


def test_x_cards_in_hand_do_not_count_as_holding_the_lead_suit():
    state = build(hands=[[c(SP, 4)], [XC[2], XC[3], c(WI, 2), c(AU, 5)], [c(SP, 6)], [c(SP, 7)]])
    play(state, 0, c(SP, 4))
    assert state.legal_moves(1) == [
        {"play_card": {"card": c(AU, 5)}},
        {"play_card": {"card": c(WI, 2)}},
        {"play_card": {"card": XC[2]}},
        {"play_card": {"card": XC[3]}},
    ]
    play(state, 1, c(WI, 2))


def test_holding_the_lead_suit_allows_only_lead_cards_x_cards_and_dice():
    faces = [SU, X, SP, SP, SP, SP, SP, SP, SP, SP]
    state = build(
        hands=[[c(SP, 4)], [c(SP, 2), c(SP, 8), c(SU, 1), c(WI, 5), XC[2]], [c(SP, 6)], [c(SP, 7)]],
        aids=[[], [0, 1], [], []],
        faces=faces,
    )
    play(state, 0, c(SP, 4))
    assert state.legal_moves(1) == [
        {"play_card": {"card": c(SP, 2)}},
        {"play_card": {"card": c(SP, 8)}},
        {"play_card": {"card": XC[2]}},
        {"play_die": {"die": 0}},
        {"play_die": {"die": 1}},
    ]
    for card in (c(SU, 1), c(WI, 5)):
        refused(state, 1, {"play_card": {"card": card}}, RuleViolation, "follow_suit")


@pytest.mark.parametrize(("players", "ranks"), [(3, range(1, 8)), (4, range(1, 10)), (5, range(0, 11))])
def test_every_round_deals_nine_deck_cards_and_two_own_x_cards_to_each_seat(players, ranks):
    state = State.new(players, 5, {})
    deck = {s * 11 + r for s in range(4) for r in ranks} | ({54} if players == 5 else set())
    for round_number in range(1, players + 1):
        assert state.round == round_number
        dealt: list[int] = []
        for seat, hand in enumerate(state.hands):
            own_x = {44 + 2 * seat, 45 + 2 * seat}
            assert own_x <= set(hand) and len(hand) == 11
            dealt += [x for x in hand if x not in own_x]
        assert len(dealt) == len(set(dealt)) == 9 * players
        assert set(dealt) | set(state.unused) == deck
        assert len(state.unused) == (1 if players == 3 else 0)
        assert not state.piles[0] and not state.aids[0] and len(state.mat) == 10
        # play the round out with the first legal move
        while state.round == round_number and not state.is_over():
            (seat,) = state.active_seats()
            state.apply(seat, state.legal_moves(seat)[0])


def test_die_faces_are_the_four_seasons_once_and_x_twice():
    # 10 dice x 2000 seeds; each season 1/6, X 1/3 of the faces (bounds far outside chance)
    faces = [f for seed in range(2000) for f in State.new(3, seed, {}).faces]
    share = {face: faces.count(face) / len(faces) for face in (SP, SU, AU, WI, X)}
    for season in (SP, SU, AU, WI):
        assert 0.15 < share[season] < 0.183
    assert 0.31 < share[X] < 0.357


def test_each_round_is_led_first_by_its_start_player():
    state = State.new(4, 8, {"first_player": 2})
    leaders = []
    while not state.is_over():
        (seat,) = state.active_seats()
        if state.phase == "play" and state.tricks_done == 0 and not state.trick_plays:
            leaders.append((state.round, seat))
        state.apply(seat, state.legal_moves(seat)[-1])
    assert leaders == [(1, 2), (2, 3), (3, 0), (4, 1)]


def test_round_end_x_majority_ties_are_scored_by_the_engine():
    # claim of the last die: seats 0 and 1 tie for most Xs (2), seats 2 and 3 tie for next-most (1)
    faces = [X, X, SP, SU, AU, WI, SP, SU, AU, X]
    state = build(
        4,
        hands=[[XC[0]], [c(SP, 7)], [XC[4]], []],
        aids=[[1], [], [], []],
        faces=faces,
        mat=[9],
        phase="claim",
        turn=3,
        leader=3,
        tricks_done=10,
        piles=[[c(SU, 5)], [XC[2], XC[3]], [c(AU, 8)], []],
    )
    events = claim(state, 3, 9)  # the last die is an X die: seat 3 now holds 1 X
    (ended,) = bodies(events, "round_ended")
    got = [(r["x_count"], r["x_bonus"], r["score"]) for r in ended["results"]]
    # seat 0: X card + X die = 2, -2, Summer 5 +2 -> 0; seat 1: 2 X cards, -2, Spring 7 +2 -> 0
    # seat 2: 1 X card, +1, Autumn 8 (1 - 2) -> 0; seat 3: claimed X die, +1 -> 1
    assert got == [(2, -2, 0), (2, -2, 0), (1, 1, 0), (1, 1, 1)]


def card_ids_in(obj) -> set[int]:
    """Every Card id in a view or event dict (a Card is the dict with id, suit and rank)."""
    found: set[int] = set()
    if isinstance(obj, dict):
        if {"id", "suit", "rank"} <= set(obj):
            found.add(obj["id"])
        for value in obj.values():
            found |= card_ids_in(value)
    elif isinstance(obj, list):
        for value in obj:
            found |= card_ids_in(value)
    return found


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_three_player_unused_card_never_appears_in_any_view_or_event(seed):
    state = State.new(3, seed, {})
    while not state.is_over():
        hidden = state.unused[0]
        for viewer in (None, 0, 1, 2):
            assert hidden not in card_ids_in(state.view(viewer))
        (seat,) = state.active_seats()
        moves = state.legal_moves(seat)
        events = state.apply(seat, moves[len(moves) // 2])
        ended = any("round_ended" in e.body for e in events)
        for event in events:
            if not ended or "round_ended" in event.body:
                assert hidden not in card_ids_in(event.body)
            else:  # the next round's deal has its own unused card
                assert state.unused[0] not in card_ids_in(event.body)


def test_round_goes_on_while_a_die_is_left_on_the_mat():
    # ninth claim: one die stays on the mat, so the winner leads a tenth trick in the same round
    state = build(
        3,
        hands=[[c(SP, 5), c(SP, 6)], [c(SU, 1), c(SU, 2)], [c(AU, 1), c(AU, 2)]],
        mat=[8, 9],
        phase="claim",
        turn=2,
        leader=2,
        tricks_done=9,
    )
    events = claim(state, 2, 8)
    assert bodies(events, "round_ended") == [] and bodies(events, "round_started") == []
    assert (state.round, state.phase, state.mat, state.active_seats()) == (1, "play", [9], [2])
    assert [len(h) for h in state.hands] == [2, 2, 2] and state.aids[2] == [8]
