"""Happy Mochi: seeded random playouts to the end, with invariants checked after every move."""

from __future__ import annotations

import json
import random

import pytest
from google.protobuf import json_format
from mogames.happymochi.v1 import happymochi_pb2

from services.engine import Event, MalformedMove, MoveError, NotYourTurn, RuleViolation
from services.happymochi.rules import State
from tests.happymochi.positions import hand_built

SEEDS_PER_COUNT = 40  # x 5 player counts = 200 matches
CARD_KEYS = {"id", "value", "color", "effect"}
PHASE_KINDS = {
    "PHASE_TURN": {"draw", "play_duo", "pass_turn"},
    "PHASE_PLACE": {"place_card"},
    "PHASE_EFFECTS": {"name_drawer", "flip_value"},
    "PHASE_EFFECT_DRAW": {"draw"},
}
PRIVATE_KINDS = {"hand_dealt", "card_received"}


def card_ids(obj) -> list[int]:
    """Every card id mentioned in a view or event body (cards are the dicts with the Card keys)."""
    found: list[int] = []
    values = obj.values() if isinstance(obj, dict) else obj
    if isinstance(obj, dict) and obj.keys() >= CARD_KEYS:
        found.append(obj["id"])
    for value in values:
        if isinstance(value, dict | list):
            found += card_ids(value)
    return found


def choose(moves: list[dict], r: random.Random) -> dict:
    """A random legal move; Duos are favoured so that rounds end in a reasonable number of moves."""
    duos = [m for m in moves if "play_duo" in m]
    if duos and r.random() < 0.7:
        return r.choice(duos)
    return r.choice(moves)


class Tracker:
    """Rebuilds every seat's hand from the events that seat may see, and recounts the scores."""

    def __init__(self, state: State) -> None:
        self.players = state.players
        self.hands = [list(h) for h in state.hands]  # the opening deal is not an event
        self.held: list[int | None] = [None] * state.players
        self.totals = [0] * state.players
        self.rounds_ended = 0
        self.last_duo: list[int] = []

    def feed(self, events: list[Event]) -> None:
        for event in events:
            ((kind, body),) = event.body.items()
            seat = body.get("seat")
            if kind == "hand_dealt":
                self.hands[seat] = [card["id"] for card in body["cards"]]
            elif (kind == "card_drawn" and "card" in body) or kind == "card_received":
                self.held[seat] = body["card"]["id"]
            elif kind == "card_placed":
                self.hands[seat].insert(body["position"], self.held[seat])
                self.held[seat] = None
            elif kind == "duo_played":
                hand, pos = self.hands[seat], body["position"]
                assert hand[pos : pos + 2] == [body["left"]["id"], body["right"]["id"]]
                assert body["number"] == 10 * body["left"]["value"] + body["right"]["value"]
                del hand[pos : pos + 2]
                self.last_duo = [body["left"]["id"], body["right"]["id"]]
            elif kind == "round_ended":
                self.rounds_ended += 1
                points = [sum(card % 10 for card in hand) for hand in self.hands]
                if body["went_out"]:
                    assert self.hands[body["out_seat"]] == []
                    assert body["round_winner"] == body["out_seat"]
                assert body["round_points"] == points
                self.totals = [t + p for t, p in zip(self.totals, points, strict=True)]
                assert body["total_scores"] == self.totals
                assert body["game_over"] == (max(self.totals) >= 30)
                if body["game_over"]:
                    best = min(self.totals)
                    assert body["winners"] == [s for s in range(self.players) if self.totals[s] == best]


def check_invariants(state: State, before: dict, events: list[Event], tracker: Tracker) -> None:
    n = state.players
    cards = state.all_cards()
    assert sorted(cards) == list(range(70)), "every card exactly once"
    assert len(state.left) >= 1 and len(state.right) >= 1
    active = state.active_seats()
    assert len(active) == (0 if state.is_over() else 1)
    for seat in range(n):
        assert bool(state.legal_moves(seat)) == (seat in active)
    assert state.scores() == tracker.totals
    if not state.is_over():
        in_hand = state.phase in ("PHASE_PLACE", "PHASE_EFFECT_DRAW")
        assert active == [state.drawer if in_hand else state.turn] and state.drawer == active[0]
        assert (state.held is not None) == (state.phase == "PHASE_PLACE")
    # events: secrets only in private events addressed to their owner
    stacks = set(before["left"]) | set(before["right"]) | set(state.left) | set(state.right)
    for event in events:  # a played Duo is face up (even if the round then ends and all is redealt)
        if "duo_played" in event.body:
            stacks |= set(card_ids(event.body))
    for event in events:
        ((kind, body),) = event.body.items()
        if event.to is None:
            assert kind not in PRIVATE_KINDS
            assert set(card_ids(body)) <= stacks, f"public {kind} shows a card never face up"
        else:
            assert kind in PRIVATE_KINDS and event.to == (body["seat"],)
    # views: own hand in order; nothing of other hands, the deck or a secret held card. A pending
    # effect names a card of the Duo just played face up, even if someone has drawn it back since.
    assert set(state.pending) <= set(tracker.last_duo)
    for seat in [*range(n), None]:
        view = state.view(seat)
        secret = set(state.deck)
        if state.held is not None and state.held_from == "DRAW_SOURCE_DECK" and seat != state.drawer:
            secret.add(state.held)
        for other in range(n):
            if other != seat:
                secret |= set(state.hands[other]) - set(state.pending)
        assert not set(card_ids(view)) & secret
        assert "seed" not in view
        assert view["hand_sizes"] == [len(h) for h in state.hands]
        if seat is not None:
            assert [card["id"] for card in view["hand"]] == state.hands[seat] == tracker.hands[seat]


def expected_refusal(state: State, seat: int, move: dict) -> type[MoveError]:
    ((kind, body),) = move.items()
    if state.is_over():
        return RuleViolation  # rule "game_over"
    if seat not in state.active_seats():
        return NotYourTurn
    if kind not in PHASE_KINDS[state.phase]:
        return RuleViolation
    hand = state.hands[seat]
    if (
        (kind == "place_card" and body["position"] > len(hand))
        or (kind == "play_duo" and body["position"] + 1 >= len(hand))
        or (kind == "name_drawer" and body["seat"] >= state.players)
    ):
        return MalformedMove
    return RuleViolation


def every_move_shape(state: State, seat: int) -> list[dict]:
    size = len(state.hands[seat])
    moves = [{"draw": {"source": s}} for s in ("DRAW_SOURCE_DECK", "DRAW_SOURCE_LEFT", "DRAW_SOURCE_RIGHT")]
    moves += [{"place_card": {"position": i}} for i in range(size + 2)]
    moves += [{"play_duo": {"position": i}} for i in range(size + 1)]
    moves += [{"name_drawer": {"seat": s}} for s in range(state.players + 1)]
    return [*moves, {"flip_value": {}}, {"pass_turn": {}}]


def check_moves(state: State) -> None:
    """Every legal move is accepted (on a copy); every other move is refused and changes nothing."""
    snapshot = state.to_dict()
    for seat in range(state.players):
        legal = state.legal_moves(seat)
        for move in legal:
            copy = State.from_dict(snapshot)
            copy.apply(seat, move)
        for move in every_move_shape(state, seat):
            if move in legal:
                continue
            expected = expected_refusal(state, seat, move)
            with pytest.raises(MoveError) as info:
                state.apply(seat, move)
            assert type(info.value) is expected, (move, info.value)
            assert state.to_dict() == snapshot


def play(seed: int, players: int, *, check_every: int = 0, moves_every: int = 0):
    state = State.new(players, seed, {"first_player": seed % players})
    tracker = Tracker(state)
    r = random.Random(seed)
    log: list[tuple[int, dict]] = []
    events_log: list[list[Event]] = []
    step = 0
    while not state.is_over():
        assert step < 20_000, "match does not end"
        (seat,) = state.active_seats()
        move = choose(state.legal_moves(seat), r)
        before = {"left": list(state.left), "right": list(state.right)}
        events = state.apply(seat, move)
        log.append((seat, move))
        events_log.append(events)
        tracker.feed(events)
        if check_every and step % check_every == 0:
            check_invariants(state, before, events, tracker)
        if check_every and step % (7 * check_every) == 0:
            data = json.loads(json.dumps(state.to_dict()))
            assert State.from_dict(data) == state
        if moves_every and step % moves_every == 0:
            check_moves(state)
        step += 1
    return state, tracker, log, events_log


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_random_playouts_keep_every_invariant(players):
    for seed in range(SEEDS_PER_COUNT):
        state, tracker, _, _ = play(1000 * players + seed, players, check_every=1, moves_every=97)
        assert state.is_over() and tracker.rounds_ended >= 1
        assert max(state.scores()) >= 30
        assert state.scores() == tracker.totals
        best = min(state.scores())
        assert state.winners() == [s for s in range(players) if state.scores()[s] == best]
        assert state.active_seats() == [] and all(state.legal_moves(s) == [] for s in range(players))


@pytest.mark.parametrize("players", [2, 4, 6])
def test_every_legal_move_is_accepted_and_every_other_move_refused(players):
    for seed in range(2):
        play(7 + seed, players, moves_every=1)


@pytest.mark.parametrize("players", [2, 3, 5])
def test_same_seed_and_moves_give_the_same_match(players):
    seed = 31 + players
    state, _, log, events_log = play(seed, players)
    replay = State.new(players, seed, {"first_player": seed % players})
    replay_events = []
    for seat, move in log:
        replay_events.append(replay.apply(seat, json.loads(json.dumps(move))))
    assert replay.to_dict() == state.to_dict()
    assert replay_events == events_log
    assert State.new(players, seed + 1, {}).to_dict() != State.new(players, seed, {}).to_dict()


def round_trip(message_type, data: dict) -> None:
    message = json_format.ParseDict(data, message_type())
    back = json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    assert back == data


def round_trip_view(state: State, seat: int | None) -> None:
    """The view as the platform sends it: fields 1-3 filled by the platform, the rest from the engine."""
    platform = {"version": "12", "seat": seat or 0, "active_seats": state.active_seats(), "clocks": []}
    round_trip(happymochi_pb2.View, {**platform, **state.view(seat)})


def test_moves_events_and_views_round_trip_through_the_proto_messages():
    kinds: set[str] = set()
    for players in (2, 3, 6):
        state = State.new(players, 5 + players, {})
        r = random.Random(players)
        for seat in range(players):
            round_trip_view(state, seat)
        while not state.is_over():
            (seat,) = state.active_seats()
            moves = state.legal_moves(seat)
            for move in moves:
                round_trip(happymochi_pb2.Move, move)
            move = choose(moves, r)
            kinds.add(next(iter(move)))
            for event in state.apply(seat, move):
                kinds.add(next(iter(event.body)))
                round_trip(happymochi_pb2.MatchEvent, {"version": "3", "seq": 0, **event.body})
            for viewer in [*range(players), None]:
                round_trip_view(state, viewer)
        round_trip_view(state, 0)
    round_trip(happymochi_pb2.HappyMochiOptions, State.new(2, 1, {}).options)
    # the rarer events, from hand-built positions: a reshuffle, a cycle of passes, a void Draw effect
    reshuffle = hand_built([[1], [2]], [10, 11], [20, 21], deck=[])
    passing = hand_built([[1], [2]], [39], [68], deck=[])
    void = hand_built([[1], [2]], [39], [68], deck=[], phase="PHASE_EFFECTS", pending=[39])
    rare = [
        *reshuffle.apply(0, {"draw": {"source": "DRAW_SOURCE_DECK"}}),
        *passing.apply(0, {"pass_turn": {}}),
        *passing.apply(1, {"pass_turn": {}}),
        *void._advance(),
    ]
    for event in rare:
        kinds.add(next(iter(event.body)))
        round_trip(happymochi_pb2.MatchEvent, {"version": "3", "seq": 0, **event.body})
    for move in ({"pass_turn": {}}, {"flip_value": {}}):
        kinds.add(next(iter(move)))
        round_trip(happymochi_pb2.Move, move)
    # the playouts above reach every move kind and the common events
    assert {"draw", "place_card", "play_duo", "name_drawer", "card_drawn", "card_received"} <= kinds
    assert {"card_placed", "duo_played", "value_flipped", "drawer_named", "round_ended"} <= kinds
    assert {"round_started", "hand_dealt", "stack_refilled", "deck_reshuffled"} <= kinds
    assert {"turn_passed", "effect_voided"} <= kinds
    move_kinds = {f.name for f in happymochi_pb2.Move.DESCRIPTOR.oneofs_by_name["kind"].fields}
    event_kinds = {
        f.name
        for f in happymochi_pb2.MatchEvent.DESCRIPTOR.oneofs_by_name["event"].fields
        if 10 <= f.number < 100  # 2-4 and 100+ are the platform's own
    }
    assert kinds == move_kinds | event_kinds  # every move kind and every game event of the proto
