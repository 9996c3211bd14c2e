"""Mori through the gateway: illegal plays are refused with FAILED_PRECONDITION naming the rule,
and change nothing (issue 3)."""

from __future__ import annotations

import grpc
from google.protobuf import json_format
from mogames.mori.v1 import mori_pb2

from tests.helpers import StartedMatch, refusal, start_match

GAME = "mori"


def card_move(card: int) -> mori_pb2.Move:
    return mori_pb2.Move(play_card=mori_pb2.PlayCard(card=card))


def season(card: mori_pb2.Card) -> bool:
    return card.suit != mori_pb2.SUIT_X


async def refused(client, started: StartedMatch, seat: int, move: mori_pb2.Move, reason: str) -> None:
    before = await client.match(started.match_id)
    view = await client.view(started.match_id, started.tokens[seat])
    got = await refusal(client.submit(started.match_id, started.tokens[seat], move))
    assert (got.code, got.reason) == (grpc.StatusCode.FAILED_PRECONDITION, reason), got
    after = await client.match(started.match_id)
    assert after.version == before.version
    again = await client.view(started.match_id, started.tokens[seat])
    assert json_format.MessageToDict(again) == json_format.MessageToDict(view)


async def revoke_position(client) -> tuple[StartedMatch, int, int]:
    """A 4-player match where seat 0 leads a Season card whose suit seat 1 holds together with
    another Season card: (match, lead card, a card of seat 1 that would revoke)."""
    for seed in range(1, 60):
        started = await start_match(client, 4, seed=seed)
        lead_hand = (await client.view(started.match_id, started.tokens[0])).hand
        hand = (await client.view(started.match_id, started.tokens[1])).hand
        for lead in filter(season, lead_hand):
            follows = [c for c in hand if c.suit == lead.suit]
            revokes = [c for c in hand if season(c) and c.suit != lead.suit]
            if follows and revokes:
                return started, lead.id, revokes[0].id
    raise AssertionError("no seed gives a revoke position")


async def test_illegal_plays_are_refused_with_the_rule_and_change_nothing(cluster):
    client = cluster.client(GAME)
    started, lead, revoke = await revoke_position(client)
    tokens = started.tokens
    await client.submit(started.match_id, tokens[0], card_move(lead))
    # revoking while holding the lead suit
    await refused(client, started, 1, card_move(revoke), "follow_suit")
    # a die you don't have (nothing is on any aid before the first claim)
    await refused(client, started, 1, mori_pb2.Move(play_die=mori_pb2.PlayDie(die=3)), "die_not_on_aid")
    # claiming a die before winning a trick: the seat to play, then a seat whose turn it is not
    claim = mori_pb2.Move(claim_die=mori_pb2.ClaimDie(die=0))
    await refused(client, started, 1, claim, "claim_after_trick")
    await refused(client, started, 2, claim, "claim_by_trick_winner")
    # finish the trick with legal plays; only its winner may claim, and must claim before leading
    for seat in (1, 2, 3):
        legal = await client.legal_moves(started.match_id, tokens[seat])
        response = await client.submit(started.match_id, tokens[seat], legal.moves[0])
    (won,) = [e.trick_won for e in response.events if e.HasField("trick_won")]
    winner = won.winner
    for seat in range(4):
        if seat != winner:
            await refused(client, started, seat, claim, "claim_by_trick_winner")
    hand = (await client.view(started.match_id, tokens[winner])).hand
    await refused(client, started, winner, card_move(hand[0].id), "claim_die_first")
    response = await client.submit(started.match_id, tokens[winner], claim)
    (claimed,) = [e.die_claimed for e in response.events if e.HasField("die_claimed")]
    assert (claimed.seat, claimed.die.id, claimed.dice_left) == (winner, 0, 9)
