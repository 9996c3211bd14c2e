"""When the search stops before its budget: a settled decision."""

from __future__ import annotations

from services.bots.search import SETTLED_AFTER, settled


def test_a_move_taking_most_playouts_settles_the_decision():
    done = SETTLED_AFTER
    assert settled([85, 10, 5], [40.0, 6.0, 3.0], done)


def test_a_won_position_settles_whatever_the_moves_share():
    # Every move wins: the bandit spreads its playouts, and more of them change nothing.
    assert settled([34, 33, 33], [34.0, 33.0, 32.5], 100)


def test_a_lost_position_settles_too():
    assert settled([34, 33, 33], [0.5, 0.0, 0.9], 100)


def test_an_open_position_keeps_searching():
    assert not settled([40, 35, 25], [24.0, 20.0, 10.0], 100)
    # A leader that wins most but not nearly all of its playouts is not yet a won position.
    assert not settled([40, 35, 25], [37.0, 30.0, 20.0], 100)
    # One move still wins now and then: the position is not lost.
    assert not settled([34, 33, 33], [0.5, 0.0, 2.0], 100)
