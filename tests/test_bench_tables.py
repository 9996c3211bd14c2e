"""The benches' result tables: one Markdown table maker, used by make bench and make
bench-cluster (pure, on sample rows)."""

from __future__ import annotations

import argparse

from clients import bench, bench_cluster, markdown

ARGS = argparse.Namespace(
    concurrency=50,
    replicas=2,
    game="happy_mochi",
    duration=15.0,
    warmup=3.0,
    players="min",
    turn_seconds=0,
    rounds=1,
)


def test_a_table_aligns_names_left_and_figures_right():
    made = markdown.table(["game", "through", "moves/s"], [["mori", "nginx", "265"], ["more", "gw", "9"]], 2)
    assert made.splitlines() == [
        "| game | through | moves/s |",
        "| --- | --- | ---: |",
        "| mori | nginx | 265 |",
        "| more | gw | 9 |",
    ]


def test_make_bench_prints_its_figures_and_cpu_split_as_tables(capsys):
    figures = bench.Figures(
        "happy_mochi",
        "nginx",
        51,
        4602,
        303.4,
        107.43,
        454.01,
        0,
        30170.2,
        4.853,
        {"redis": 0.3, "nginx": 0.42},
        moves_per_live_match=1234.4,
    )
    bench.print_table([figures], bench.EchoFigures(2142.4, 0.4731), bench.EchoFigures(2378.0, 0.2161), ARGS)
    lines = capsys.readouterr().out.splitlines()
    header = lines.index(
        "| game | through | matches | moves | moves/s | move p50 / p99 ms | errors"
        " | Redis bytes per live match (its moves) | server CPU ms per move"
        " | ÷ echo call | ÷ echo call, each round |"
    )
    assert lines[header + 1] == "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    assert (
        lines[header + 2]
        == "| happy_mochi | nginx | 51 | 4602 | 303 | 107.4 / 454.0 | 0 | 30,170 (1,234) | 4.85 | 10.3 | - |"
    )
    split = lines.index("| game | through | redis | replicas | gateway | nginx |")
    assert lines[split + 2] == "| happy_mochi | nginx | 0.30 | 0.00 | 0.00 | 0.42 |"
    echo = next(line for line in lines if line.startswith("echo:"))
    assert "the echo and relay server runs on grpc's default core settings" in echo
    relay = next(line for line in lines if line.startswith("relay:"))
    assert relay.startswith("relay: 2378 moves/s, 0.216 ms of server CPU per move = 0.46 echo calls")
    assert "turn clock" not in lines[-1]
    timed = argparse.Namespace(**{**vars(ARGS), "turn_seconds": 60})
    bench.print_table([figures], bench.EchoFigures(2142.4, 0.4731), bench.EchoFigures(2378.0, 0.2161), timed)
    setup = capsys.readouterr().out.splitlines()[-1]
    assert "2 replica(s) per game; a 60 s turn clock on every decision; Redis with AOF" in setup


def test_make_bench_prints_the_median_round_next_to_its_own_echo(capsys):
    def round_(cpu_ms: float, echo_ms: float) -> bench.Figures:
        return bench.Figures(
            "happy_mochi", "nginx", 50, 1000, 900.0, 40.0, 100.0, 0, 7000.0, cpu_ms, echo_ms=echo_ms
        )

    # Ratios 3.0, 4.0 and 2.5: the median round is the first, though its CPU is not the median.
    rounds = [round_(1.5, 0.5), round_(1.6, 0.4), round_(1.0, 0.4)]
    chosen = bench.median_round(rounds)
    assert chosen is rounds[0]
    assert chosen.round_ratios == [2.5, 3.0, 4.0]
    assert bench.median_of(
        [bench.EchoFigures(1, 0.5), bench.EchoFigures(1, 0.3), bench.EchoFigures(1, 0.4)]
    ) == (bench.EchoFigures(1, 0.4))
    # The row's ratio is against its own round's echo, not the run's median echo.
    bench.print_table([chosen], bench.EchoFigures(2000.0, 0.45), bench.EchoFigures(5000.0, 0.15), ARGS)
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| happy_mochi"))
    assert row.endswith("| 1.50 | 3.0 | 2.5, 3.0, 4.0 |")


def test_make_bench_cluster_prints_its_rows_as_a_table(capsys):
    row = bench_cluster.Row("cluster 2m+2r", 165.0, 141.0, 534.04, 2, 0.46, 4.88, 2.79, 1.65, 0.052, 1.9)
    bench_cluster.report([row], ARGS)
    lines = capsys.readouterr().out.splitlines()
    header = lines.index(
        "| setup | moves/s | p50 ms | p99 ms | errors | CPU ms/move | redis | svc | gw | client"
        " | max redis core | server cores |"
    )
    assert lines[header + 1] == "| --- |" + " ---: |" * 11
    assert lines[header + 2] == (
        "| cluster 2m+2r | 165 | 141.0 | 534.0 | 2 | 8.13 | 0.46 | 4.88 | 2.79 | 1.65 | 5% | 1.90 |"
    )
