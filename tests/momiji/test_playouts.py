"""Momiji: seeded random playouts to the end, checking invariants after every move."""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import Counter

import pytest

from services.engine import MalformedMove, MoveError, NotYourTurn
from services.momiji.cards import GOAL_NAMES, LEAF_NAMES, POWERS
from services.momiji.moves import MOVE_FIELDS
from services.momiji.rules import State

# Independent copies of the card table (docs/rules/momiji.md), not the engine's.
VALUE = [0] * 5 + [1] * 4 + [2] * 3 + [3] * 2
SEEDS = range(200)


def players_of(seed: int) -> int:
    return 2 + seed % 3


def options_of(seed: int) -> dict:
    return {"draft_landscapes": seed % 4 == 1}


def value(card: int) -> int:
    return VALUE[card % 14]


# --------------------------------------------------------------------------- recount


def metrics(d: dict, seat: int) -> dict[str, int]:
    st = [s for s in d["stacks"][seat] if s]
    tops = [value(s[-1]) for s in st]
    return {
        "GOAL_MOST_ZEROS": sum(value(c) == 0 for s in st for c in s),
        "GOAL_MOST_CARDS": sum(len(s) for s in st),
        "GOAL_HIGHEST_TOP_SUM": sum(tops),
        "GOAL_MOST_CLOSED": tops.count(3),
        "GOAL_MOST_TYPES": len(st),
        "GOAL_LONGEST_STACK": max((len(s) for s in st), default=0),
        "GOAL_MOST_ACORNS": d["acorns"][seat],
        "GOAL_FEWEST_HAND": len(d["hands"][seat]),
        "GOAL_MOST_FIRST_TYPE": len(d["stacks"][seat][0]),
        "GOAL_MOST_SECOND_TYPE": len(d["stacks"][seat][1]),
        "GOAL_MOST_THIRD_TYPE": len(d["stacks"][seat][2]),
        "GOAL_MOST_THREES_ON_TOP": tops.count(3),
    }


def recount(d: dict) -> list[int]:
    n = d["players"]
    total = [0] * n
    for seat in range(n):
        total[seat] += sum(value(s[-1]) * len(s) for s in d["stacks"][seat] if s) + d["acorns"][seat]
    if all(h is None for h in d["holders"]):
        return total
    table = [metrics(d, seat) for seat in range(n)]
    for goal, holder in zip(d["goals"], d["holders"], strict=True):
        if holder is None:
            continue
        vals = [table[seat][goal] for seat in range(n)]
        if goal == "GOAL_FEWEST_HAND":
            best = [s for s in range(n) if vals[s] == min(vals)]
        else:
            best = [s for s in range(n) if vals[s] == max(vals) and vals[s] > 0]
        for seat in best:
            total[seat] += 10 if seat == holder else 3
    return total


# --------------------------------------------------------------------------- invariants


def check_invariants(s: State, expected_acorns: list[int], heavy: bool = True) -> None:
    """Conservation (cards, acorns, torii) and decision sanity; ``heavy`` adds the stack shapes,
    the score recount and the JSON snapshot round trip."""
    d = s.to_dict()
    n = s.players
    types = n + 2
    assert sorted(s.all_cards()) == list(range(14 * types)), "a card was lost or duplicated"
    assert s.acorns == expected_acorns and min(s.acorns) >= 0
    closed = sum(1 for area in d["stacks"] for st in area if st and value(st[-1]) == 3)
    assert s.torii_supply() == types - closed >= 0
    # decisions: exactly the active seats have legal moves
    for seat in range(n):
        moves = s.legal_moves(seat)
        if seat in s.active_seats():
            assert moves, f"active seat {seat} has no legal move in {s.phase}"
            keys = [repr(m) for m in moves]
            assert len(keys) == len(set(keys)), "duplicate legal moves"
        else:
            assert moves == []
    assert s.is_over() == (s.active_seats() == [])
    if not heavy:
        return
    for seat in range(n):
        for t, st in enumerate(d["stacks"][seat]):
            assert all(c // 14 == t for c in st)
            if st:
                assert value(st[0]) == 0
                vals = [value(c) for c in st]
                assert all(0 <= b - a <= 2 for a, b in itertools.pairwise(vals))
                assert 3 not in vals[:-1]
        assert len(set(d["used"][seat])) == len(d["used"][seat])
        assert set(d["used"][seat]) <= set(d["landscapes"][seat])
    assert s.display == sorted(s.display, key=lambda c: (c // 14, value(c), c))
    assert all(h is None or 0 <= h < n for h in d["holders"])
    if s.phase != "PHASE_DRAFT":
        assert all(len(ls) == 3 and len(set(ls)) == 3 for ls in d["landscapes"])
    assert s.scores() == recount(d)
    again = State.from_dict(json.loads(json.dumps(d)))
    assert again.to_dict() == d


ID = re.compile(r'"id": (\d+)')


def ids_in(obj) -> set[int]:
    """Every card id in a view or event body (cards always appear as Card messages there)."""
    return {int(x) for x in ID.findall(json.dumps(obj))}


def public_cards(s: State) -> set[int]:
    out = set(s.display) | set(s.discard)
    for area in s.stacks:
        for st in area:
            out |= set(st)
    return out


VIEW_FIELDS = {
    "phase", "turn_seat", "hand", "players", "display", "goals", "deck_size", "discard_pile", "torii_supply",
    "leaf_types", "main_action_done", "discard_used", "power_used", "bamboo_bridge_active", "play_types",
    "rain_shower_seats", "temple_bell_cards", "ending", "end_reason", "round", "scores", "winners",
}  # fmt: skip


def check_views(s: State) -> None:
    n = s.players
    for seat in [*range(n), None]:
        v = s.view(seat)
        assert set(v) == VIEW_FIELDS
        ids = ids_in(v)
        hidden = set(s.deck)
        for other in range(n):
            if other != seat:
                hidden |= set(s.hands[other])
        if seat != s.turn:
            hidden |= set(s.peek)
        assert not ids & hidden, f"view of seat {seat} leaks {sorted(ids & hidden)}"
        assert [p["hand_size"] for p in v["players"]] == [len(h) for h in s.hands]
        if seat is not None:
            assert sorted(c["id"] for c in v["hand"]) == sorted(s.hands[seat])


def check_events(events, before_public: set[int], s: State) -> None:
    now_public = public_cards(s)
    for e in events:
        ids = ids_in(e.body)
        if e.to is None:
            leaked = ids - before_public - now_public
            assert not leaked, f"public event {e.body} carries secret cards {leaked}"
        else:
            assert len(e.to) == 1
            (owner,) = e.to
            allowed = set(s.hands[owner]) | set(s.peek) | now_public | before_public
            assert ids <= allowed


def check_opening(s: State) -> None:
    """The set-up events: each hand's count in public and its cards to its owner, the display."""
    events = s.opening_events()
    public = [e.body for e in events if e.to is None]
    assert public[-1] == {"display_added": {"seat": 0, "cards": s.view(None)["display"], "revealed": False}}
    for seat in range(s.players):
        assert {"cards_drawn": {"seat": seat, "count": 6, "cards": []}} in public
        (mine,) = [e.body for e in events if e.to == (seat,)]
        assert mine["cards_drawn"]["cards"] == s.view(seat)["hand"]
    check_events(events, public_cards(s), s)


# --------------------------------------------------------------------------- random moves


def move_key(move: dict) -> str:
    """A move as the legal list spells it (enums by name; a discard pair in either order)."""
    ((kind, body),) = move.items()
    out = {}
    for key, val in body.items():
        what = MOVE_FIELDS[kind][key]
        if what in ("leaf", "power", "goal") and isinstance(val, int):
            names = {"leaf": LEAF_NAMES, "power": POWERS, "goal": GOAL_NAMES}[what]
            val = names[val - 1]
        out[key] = sorted(val) if kind == "discard_for_acorn" else val
    return json.dumps([kind, out], sort_keys=True)


def random_move(r: random.Random, s: State) -> dict:
    kind = r.choice(list(MOVE_FIELDS))
    n_cards = 14 * s.types
    mine = [c for h in s.hands for c in h] + s.display + s.peek

    def card():
        return r.choice(mine) if mine and r.random() < 0.8 else r.randrange(-1, n_cards + 1)

    body = {}
    for key, what in MOVE_FIELDS[kind].items():
        if what == "card":
            body[key] = card()
        elif what == "cards":
            body[key] = [card() for _ in range(r.choice([0, 1, 2, 2, 2, 3]))]
        elif what == "leaf":
            body[key] = r.choice([*LEAF_NAMES, "LEAF_TYPE_UNSPECIFIED"])
        elif what == "power":
            body[key] = r.choice([*POWERS, "POWER_UNSPECIFIED"])
        else:
            body[key] = r.choice([*GOAL_NAMES, "GOAL_UNSPECIFIED"])
    return {kind: body}


def try_illegal(r: random.Random, s: State, stats: Counter) -> None:
    """Random (mostly illegal) moves on copies: refused ones change nothing; accepted ones are legal."""
    for _ in range(3):
        seat = r.randrange(s.players + 1)
        move = random_move(r, s)
        copy = State.from_dict(s.to_dict())
        before = copy.to_dict()
        try:
            copy.apply(seat, move)
        except MoveError as err:
            assert copy.to_dict() == before, f"refused {move} changed the state"
            if seat not in s.active_seats() and not isinstance(err, MalformedMove):
                assert isinstance(err, NotYourTurn)
            stats[type(err).__name__] += 1
        else:
            assert seat in s.active_seats()
            legal = {move_key(m) for m in s.legal_moves(seat)}
            assert move_key(move) in legal, f"accepted {move} is not among the legal moves"
            stats["accepted"] += 1


def candidate_moves(s: State, seat: int) -> list[dict]:
    """Every move that could be legal for ``seat`` now: built from its hand, the display, the
    peeked cards, one card of another hand and one of the deck, and every enum value."""
    foreign = [h[0] for o, h in enumerate(s.hands) if o != seat and h][:1] + s.deck[:1]
    cards = sorted(set(s.display) | set(s.peek) | set(s.hands[seat]) | set(foreign))
    leaves = LEAF_NAMES[: s.types]
    out: list[dict] = [{"reveal": {}}, {"finish_play": {}}, {"end_turn": {}}]
    out += [{"collect": {"type": t}} for t in leaves] + [{"pagoda": {"type": t}} for t in leaves]
    out += [{"draft_power": {"power": p}} for p in POWERS] + [{"use_power": {"power": p}} for p in POWERS]
    out += [{"activate_goal": {"goal": g}} for g in GOAL_NAMES]
    for kind in ("place_card", "stone_lantern", "moss_garden", "discard_card"):
        out += [{kind: {"card": c}} for c in cards]
    out += [{"discard_for_acorn": {"cards": list(p)}} for p in itertools.combinations(cards, 2)]
    out += [{"koi_pond": {"hand_card": a, "display_card": b}} for a in cards for b in cards if a != b]
    for keep in s.peek:
        rest = [c for c in s.peek if c != keep]
        out += [
            {"temple_bell_choose": {"keep": keep, "back_on_top": list(o)}}
            for o in itertools.permutations(rest)
        ]
    return out


def check_every_legal_move_listed(s: State) -> None:
    """Issue 9: each accepted move is in the list, identical cards included (no grouping)."""
    snapshot = s.to_dict()
    for seat in s.active_seats():
        listed = [move_key(m) for m in s.legal_moves(seat)]
        accepted = []
        for move in candidate_moves(s, seat):
            try:
                State.from_dict(snapshot).apply(seat, move)
            except MoveError:
                continue
            accepted.append(move_key(move))
        assert sorted(accepted) == sorted(listed)


def check_timeout_move(s: State) -> None:
    for seat in s.active_seats():
        move = s.timeout_move(seat)
        assert move in s.legal_moves(seat) and s.timeout_move(seat) == move
        if {"end_turn": {}} in s.legal_moves(seat):
            assert move == {"end_turn": {}}
        assert any(e.to is None for e in State.from_dict(s.to_dict()).apply(seat, move))


def check_all_legal_accepted(s: State) -> None:
    for seat in s.active_seats():
        for move in s.legal_moves(seat):
            copy = State.from_dict(s.to_dict())
            copy.apply(seat, json.loads(json.dumps(move)))


# Random play that picks a move kind first (weighted towards plays and goals), then a move of
# that kind, so that the many discard pairs do not crowd out the rest.
WEIGHT = {"place_card": 8, "activate_goal": 8, "collect": 3}


def pick(r: random.Random, moves: list[dict]) -> dict:
    kinds = sorted({next(iter(m)) for m in moves})
    kind = r.choices(kinds, weights=[WEIGHT.get(k, 1) for k in kinds])[0]
    return r.choice([m for m in moves if kind in m])


def with_stacks_started(s: State) -> State:
    """A late-game position from a fresh deal: for every type, seat ``type % players`` gets a
    0-1-2 stack of it and a 3 of it in hand, all taken from the deck (so every card stays counted).
    """
    d = s.to_dict()
    for t in range(s.types):
        seat = t % s.players
        cards = [next((c for c in d["deck"] if c // 14 == t and value(c) == v), None) for v in (0, 1, 2, 3)]
        if None in cards:
            continue  # the deal took every copy of one of the values
        for c in cards:
            d["deck"].remove(c)
        d["stacks"][seat][t] = cards[:3]
        d["hands"][seat].append(cards[3])
    return State.from_dict(d)


def playout(seed: int, stats: Counter | None = None, *, deep=False, full=True, late=False):
    """Play a seeded random match to the end; returns (state, [(seat, move)], events).

    Every move: card/acorn/torii conservation, recount, snapshot round trip, legal-move sanity and
    event leaks. ``full``: also every view and random illegal moves at every step (otherwise every
    8th step). ``deep``: also every legal move of every state is applied to a copy.
    """
    stats = Counter() if stats is None else stats
    n = players_of(seed)
    s = State.new(n, seed, options_of(seed))
    if late:
        s = with_stacks_started(s)
    r = random.Random(seed * 7919 + 1)
    if not late:
        check_opening(s)
    expected = list(s.acorns)
    history, all_events = [], []
    check_invariants(s, expected)
    check_views(s)
    while not s.is_over():
        assert len(history) < 5000, "match does not end"
        if full or len(history) % 8 == 0:
            try_illegal(r, s, stats)
        if deep:
            check_all_legal_accepted(s)
            if len(history) % 4 == 0:
                check_every_legal_move_listed(s)
        if full or len(history) % 5 == 0:
            check_timeout_move(s)
        seat = r.choice(s.active_seats())
        move = pick(r, s.legal_moves(seat))
        before_public = public_cards(s)
        events = s.apply(seat, move)
        # every committed move tells every watcher something (issue 14)
        assert any(e.to is None for e in events), (move, events)
        for e in events:
            body = e.body.get("acorns_changed")
            if body:
                expected[body["seat"]] += body["delta"]
                assert body["acorns"] == expected[body["seat"]]
            if e.body.get("play_finished", {}).get("acorn_pairs"):
                stats["acorn_pairs"] += 1
            if "goal_activated" in e.body:
                stats["goal_activated"] += 1
            if "turn_ended" in e.body:
                assert len(s.hands[e.body["turn_ended"]["seat"]]) <= 8, "hand limit"
        history.append((seat, move))
        all_events.append(events)
        check_invariants(s, expected, heavy=full or len(history) % 4 == 0)
        if full or len(history) % 8 == 0:
            check_views(s)
        check_events(events, before_public, s)
        stats[next(iter(move))] += 1
    check_invariants(s, expected)
    check_views(s)
    assert s.ending and s.end_reason in ("END_REASON_DECK_EMPTY", "END_REASON_LAST_TORII")
    assert s.winners() and all(s.scores()[w] == max(s.scores()) for w in s.winners())
    assert all_events[-1][-1].body["game_finished"]["winners"] == s.winners()
    stats[s.end_reason] += 1
    stats[f"players_{n}"] += 1
    return s, history, all_events


# --------------------------------------------------------------------------- tests


def test_random_playouts_keep_every_invariant():
    stats: Counter = Counter()
    for seed in SEEDS:
        playout(seed, stats, full=seed % 10 == 0)
    assert stats["players_2"] + stats["players_3"] + stats["players_4"] == len(SEEDS)
    assert min(stats["players_2"], stats["players_3"], stats["players_4"]) >= 60
    # the playouts exercised every move kind, the deck-empty ending and every kind of refusal
    for kind in MOVE_FIELDS:
        assert stats[kind] > 0, f"move kind {kind} never played"
    assert stats["END_REASON_DECK_EMPTY"] > 0
    assert stats["goal_activated"] > 0 and stats["acorn_pairs"] > 0
    assert stats["MalformedMove"] > 0 and stats["RuleViolation"] > 0 and stats["NotYourTurn"] > 0
    assert stats["accepted"] > 0


def test_late_game_playouts_end_by_the_last_torii_too():
    stats: Counter = Counter()
    for seed in range(30):
        playout(seed, stats, full=seed % 3 == 0, late=True)
    assert stats["END_REASON_LAST_TORII"] > 0 and stats["END_REASON_DECK_EMPTY"] > 0


def test_every_legal_move_is_accepted():
    for seed in range(8):
        playout(seed, deep=True, full=False)


@pytest.mark.parametrize("seed", [3, 10, 17, 101])
def test_same_seed_same_moves_same_match(seed):
    s, history, events = playout(seed)
    again = State.new(players_of(seed), seed, options_of(seed))
    replay_events = [again.apply(seat, move) for seat, move in history]
    assert again == s and again.to_dict() == s.to_dict()
    assert [[(e.body, e.to) for e in evs] for evs in replay_events] == [
        [(e.body, e.to) for e in evs] for evs in events
    ]


def test_different_seeds_differ():
    a = State.new(3, 1, {"draft_landscapes": False}).to_dict()
    b = State.new(3, 2, {"draft_landscapes": False}).to_dict()
    assert a["deck"] != b["deck"]
