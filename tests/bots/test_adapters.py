"""Every bot adapter: determinization is consistent with what the seat knows, playouts stay
legal, and every level decides a legal move."""

from __future__ import annotations

import random

import pytest

from services.bots.adapters import games_with_adapters
from services.bots.decide import decide
from services.bots.levels import LEVELS, Budget
from services.catalog import rules_module
from tests.bots.positions import player_counts, positions

GAMES = games_with_adapters()
SMALL = Budget(playouts=12, cpu_s=None)


def test_mori_and_happy_mochi_have_adapters():
    assert {"mori", "happy_mochi"} <= set(GAMES)


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("with_history", [True, False])
def test_determinization_shows_the_seat_its_own_view(game, with_history):
    from services.bots.adapters import adapter

    module = adapter(game)
    checked = 0
    for players in player_counts(game):
        for seed in range(4):
            for position in positions(game, players, seed, every=5):
                view, history = position.information()
                for sample in range(2):
                    rng = random.Random(sample)
                    state = module.determinize(view, position.seat, rng, history if with_history else None)
                    assert state.view(position.seat) == view, (game, players, seed)
                    true_moves = position.state.legal_moves(position.seat)
                    assert state.legal_moves(position.seat) == true_moves
                    checked += 1
    assert checked > 100


@pytest.mark.parametrize("game", GAMES)
def test_a_determinization_plays_on_to_the_end_with_the_playout_policy(game):
    from services.bots.adapters import adapter

    module = adapter(game)
    players = player_counts(game)[0]
    for position in positions(game, players, seed=11, every=40):
        view, history = position.information()
        rng = random.Random(3)
        state = module.determinize(view, position.seat, rng, history)
        for _ in range(5000):
            if state.is_over():
                break
            seat = state.active_seats()[0]
            move = module.playout_move(state, seat, rng)
            assert move in state.legal_moves(seat)
            state.apply(seat, move)
            if hasattr(module, "evaluate"):
                assert 0.0 <= module.evaluate(state, position.seat) <= 1.0
        assert state.is_over()


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("level", LEVELS)
def test_every_level_decides_a_legal_move(game, level):
    players = player_counts(game)[0]
    for i, position in enumerate(positions(game, players, seed=5, every=9, limit=120)):
        view, history = position.information()
        move = decide(game, view, position.seat, level, seed=i, history=history, budget=SMALL)
        assert move in position.state.legal_moves(position.seat)


def test_an_unknown_level_is_refused():
    position = positions("mori", 3, seed=1)[0]
    view, history = position.information()
    with pytest.raises(ValueError, match="unknown bot level"):
        decide("mori", view, position.seat, "expert", seed=1, history=history)


# ----------------------------------------------------------------- conservation, per game


def test_mori_determinization_holds_every_card_once():
    rules = rules_module("mori")
    from services.mori.bot import determinize

    for players in (3, 4, 5):
        for position in positions("mori", players, seed=players):
            view, history = position.information()
            for past in (history, None):
                state = determinize(view, position.seat, random.Random(1), past)
                cards = [c for h in state.hands for c in h] + [c for p in state.piles for c in p]
                cards += state.unused + [p.item for p in state.trick_plays if p.kind == "card"]
                assert sorted(cards) == sorted(rules.cards_in_play(players))
                # A seat's own X cards start in its hand: those not in a pile or the trick are still there.
                for seat in range(players):
                    for card in rules.hand_x_cards(players, seat):
                        assert card in state.hands[seat] or card not in [c for h in state.hands for c in h]
            if history is not None:
                true = position.state
                state = determinize(view, position.seat, random.Random(2), history)
                assert state.piles == true.piles, "the history tells every score pile"


def test_happy_mochi_determinization_holds_every_card_once():
    from services.happymochi.bot import determinize
    from services.happymochi.cards import DECK_SIZE

    for players in (2, 4, 6):
        for position in positions("happy_mochi", players, seed=players):
            view, history = position.information()
            for past in (history, None):
                state = determinize(view, position.seat, random.Random(1), past)
                assert sorted(state.all_cards()) == list(range(DECK_SIZE))
            state = determinize(view, position.seat, random.Random(2), history)
            true = position.state
            assert (state.left, state.right) == (true.left, true.right), "the history tells both stacks"
