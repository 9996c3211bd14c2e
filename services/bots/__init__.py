"""Server bots that search: determinized Monte Carlo search with heuristic playouts.

The single entry point is ``services.bots.decide.decide(game, view, seat, level, seed,
history=None)``. It takes only what ``seat`` may know — its view and the events addressed
to it — never an engine state, so a bot cannot read other seats' hands (see
``docs/bots.md`` and ``tests/bots/test_fairness.py``).

A game takes part through an adapter, ``services/<package>/bot.py`` (pure like the rules
engine: no grpc, redis, asyncio or logging), which exposes:

``determinize(view, seat, rng, history=None) -> State``
    A full engine ``State`` consistent with everything ``seat`` knows: its
    ``State.view(seat)`` dict and, when given, ``history``. Hidden parts (other hands, deck
    order, cards under piles, future chance through a sampled ``seed``) are sampled with
    ``rng``, consistently with the cards seen and the counts shown. The property tested for
    every game: ``determinize(view, seat, rng, history).view(seat) == view``, and every card
    is somewhere exactly once.

    ``history`` is the list of event bodies (the ``MatchEvent`` oneof dicts, e.g.
    ``{"card_played": {...}}``) visible to ``seat``, oldest first, ending with the latest
    event; it may start anywhere before the current round's start (the whole match is
    fine). ``None`` means "unknown": the adapter samples from the view alone. An adapter
    whose view already holds everything the seat knows may ignore it.

``playout_move(state, seat, rng) -> move``
    A cheap, sensible move among ``state.legal_moves(seat)`` for playouts: game
    knowledge with some randomness, not uniform random.

``evaluate(state, seat) -> float`` (optional)
    How good ``state`` looks for ``seat``, in [0, 1], where a playout is cut off.

``candidate_moves(state, seat, rng, deep=True) -> list[move]`` (optional)
    The moves the search weighs for ``seat`` in a determinization ``state``: a non-empty
    subset of ``state.legal_moves(seat)`` chosen from what the seat knows (its own hand, the
    public board), so the list is the same for every sample. For games whose turns are many small
    steps (a stick, a card onto a meld, a pair to discard) the bandit then spends its
    playouts on the steps worth taking rather than on hundreds of equivalent ones; without
    it every legal move is a candidate. ``deep`` is the level's ``Budget.deep``: false, the
    adapter leaves the moves whose playouts run long to its playout policy.

``PLAYOUT_STEPS: int`` (optional, only with ``evaluate``)
    The moves after which a playout stops and ``evaluate`` scores it; without it playouts
    run to the end of the match.

``playout_steps(state) -> int | None`` (optional, only with ``evaluate``)
    Instead of ``PLAYOUT_STEPS``, the limit for a playout from ``state`` (None: none), for a
    game whose last turns are worth playing out to the end and its first ones are not.

``round_of(state) -> int`` (optional, only with ``evaluate``)
    The round ``state`` is in: a playout stops, and ``evaluate`` scores it, where the round it
    started in ends (the next round's deal then knows nothing of the decision).
"""
