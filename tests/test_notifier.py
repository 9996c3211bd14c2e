"""The notifier worker as a real process calling a real HTTP receiver on loopback: exactly
the expected notifications, signed; none lost when the worker is killed mid-delivery or
the receiver is down for a while; the dead-letter stream after the documented tries."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import random
import signal
import time
from collections import defaultdict
from datetime import datetime
from zoneinfo import ZoneInfo

import httpx
import pytest

from deploy.local import RunSettings, children
from deploy.redis_server import free_port
from services.runtime import keys
from services.runtime.errors import InvalidArgument
from services.runtime.settings import SettingsError
from services.workers import notify_settings
from services.workers.notify_settings import QuietHours
from services.workers.settings import check_webhook_url
from tests.activity_entries import add_entry, entry_fields, start_worker
from tests.helpers import wait_until
from tests.webhook_receiver import Call, Receiver

SECRET = "webhook-secret-0123456789"
GAMES = ["happy_mochi", "mori", "more", "morisi", "momiji"]


def async_matches(count: int, seed: int, at_ms: int) -> tuple[list[dict[str, str]], set[str]]:
    """Every notice of ``count`` matches played a move at a time (started, turns, a time-out,
    ended), some seats bots or anonymous; and the idempotency keys they should produce."""
    rng = random.Random(seed)
    entries, expected = [], set()
    for number in range(count):
        game = GAMES[number % len(GAMES)]
        players = 3
        ids = [f"player-{rng.randrange(12)}-{seat}" for seat in range(players)]
        bots = [2] if number % 4 == 0 else []
        if number % 5 == 0:
            ids[1] = ""
        ids = ["" if seat in bots else p for seat, p in enumerate(ids)]
        match_id = f"async-{number}"
        notices = [("match_started", list(range(players)), "IN_PROGRESS")]
        notices += [("your_turn", [turn % players], "IN_PROGRESS") for turn in range(4)]
        notices += [("timed_out", [1], "IN_PROGRESS"), ("match_ended", list(range(players)), "FINISHED")]
        for version, (notice, seats, status) in enumerate(notices, start=1):
            fields = entry_fields(
                notice, game, match_id, version, ids, at_ms=at_ms, bots=bots, seats=seats, status=status,
                deadlines={seat: at_ms + 86_400_000 for seat in seats} if notice == "your_turn" else {},
            )  # fmt: skip
            entries.append(fields)
            expected |= {f"{match_id}:{version}:{notice}:{ids[s]}" for s in seats if ids[s]}
    return entries, expected


def check_signed(call: Call) -> dict:
    expected = "sha256=" + hmac.new(SECRET.encode(), call.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(call.headers["mogames-signature"], expected)
    body = json.loads(call.body)
    assert call.headers["idempotency-key"] == body["id"]
    assert body["id"] == f"{body['match_id']}:{body['version']}:{body['notice']}:{body['player_id']}"
    return body


def notifier_env(receiver: Receiver, **more: str) -> dict[str, str]:
    return {
        "MOGAMES_WEBHOOK_URL": receiver.url,
        "MOGAMES_WEBHOOK_SECRET": SECRET,
        "MOGAMES_CLAIM_EVERY_MS": "200",
        **more,
    }


@pytest.fixture
def receiver():
    receiver = Receiver()
    receiver.start()
    yield receiver
    receiver.stop()


async def test_20_async_matches_give_exactly_the_expected_signed_notifications(
    worker_redis, workers, receiver, tmp_path
):
    url, client = worker_redis
    now_ms = int(time.time() * 1000)
    entries, expected = async_matches(20, seed=3, at_ms=now_ms)
    all_keys = set(expected)
    # One player asleep (quiet hours around now, in their zone); one match muted by a player.
    sleeper = json.loads(entries[0]["players"])[0]
    zone = "Asia/Tokyo"
    here = datetime.now(ZoneInfo(zone))
    start = (here.hour * 60 + here.minute - 60) % 1440
    await notify_settings.update(client, sleeper, QuietHours(start, (start + 180) % 1440, zone), [], [])
    muter_entry = entries[7 * 3]
    muter, muted_match = json.loads(muter_entry["players"])[0], muter_entry["match_id"]
    await notify_settings.update(client, muter, None, [], [muted_match, "another"])
    await notify_settings.update(client, muter, None, ["another"], [])
    expected = {
        k
        for k in expected
        if not k.endswith(f":{sleeper}") and not (k.startswith(f"{muted_match}:") and k.endswith(f":{muter}"))
    }
    for fields in entries:
        await add_entry(client, fields)
    metrics_port = free_port()
    # A call that times out is delivered again (at least once, by design): on a loaded
    # machine the receiver in this process may answer late, so the timeout is long here.
    env = notifier_env(
        receiver, MOGAMES_METRICS_LISTEN=f"127.0.0.1:{metrics_port}", MOGAMES_NOTIFY_TIMEOUT_MS="60000"
    )
    workers.append(start_worker("notifier", url, tmp_path / "notifier.log", **env))
    await wait_until(lambda: _has(receiver, expected), f"{len(expected)} notifications", 60)
    await asyncio.sleep(1.0)  # nothing more comes
    calls = receiver.received()
    keys_seen = [check_signed(call)["id"] for call in calls]
    assert sorted(keys_seen) == sorted(expected)
    body = json.loads(next(c.body for c in calls if b'"your_turn"' in c.body))
    assert body["deadline_ms"] == now_ms + 86_400_000 and body["game"] in GAMES
    assert await client.xlen(keys.notify_dead_letters()) == 0
    held_back = {"quiet": sum(k.endswith(f":{sleeper}") for k in all_keys)}
    held_back["muted"] = sum(k.startswith(f"{muted_match}:") and k.endswith(f":{muter}") for k in all_keys)
    assert held_back["quiet"] and held_back["muted"]

    async def counted() -> bool:
        figures = await metrics_of(metrics_port)
        return (
            figures.get(("mogames_notifications_total", 'outcome="sent"')) == len(expected)
            and figures.get(("mogames_notifications_total", 'outcome="quiet"')) == held_back["quiet"]
            and figures.get(("mogames_notifications_total", 'outcome="muted"')) == held_back["muted"]
            and figures.get(("mogames_stream_pending", 'game="mori",group="notifier"')) == 0
        )

    await wait_until(counted, "the notifier's metrics to count every notification", 20)
    figures = await metrics_of(metrics_port)
    assert figures[("mogames_stream_lag_seconds", 'game="mori",group="notifier"')] == 0
    assert ("mogames_notifications_total", 'outcome="dead_lettered"') not in figures


async def metrics_of(port: int) -> dict[tuple[str, str], float]:
    """The samples of a process's /metrics page: (name, labels) -> value."""
    async with httpx.AsyncClient() as http:
        page = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    samples = {}
    for line in page.splitlines():
        if line and not line.startswith("#"):
            name_labels, _, value = line.rpartition(" ")
            name, _, labels = name_labels.partition("{")
            samples[(name, labels.rstrip("}"))] = float(value)
    return samples


async def _has(receiver: Receiver, expected: set[str]) -> bool:
    return {json.loads(call.body)["id"] for call in receiver.received()} >= expected


async def test_an_entry_still_being_delivered_is_not_delivered_again(
    worker_redis, workers, receiver, tmp_path
):
    """Claims of idle entries every 50 ms (idle for 100 ms) and a slow receiver: the entries
    the worker is delivering are its own pending ones, idle long enough to be claimed, and
    must not be handled a second time meanwhile."""
    url, client = worker_redis
    receiver.delay_s = 1.0
    now_ms = int(time.time() * 1000)
    expected = set()
    for number in range(4):
        match_id, player = f"slow-{number}", f"player-slow-{number}"
        await add_entry(client, entry_fields("your_turn", "mori", match_id, 2, [player], at_ms=now_ms))
        expected.add(f"{match_id}:2:your_turn:{player}")
    env = notifier_env(
        receiver, MOGAMES_CLAIM_IDLE_MS="100", MOGAMES_CLAIM_EVERY_MS="50", MOGAMES_NOTIFY_TIMEOUT_MS="60000"
    )
    workers.append(start_worker("notifier", url, tmp_path / "notifier.log", **env))
    await wait_until(lambda: _has(receiver, expected), "every notification", 30)
    await asyncio.sleep(2.0)  # a second delivery, if any, would have arrived by now
    assert sorted(check_signed(call)["id"] for call in receiver.received()) == sorted(expected)


async def test_a_notifier_killed_mid_delivery_loses_none(worker_redis, workers, receiver, tmp_path):
    url, client = worker_redis
    receiver.delay_s = 0.05
    entries, expected = async_matches(20, seed=5, at_ms=int(time.time() * 1000))
    for fields in entries:
        await add_entry(client, fields)
    log = tmp_path / "notifier.log"
    env = notifier_env(receiver, MOGAMES_CLAIM_IDLE_MS="500", MOGAMES_NOTIFY_CONCURRENCY="8")
    workers.append(start_worker("notifier", url, log, MOGAMES_WORKER_NAME="first", **env))
    await wait_until(lambda: _count_at_least(receiver, len(expected) // 3), "a third delivered", 60)
    workers[0].send_signal(signal.SIGKILL)
    assert workers[0].wait(timeout=20) == -signal.SIGKILL
    delivered_before = len(receiver.received())
    assert delivered_before < len(expected)
    workers.append(start_worker("notifier", url, log, MOGAMES_WORKER_NAME="second", **env))
    await wait_until(lambda: _has(receiver, expected), "every notification after the kill", 60)
    by_key: dict[str, list[Call]] = defaultdict(list)
    for call in receiver.received():
        by_key[check_signed(call)["id"]].append(call)
    assert set(by_key) == expected
    for calls in by_key.values():
        # A duplicate is the same notification: same key, same body, same signature.
        assert {(c.body, c.headers["mogames-signature"]) for c in calls} == {
            (calls[0].body, calls[0].headers["mogames-signature"])
        }


async def _count_at_least(receiver: Receiver, count: int) -> bool:
    return len(receiver.received()) >= count


async def test_a_receiver_down_for_a_while_gets_every_notification_when_back(
    worker_redis, workers, receiver, tmp_path
):
    url, client = worker_redis
    receiver.stop()
    entries, expected = async_matches(4, seed=7, at_ms=int(time.time() * 1000))
    for fields in entries:
        await add_entry(client, fields)
    env = notifier_env(receiver, MOGAMES_NOTIFY_FIRST_BACKOFF_MS="100", MOGAMES_NOTIFY_MAX_TRIES="10")
    log = tmp_path / "notifier.log"
    workers.append(start_worker("notifier", url, log, **env))

    async def each_failed_once() -> bool:
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        return {line["key"] for line in lines if line["event"] == "notification_retry"} >= expected

    # Down while every notification is tried and fails, then back.
    await wait_until(each_failed_once, "every notification tried while the receiver is down", 60)
    assert receiver.received() == []
    receiver.start()
    await wait_until(lambda: _has(receiver, expected), "every notification once the receiver is back", 60)
    assert {check_signed(call)["id"] for call in receiver.received()} == expected
    assert await client.xlen(keys.notify_dead_letters()) == 0


async def test_notifications_nobody_takes_land_in_the_dead_letter_stream(
    worker_redis, workers, receiver, tmp_path
):
    url, client = worker_redis
    receiver.stop()
    entries, expected = async_matches(2, seed=9, at_ms=int(time.time() * 1000))
    for fields in entries:
        await add_entry(client, fields)
    metrics_port = free_port()
    env = notifier_env(
        receiver,
        MOGAMES_NOTIFY_FIRST_BACKOFF_MS="20",
        MOGAMES_NOTIFY_MAX_TRIES="3",
        MOGAMES_METRICS_LISTEN=f"127.0.0.1:{metrics_port}",
    )
    workers.append(start_worker("notifier", url, tmp_path / "notifier.log", **env))

    async def all_dead() -> bool:
        return await client.xlen(keys.notify_dead_letters()) >= len(expected)

    await wait_until(all_dead, "every notification dead-lettered", 60)
    dead = await client.xrange(keys.notify_dead_letters())
    assert {d[b"key"].decode() for _, d in dead} == expected
    assert {d[b"tries"] for _, d in dead} == {b"3"}
    for _, fields in dead:
        assert json.loads(fields[b"body"])["id"] == fields[b"key"].decode()

    async def counted() -> bool:
        figures = await metrics_of(metrics_port)
        return figures.get(("mogames_notifications_total", 'outcome="dead_lettered"')) == len(expected)

    await wait_until(counted, "every dead letter counted", 10)
    figures = await metrics_of(metrics_port)
    assert figures[("mogames_notifications_total", 'outcome="failed"')] == 3 * len(expected)
    assert ("mogames_notifications_total", 'outcome="sent"') not in figures

    async def acknowledged() -> bool:
        pending = [await client.xpending(keys.activity(game), "notifier") for game in GAMES[:2]]
        return all(int(info["pending"]) == 0 for info in pending)

    await wait_until(acknowledged, "the entries acknowledged", 20)


def test_quiet_hours_span_midnight_in_the_players_zone():
    # 23:00-07:00 in Warsaw (UTC+1 in winter): 22:30 UTC is 23:30 there.
    night = QuietHours(23 * 60, 7 * 60, "Europe/Warsaw")
    at = 1_700_000_000  # 2023-11-14 22:13:20 UTC
    assert night.covers(at)
    assert not night.covers(at + 9 * 3600)
    assert not QuietHours(600, 600, "").covers(at)
    assert QuietHours(22 * 60, 23 * 60, "").covers(at)


async def test_bad_settings_are_refused_and_change_nothing(worker_redis):
    _url, client = worker_redis
    cases = [
        (QuietHours(1440, 0, ""), [], [], "quiet_hours.start_minute"),
        (QuietHours(0, 60, "Mars/Olympus"), [], [], "quiet_hours.time_zone"),
        (None, ["m1"], ["m1"], "mute_matches"),
    ]
    for quiet, on, off, field in cases:
        with pytest.raises(InvalidArgument) as refused:
            await notify_settings.update(client, "p", quiet, on, off)
        assert refused.value.field == field
    assert await client.keys("*") == []


def test_make_run_starts_the_notifier_only_with_a_webhook(monkeypatch, tmp_path):
    settings = RunSettings(tmp_path / "data", ["mori"], 1, 6379, 0, "127.0.0.1:50051", nginx=False)
    monkeypatch.delenv("MOGAMES_WEBHOOK_URL", raising=False)
    assert {c.name for c in children(settings, tmp_path)} >= {"ratings-0"}
    assert "notifier-0" not in {c.name for c in children(settings, tmp_path)}
    monkeypatch.setenv("MOGAMES_WEBHOOK_URL", "https://push.example.com/hook")
    started = {c.name: c for c in children(settings, tmp_path)}
    assert started["notifier-0"].command[-3:] == ["-m", "services.workers", "notifier"]
    assert started["notifier-0"].env["MOGAMES_RUN_GAMES"] == "mori"


def test_a_webhook_must_be_https_but_to_loopback():
    assert check_webhook_url("https://push.example.com/hook")
    assert check_webhook_url("http://127.0.0.1:8000/hook")
    for bad in ("http://push.example.com/hook", "ftp://127.0.0.1/x", ""):
        with pytest.raises(SettingsError, match="MOGAMES_WEBHOOK_URL"):
            check_webhook_url(bad)


async def test_sigterm_stops_a_worker_cleanly_after_its_deliveries(worker_redis, workers, receiver, tmp_path):
    url, client = worker_redis
    entries, expected = async_matches(2, seed=11, at_ms=int(time.time() * 1000))
    for fields in entries:
        await add_entry(client, fields)
    log = tmp_path / "notifier.log"
    workers.append(start_worker("notifier", url, log, **notifier_env(receiver)))
    await wait_until(lambda: _has(receiver, expected), "the notifications", 60)
    workers[0].send_signal(signal.SIGTERM)
    assert workers[0].wait(timeout=20) == 0, log.read_text()
    assert '"worker_stopped"' in log.read_text()
    pending = [await client.xpending(keys.activity(game), "notifier") for game in GAMES[:2]]
    assert [int(info["pending"]) for info in pending] == [0, 0]
