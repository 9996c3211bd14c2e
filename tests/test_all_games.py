"""One random-simulation suite over every game in the catalog (OpenSpiel style).

Per-game suites in tests/<game>/ check each rule and the game's own invariants; this
one checks what every engine owes the platform: determinism, snapshots, legal moves
that apply, contract-shaped dicts, and full random matches through the gateway.
"""

from __future__ import annotations

import json
import random

import pytest
from google.protobuf import json_format

from clients.bot import play_match
from clients.game_client import game_modules
from services.catalog import GAME_PACKAGES, rules_module
from services.runtime.codec import to_dict

GAMES = sorted(GAME_PACKAGES)


def default_options(game: str) -> dict:
    pb2, _ = game_modules(game)
    return to_dict(pb2.CreateMatchRequest().options)


def sampled(step: int) -> bool:
    """Every move early in a match, then every 25th: the checks are costly, matches long."""
    return step < 80 or step % 25 == 0


def playout(game: str, players: int, seed: int, check=None):
    rules = rules_module(game)
    state = rules.State.new(players, seed, default_options(game))
    rng = random.Random(seed)
    trail = []
    for step in range(20_000):
        if state.is_over():
            return state, trail
        seat = rng.choice(state.active_seats())
        moves = state.legal_moves(seat)
        assert moves, f"{game}: active seat {seat} has no legal move"
        move = rng.choice(moves)
        events = state.apply(seat, move)
        trail.append((seat, move, events))
        if check and sampled(step):
            check(state, seat, move, events)
    raise AssertionError(f"{game} seed {seed}: no end after 20000 moves")


@pytest.mark.parametrize("game", GAMES)
def test_random_matches_are_deterministic_and_contract_shaped(game):
    rules = rules_module(game)
    pb2, _ = game_modules(game)
    info = rules.GAME

    def check(state, seat, move, events):
        assert to_dict(json_format.ParseDict(move, pb2.Move())) == move
        for event in events:
            assert to_dict(json_format.ParseDict(event.body, pb2.MatchEvent())) == {
                "version": "0",
                "seq": 0,
                **event.body,
            }
        snapshot = state.to_dict()
        assert rules.State.from_dict(json.loads(json.dumps(snapshot))).to_dict() == snapshot
        for viewer in [None, *range(len(state.scores()))]:
            view = state.view(viewer)
            message = json_format.ParseDict(view, pb2.View())
            assert {
                k: v
                for k, v in to_dict(message).items()
                if k not in ("version", "seat", "active_seats", "clocks")
            } == view

    for players in range(info.min_players, info.max_players + 1):
        for seed in (players, players + 10):
            final, trail = playout(game, players, seed, check)
            again, trail_again = playout(game, players, seed)
            assert again.to_dict() == final.to_dict()
            assert [(s, m) for s, m, _ in trail] == [(s, m) for s, m, _ in trail_again]
            assert (
                final.is_over()
                and final.legal_moves(final.active_seats()[0] if final.active_seats() else 0) == []
            )
            assert len(final.scores()) == players
            assert final.winners() and set(final.winners()) <= set(range(players))


@pytest.mark.parametrize("game", GAMES)
def test_seed_is_never_shown(game):
    rules = rules_module(game)
    seed = 918_273_645_546
    state = rules.State.new(rules.GAME.min_players, seed, default_options(game))
    for viewer in [None, *range(rules.GAME.min_players)]:
        assert str(seed) not in json.dumps(state.view(viewer))


@pytest.mark.parametrize("game", GAMES)
async def test_random_matches_through_the_gateway(cluster, game):
    info = rules_module(game).GAME
    client = cluster.client(game)
    for players in range(info.min_players, info.max_players + 1):
        played = await play_match(client, players, seed=1000 + players)
        facts = await client.match(played.match_id)
        assert facts.status == 3 and facts.version == played.moves  # FINISHED
        assert list(facts.winners) == played.winners and played.winners


def test_bot_options_parse_to_typed_values():
    from clients.bot import parse_options

    assert parse_options(["max_rounds=2", "bid_for_solo=TRUE", "layout=hexagon", "first_player=-1"]) == {
        "max_rounds": 2,
        "bid_for_solo": True,
        "layout": "hexagon",
        "first_player": -1,
    }
    with pytest.raises(ValueError):
        parse_options(["max_rounds"])


async def test_bot_passes_match_options_through_the_gateway(cluster):
    client = cluster.client("more")
    played = await play_match(client, 3, seed=5, options={"max_rounds": 1})
    assert played.finished and (await client.match(played.match_id)).status == 3
