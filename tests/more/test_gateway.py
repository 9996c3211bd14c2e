"""More through the gateway: the take of issue 13 (the top card fits only after an addition
from the hand) is listed, accepted and finished."""

from __future__ import annotations

from google.protobuf import json_format
from mogames.more.v1 import more_pb2

from services.more.cards import extend, three_card_melds
from services.more.rules import State
from tests.more.test_take_search import continuation

GAME = "more"
SEED = 16  # found offline: after 7 moves of the policy below the position arises
OPTIONS = {"bid_for_solo": False, "max_rounds": 1}
TAKE = {"take_pile": {}}


def policy(moves: list[dict]) -> dict:
    """Draw, meld what can be melded, discard the first card."""
    for kind in ("draw", "add_to_meld", "lay_meld", "discard"):
        for move in moves:
            if kind in move:
                return move
    return moves[0]


def fits_only_after_additions(state: State) -> bool:
    """The top card neither joins a meld of the side as the table stands nor makes a 3-card meld
    with the hand: taking it needs other cards melded first."""
    s = state.to_dict()
    seat, top = s["turn"], s["discard"][-1]
    side = state.side(seat)
    for meld in s["melds"]:
        if meld["side"] == side and (extend(meld, top, True) or extend(meld, top, False)):
            return False
    return not three_card_melds([*s["hands"][seat], top], s["scores"][seat] > 1500, must_include=top)


def proto(move: dict) -> more_pb2.Move:
    return json_format.ParseDict(move, more_pb2.Move())


async def test_a_take_that_needs_an_addition_first_through_the_gateway(cluster):
    client = cluster.client(GAME)
    match = await client.create(3, seed=SEED, options=OPTIONS)
    tokens = {}
    for n in range(3):
        joined = await client.join(match.match_id, f"player-{n}")
        tokens[joined.seat] = joined.token
    local = State.new(3, SEED, OPTIONS)
    while not (
        local.to_dict()["phase"] == "draw"
        and fits_only_after_additions(local)
        and TAKE in local.legal_moves(local.active_seats()[0])
    ):
        seat = local.active_seats()[0]
        move = policy(local.legal_moves(seat))
        await client.submit(match.match_id, tokens[seat], proto(move))
        local.apply(seat, move)
        assert len(local.to_dict()["rounds"]) == 0, "the position did not arise"
    seat = local.active_seats()[0]
    listed = await client.legal_moves(match.match_id, tokens[seat])
    assert proto(TAKE) in listed.moves
    top = local.to_dict()["discard"][-1]
    response = await client.submit(match.match_id, tokens[seat], proto(TAKE))
    assert any(e.HasField("pile_taken") for e in response.events)
    local.apply(seat, TAKE)
    steps = continuation(local, seat)
    assert steps is not None and len(steps) >= 3  # at least one addition before the top card
    for move in steps:
        listed = await client.legal_moves(match.match_id, tokens[seat])
        assert proto(move) in listed.moves
        await client.submit(match.match_id, tokens[seat], proto(move))
    view = await client.view(match.match_id, tokens[seat])
    assert view.turn != seat and not view.must_meld_top
    assert any(top in [card.id for card in meld.cards] for meld in view.melds)
