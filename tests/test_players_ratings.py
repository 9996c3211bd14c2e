"""GetRating, GetLeaderboard, ListRatingHistory and UpdateNotificationSettings through a
real players service process, on ratings the ratings worker's code wrote."""

from __future__ import annotations

import time

import grpc
from mogames.players.v1 import players_pb2, players_pb2_grpc

from services.runtime.auth import issue_session
from services.workers import notify_settings
from services.workers.activity import ActivityEntry
from services.workers.ladders import Ladders
from services.workers.ratings_worker import RatingsWorker
from tests.activity_entries import entry_fields
from tests.conftest import TOKEN_SECRET
from tests.helpers import refusal
from tests.players_fixtures import running_players


def session(player: str) -> list[tuple[str, str]]:
    token = issue_session(TOKEN_SECRET, player, int(time.time() * 1000) + 600_000)
    return [("authorization", f"Bearer {token}")]


async def test_ratings_leaderboards_history_and_settings_are_served(worker_redis, tmp_path):
    url, client = worker_redis
    worker = RatingsWorker(Ladders(client))
    # p0 always beats p1, p1 always beats p2 ... p5: ten matches of the same order.
    players = [f"p{i}" for i in range(6)]
    for number in range(10):
        fields = entry_fields(
            "match_ended", "momiji", f"m{number}", 30, players[:4] if number % 2 else players[2:],
            at_ms=1000 + number, status="FINISHED", scores=[4, 3, 2, 1], winners=[0],
        )  # fmt: skip
        await worker.handle(ActivityEntry.parse("1-0", fields))
    with running_players(url, tmp_path / "players.log") as address:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = players_pb2_grpc.PlayersStub(channel)
            mine = await stub.GetRating(players_pb2.GetRatingRequest(ladder="momiji"), metadata=session("p2"))
            other = await stub.GetRating(players_pb2.GetRatingRequest(ladder="momiji", player_id="p0"))
            assert mine.rating.player_id == "p2" and mine.rating.matches == 10
            assert other.rating.rank == 1 and other.rating.ordinal > mine.rating.ordinal
            assert abs(other.rating.ordinal - (other.rating.mu - 3 * other.rating.sigma)) < 1e-9
            ordinals = {}
            for player in players:
                asked = players_pb2.GetRatingRequest(ladder="momiji", player_id=player)
                ordinals[player] = (await stub.GetRating(asked)).rating.ordinal
            order = sorted(players, key=lambda p: -ordinals[p])
            at = order.index("p4")
            board = await stub.GetLeaderboard(
                players_pb2.GetLeaderboardRequest(ladder="momiji", top=3, around_player_id="p4", around=1)
            )
            assert [r.player_id for r in board.top] == order[:3]
            assert [r.rank for r in board.top] == [1, 2, 3]
            assert [r.player_id for r in board.around] == order[max(at - 1, 0) : at + 2]
            assert [r.rank for r in board.around] == list(range(max(at - 1, 0) + 1, at + 3))[
                : len(board.around)
            ]
            first = await stub.ListRatingHistory(
                players_pb2.ListRatingHistoryRequest(ladder="momiji", page_size=4), metadata=session("p3")
            )
            rest = await stub.ListRatingHistory(
                players_pb2.ListRatingHistoryRequest(
                    ladder="momiji", page_size=4, page_token=first.next_page_token
                ),
                metadata=session("p3"),
            )
            assert [c.match_id for c in first.changes] == ["m9", "m8", "m7", "m6"]
            assert [c.match_id for c in rest.changes] == ["m5", "m4", "m3", "m2"]
            fresh = await stub.GetRating(players_pb2.GetRatingRequest(ladder="mori", player_id="p0"))
            assert (fresh.rating.matches, fresh.rating.rank, fresh.rating.mu) == (0, 0, 25.0)

            refused = await refusal(
                stub.GetRating(players_pb2.GetRatingRequest(ladder="chess", player_id="p0"))
            )
            assert (refused.code, refused.field) == (grpc.StatusCode.INVALID_ARGUMENT, "ladder")
            refused = await refusal(
                stub.GetLeaderboard(players_pb2.GetLeaderboardRequest(ladder="mori", top=101))
            )
            assert (refused.code, refused.field) == (grpc.StatusCode.INVALID_ARGUMENT, "top")
            refused = await refusal(stub.GetRating(players_pb2.GetRatingRequest(ladder="mori")))
            assert refused.code == grpc.StatusCode.UNAUTHENTICATED

            quiet = players_pb2.QuietHours(start_minute=22 * 60, end_minute=7 * 60, time_zone="Europe/Warsaw")
            answer = await stub.UpdateNotificationSettings(
                players_pb2.UpdateNotificationSettingsRequest(quiet_hours=quiet, mute_matches=["m1"]),
                metadata=session("p1"),
            )
            assert answer.quiet_hours == quiet
            assert await notify_settings.is_muted(client, "p1", "m1")
            refused = await refusal(
                stub.UpdateNotificationSettings(
                    players_pb2.UpdateNotificationSettingsRequest(
                        quiet_hours=players_pb2.QuietHours(start_minute=5000)
                    ),
                    metadata=session("p1"),
                )
            )
            assert (refused.code, refused.field) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "quiet_hours.start_minute",
            )
            kept = await notify_settings.quiet_hours(client, "p1")
            assert (kept.start_minute, kept.end_minute, kept.time_zone) == (22 * 60, 7 * 60, "Europe/Warsaw")
