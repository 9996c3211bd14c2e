"""Ratings: a finished match moves its rated players once, in commit order, as OpenSkill's
Plackett-Luce model says; the ratings worker is a real process, killed and restarted."""

from __future__ import annotations

import asyncio
import random
import signal

from openskill.models import PlackettLuce

from services.catalog import GAME_PACKAGES, rules_module
from services.runtime import keys
from services.workers.activity import ActivityEntry
from services.workers.ladders import Ladders
from services.workers.ratings import ranks
from services.workers.ratings_worker import RatingsWorker
from tests.activity_entries import add_entry, entry_fields, start_worker
from tests.helpers import wait_until

PLAYER_POOL = 8


def seeded_results(count: int, seed: int) -> list[dict[str, str]]:
    """``count`` match_ended entries over every game: some seats bots or anonymous, some
    matches abandoned, More's Pair sometimes a team against the Solo."""
    rng = random.Random(seed)
    games = sorted(GAME_PACKAGES)
    results = []
    for number in range(count):
        game = games[number % len(games)]
        info = rules_module(game).GAME
        players = rng.randint(info.min_players, info.max_players)
        pool = [f"{game}-p{i}" for i in range(PLAYER_POOL)]
        seated = rng.sample(pool, players)
        bots = [seat for seat in range(players) if rng.random() < 0.15]
        ids = ["" if seat in bots or rng.random() < 0.1 else seated[seat] for seat in range(players)]
        scores = [rng.randint(0, 6) for _ in range(players)]
        winners = [seat for seat in range(players) if scores[seat] == max(scores)]
        table: dict = {"players": players, "options": {}}
        if game == "more" and rng.random() < 0.5:
            solo = rng.randrange(players)
            table["teams"] = [[solo], [seat for seat in range(players) if seat != solo]]
        status = "ABANDONED" if rng.random() < 0.05 else "FINISHED"
        results.append(
            entry_fields(
                "match_ended",
                game,
                f"m{number}",
                40 + number,
                ids,
                at_ms=1_700_000_000_000 + number,
                bots=bots,
                status=status,
                scores=scores,
                winners=winners if status == "FINISHED" else [],
                table=table,
            )
        )
    return results


def straight_replay(results: list[dict[str, str]]) -> dict[tuple[str, str], tuple[float, float, int]]:
    """(ladder, player) -> (mu, sigma, matches), the library fed each rated result in order."""
    model = PlackettLuce()
    ratings: dict[tuple[str, str], object] = {}
    counted: dict[tuple[str, str], int] = {}
    for fields in results:
        entry = ActivityEntry.parse("0-0", fields)
        seats: dict[int, str] = {}
        for seat, player in enumerate(entry.players):
            if player and seat not in entry.bots and player not in seats.values():
                seats[seat] = player
        if entry.status != "FINISHED" or len(seats) < 2:
            continue
        sides = entry.table.get("teams") or [[seat] for seat in seats]
        sides = [[s for s in side if s in seats] for side in sides]
        sides = [side for side in sides if side]
        if len(sides) < 2:
            continue
        keys_of = [min((0 if s in entry.winners else 1, -entry.scores[s]) for s in side) for side in sides]
        teams = [[ratings.get((entry.game, seats[s])) or model.rating() for s in side] for side in sides]
        rated = model.rate(teams, ranks=[float(r) for r in ranks(keys_of)])
        for side, team in zip(sides, rated, strict=True):
            for seat, new in zip(side, team, strict=True):
                key = (entry.game, seats[seat])
                ratings[key] = new
                counted[key] = counted.get(key, 0) + 1
    return {key: (r.mu, r.sigma, counted[key]) for key, r in ratings.items()}  # type: ignore[attr-defined]


async def rated_matches(client) -> int:
    return len([key async for key in client.scan_iter(match="mg:{ladder:*}:rated:*")])


def test_ranks_place_winners_first_and_tie_equal_keys():
    assert ranks([(0, -5), (1, -3), (1, -3), (1, -1)]) == [1, 2, 2, 4]
    assert ranks([(1, 0), (1, 0)]) == [1, 1]


async def test_a_match_handled_twice_moves_ratings_once(worker_redis):
    _url, client = worker_redis
    ladders = Ladders(client)
    worker = RatingsWorker(ladders)
    fields = entry_fields(
        "match_ended", "mori", "once", 9, ["ann", "bob", ""], at_ms=5, bots=[2],
        status="FINISHED", scores=[3, 1, 9], winners=[2],
    )  # fmt: skip
    entry = ActivityEntry.parse("1-0", fields)
    await worker.handle(entry)
    first = await ladders.rating("mori", "ann"), await ladders.rating("mori", "bob")
    await worker.handle(entry)
    again = await ladders.rating("mori", "ann"), await ladders.rating("mori", "bob")
    assert first == again
    assert first[0].matches == first[1].matches == 1
    # The bot won, but only the two players are rated: ann placed above bob.
    assert first[0].skill.mu > 25 > first[1].skill.mu
    assert [r.player_id for r in await ladders.top("mori", 10)] == ["ann", "bob"]
    history = await ladders.history("mori", "ann", 0, 10)
    assert [(c.match_id, c.skill, c.unix_ms) for c in history] == [("once", first[0].skill, 5)]


async def test_unrated_matches_move_nobody(worker_redis):
    _url, client = worker_redis
    ladders = Ladders(client)
    worker = RatingsWorker(ladders)
    abandoned = entry_fields(
        "match_ended", "mori", "left", 3, ["ann", "bob", "cid"], at_ms=1, status="ABANDONED", scores=[1, 2, 3]
    )
    with_bots = entry_fields(
        "match_ended", "mori", "bots", 3, ["ann", "", ""], at_ms=1, bots=[1, 2],
        status="FINISHED", scores=[1, 2, 3], winners=[2],
    )  # fmt: skip
    for fields in (abandoned, with_bots):
        await worker.handle(ActivityEntry.parse("1-0", fields))
    assert (await ladders.rating("mori", "ann")).matches == 0
    assert await ladders.top("mori", 10) == []


async def test_200_results_rate_as_a_straight_replay_with_the_worker_killed_twice(
    worker_redis, workers, tmp_path
):
    url, client = worker_redis
    results = seeded_results(200, seed=27)
    log = tmp_path / "ratings.log"
    name = {"MOGAMES_WORKER_NAME": "ratings-a", "MOGAMES_CLAIM_EVERY_MS": "200"}
    workers.append(start_worker("ratings", url, log, **name))

    # The writes pause at 100 and 150 entries until the next kill, so there is always
    # more to rate after it.
    kills = [asyncio.Event(), asyncio.Event()]

    async def write_all() -> None:
        for number, fields in enumerate(results):
            if number in (100, 150):
                await kills[0 if number == 100 else 1].wait()
            await add_entry(client, fields)
            await asyncio.sleep(0.004)

    writing = asyncio.create_task(write_all())
    expected = straight_replay(results)
    killed_at: list[int] = []
    for kill, kill_after in zip(kills, (50, 90), strict=True):
        await wait_until(lambda n=kill_after: _at_least(client, n), f"{kill_after} matches marked", 60)
        workers[-1].send_signal(signal.SIGKILL)
        assert workers[-1].wait(timeout=20) == -signal.SIGKILL
        killed_at.append(await rated_matches(client))
        kill.set()
        workers.append(start_worker("ratings", url, log, **name))
    await writing

    async def caught_up() -> bool:
        pending = 0
        for game in GAME_PACKAGES:
            info = await client.xpending(keys.activity(game), "ratings")
            pending += int(info["pending"])
        groups = [await client.xinfo_groups(keys.activity(game)) for game in GAME_PACKAGES]
        last = {g: r[0]["last-delivered-id"] for g, r in zip(GAME_PACKAGES, groups, strict=True) if r}
        tips = {g: (await client.xrevrange(keys.activity(g), count=1))[0][0] for g in GAME_PACKAGES}
        return pending == 0 and last == tips

    await wait_until(caught_up, "every entry read and acknowledged", 60)
    ladders = Ladders(client)
    assert expected, "the seeded results rate somebody"
    for (ladder, player), (mu, sigma, matches) in expected.items():
        rating = await ladders.rating(ladder, player)
        assert (rating.skill.mu, rating.skill.sigma, rating.matches) == (mu, sigma, matches), (ladder, player)
        history = await ladders.history(ladder, player, 0, 1000)
        assert len(history) == matches and history[0].skill == rating.skill
    for game in GAME_PACKAGES:
        ordinals = {p: mu - 3 * sigma for (ladder, p), (mu, sigma, _) in expected.items() if ladder == game}
        board = [r.player_id for r in await ladders.top(game, 100)]
        assert set(board) == set(ordinals)
        assert [ordinals[p] for p in board] == sorted(ordinals.values(), reverse=True)
    # Both kills landed while matches were still to be rated.
    assert killed_at[0] < killed_at[1] < await rated_matches(client), killed_at


async def _at_least(client, count: int) -> bool:
    return await rated_matches(client) >= count


async def test_an_entry_the_worker_cannot_rate_is_passed_over_after_a_few_tries(
    worker_redis, workers, tmp_path
):
    url, client = worker_redis
    odd = entry_fields(
        "match_ended", "mori", "odd", 9, ["ann", "bob", "cid"], at_ms=1,
        status="FINISHED", scores=[3, 2, 1], winners=[0], table={"teams": [["not a seat"]]},
    )  # fmt: skip
    fine = entry_fields(
        "match_ended", "mori", "fine", 9, ["ann", "bob", "cid"], at_ms=2,
        status="FINISHED", scores=[3, 2, 1], winners=[0],
    )  # fmt: skip
    for fields in (odd, fine):
        await add_entry(client, fields)
    log = tmp_path / "ratings.log"
    workers.append(start_worker("ratings", url, log))
    ladders = Ladders(client)

    async def rated() -> bool:
        return (await ladders.rating("mori", "ann")).matches == 1

    await wait_until(rated, "the next match rated", 30)
    assert [c.match_id for c in await ladders.history("mori", "ann", 0, 10)] == ["fine"]
    assert '"activity_entry_skipped"' in log.read_text()
