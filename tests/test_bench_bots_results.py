"""make bench-bots keeps match results across runs, only for the bot code that played them."""

from __future__ import annotations

import json

from bench.bench_bots import (
    PLAYOUT,
    ROOT,
    Results,
    bots_version,
    counted,
    deciding_files,
    play_one,
    target,
    verdict,
)
from services.bots.adapters import games_with_adapters
from services.catalog import rules_module


def test_results_are_kept_for_the_next_run_of_the_same_code(tmp_path):
    path = tmp_path / "results.jsonl"
    first = Results(path, ["mori", "happy_mochi"])
    first.add(("mori", 3, "hard", "random", 0, 0), 1.0, [0.2, 0.25])
    first.add(("happy_mochi", 2, "medium", "policy", 4, 1), 0.5, [0.05])
    again = Results(path, ["mori", "happy_mochi"])
    assert again.held == {
        ("mori", 3, "hard", "random", 0, 0): (1.0, [0.2, 0.25]),
        ("happy_mochi", 2, "medium", "policy", 4, 1): (0.5, [0.05]),
    }


def test_results_of_other_bot_code_are_not_counted(tmp_path):
    path = tmp_path / "results.jsonl"
    Results(path, ["mori"]).add(("mori", 3, "hard", "random", 0, 0), 1.0, [0.2])
    row = json.loads(path.read_text())
    assert row["version"] == bots_version("mori") != bots_version("happy_mochi")
    row |= {"n": 1, "version": "older"}
    with path.open("a") as out:
        out.write(json.dumps(row) + "\n")
    again = Results(path, ["mori"])
    assert set(again.held) == {("mori", 3, "hard", "random", 0, 0)}
    assert again.other_code == 1


def test_a_row_without_a_seat_is_the_rotations_seat(tmp_path):
    path = tmp_path / "results.jsonl"
    Results(path, ["mori"]).add(("mori", 3, "hard", "random", 0, 0), 1.0, [0.2])
    row = json.loads(path.read_text())
    del row["seat"]
    path.write_text(json.dumps(row | {"n": 5}) + "\n")
    assert set(Results(path, ["mori"]).held) == {("mori", 3, "hard", "random", 5, 2)}


def test_a_row_another_run_is_still_writing_is_left_for_later(tmp_path):
    path = tmp_path / "results.jsonl"
    Results(path, ["mori"]).add(("mori", 3, "hard", "random", 0, 0), 1.0, [0.2])
    whole = path.read_text()
    path.write_text(whole + whole[: len(whole) // 2])
    assert set(Results(path, ["mori"]).held) == {("mori", 3, "hard", "random", 0, 0)}


def test_the_targets_bind_the_hard_level():
    assert target(2, "hard", "random") == 0.9
    assert target(4, "hard", "random") == 0.625
    assert target(3, "hard", "policy") == 0.6
    assert target(2, "medium", "random") is None
    assert target(2, "hard", "medium") is None


def test_a_target_is_met_or_missed_only_by_the_whole_interval():
    assert verdict(0.91, 0.99, 0.9) == "met"
    assert verdict(0.40, 0.58, 0.6) == "missed"
    assert verdict(0.51, 1.0, 0.9) == "open"


def test_the_playout_baseline_plays_whole_matches_from_the_seats_information():
    """Every seat on the adapter's playout policy, each move from its own view and events: the
    engine refuses an illegal move, so a match played to its end had none."""
    for game in games_with_adapters():
        players = max(2, rules_module(game).GAME.min_players)
        score, spent = play_one(game, players, PLAYOUT, PLAYOUT, 3, 1)
        assert 0.0 <= score <= 1.0
        assert spent, game


def test_all_seats_counts_only_seeds_held_from_every_seat():
    rotation = [("more", 3, "hard", "random", n, n % 3) for n in range(6)]
    every = [("more", 3, "hard", "random", n, seat) for n in range(6) for seat in range(3)]
    # The rotation's rows, and seed 0 from every seat, seed 1 from two.
    held = dict.fromkeys([*rotation, *every[:3], every[4]], (1.0, [0.1]))
    assert counted(every, held, all_seats=True) == every[:3]
    assert counted(rotation, held, all_seats=False) == rotation
    assert len(counted(every, held, all_seats=False)) == 8


def test_the_digest_covers_what_the_adapter_samples_with_and_the_rules():
    files = {path.relative_to(ROOT).as_posix() for path in deciding_files("more")}
    assert {"services/more/bot.py", "services/more/sample.py", "services/more/rules.py"} <= files
    assert "services/bots/search.py" in files and "services/mori/bot.py" not in files
