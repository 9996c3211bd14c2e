"""On HTTP/2, a browser that went away (its tab closed mid-watch) is let go by the gateway
process within seconds: its socket is gone, not left in CLOSE-WAIT until shutdown, and a
gateway stopped after browsers departed stops as soon as one that never had any."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from deploy.redis_server import free_port, wait_for_port
from tests.conftest import TOKEN_SECRET, Cluster
from tests.web.test_web_protocols import _stream_is_read, started_match
from tests.web.wire import WebClient

BROWSERS = 4
# Longer than any shutdown this test may wait: a gateway held by a departed browser's
# connection would wait all of it.
GRACE_S = 30
_LISTEN_STATE = "0A"


def _sockets_on_port(pid: int, port: int) -> int:
    """TCP connections of process ``pid`` on its local ``port`` (its listener not counted),
    in any state: CLOSE-WAIT too."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    count = 0
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] != _LISTEN_STATE and fields[9] in inodes:
                count += 1
    return count


@contextlib.contextmanager
def gateway_process(
    cluster: Cluster, redis_url: str, log: Path
) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A gateway process with its web port, in front of ``cluster``; its web port."""
    web_port = free_port()
    env = {
        **os.environ,
        "MOGAMES_GATEWAY_LISTEN": f"127.0.0.1:{free_port()}",
        "MOGAMES_WEB_LISTEN": f"127.0.0.1:{web_port}",
        "MOGAMES_REDIS_URL": redis_url,
        "MOGAMES_TOKEN_SECRET": TOKEN_SECRET.decode(),
        "MOGAMES_SHUTDOWN_GRACE_S": str(GRACE_S),
        "MOGAMES_LOG_LEVEL": "warning",
        **{
            f"MOGAMES_BACKENDS_{game.upper()}": ",".join(addresses)
            for game, addresses in cluster.replicas_addresses.items()
        },
    }
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway"], env=env, stdout=output, stderr=subprocess.STDOUT, text=True
        )
    try:
        wait_for_port(web_port, 30)
        yield process, web_port
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


async def browsers_leave(gateway_pid: int, web_port: int, count: int) -> str:
    """``count`` browsers, each on an HTTP/2 connection of its own, watch a match, then go
    away mid-stream as a closed tab does: their process ends, their watches unfinished.
    The match they watched."""
    url = f"http://127.0.0.1:{web_port}"
    async with httpx.AsyncClient(http1=False, http2=True, timeout=20) as http:
        match_id, tokens = await started_match(WebClient(http, url, "connect-proto"))
    command = [sys.executable, "-m", "tests.web.departing_browser", url, match_id, tokens[0], str(count)]
    tab = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
    try:
        assert tab.stdout is not None
        ready = await asyncio.wait_for(tab.stdout.readline(), 30)
        assert ready.strip() == b"watching"
        assert _sockets_on_port(gateway_pid, web_port) == count
    finally:
        tab.kill()
        await tab.wait()
    return match_id


def _stopped_in_s(process: subprocess.Popen[str]) -> float:
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=GRACE_S + 30)
    return time.monotonic() - started


async def test_a_departed_browser_is_released_on_http2(cluster: Cluster, redis_url: str, tmp_path: Path):
    with gateway_process(cluster, redis_url, tmp_path / "gateway.log") as (gateway, web_port):
        match_id = await browsers_leave(gateway.pid, web_port, BROWSERS)
        deadline = time.monotonic() + 5
        while (held := _sockets_on_port(gateway.pid, web_port)) != 0:
            assert time.monotonic() < deadline, f"the gateway still holds {held} socket(s) after 5 s"
            await asyncio.sleep(0.1)
        # Their watches are released on the replica too.
        deadline = time.monotonic() + 10
        while await _stream_is_read(redis_url, match_id, 0.0):
            assert time.monotonic() < deadline, "the service still serves the departed watches after 10 s"
            await asyncio.sleep(0.2)


@pytest.mark.alone
async def test_departed_browsers_do_not_hold_up_a_shutdown(cluster: Cluster, redis_url: str, tmp_path: Path):
    with (
        gateway_process(cluster, redis_url, tmp_path / "departed.log") as (departed, departed_port),
        gateway_process(cluster, redis_url, tmp_path / "none.log") as (untouched, _untouched_port),
    ):
        await browsers_leave(departed.pid, departed_port, BROWSERS)
        deadline = time.monotonic() + 5
        while _sockets_on_port(departed.pid, departed_port):
            assert time.monotonic() < deadline, "the departed browsers' sockets are still held after 5 s"
            await asyncio.sleep(0.1)
        with_none_s = _stopped_in_s(untouched)
        with_departed_s = _stopped_in_s(departed)
    log = (tmp_path / "departed.log").read_text()
    assert departed.returncode == 0, log
    # Far below the grace a stuck connection would take; as quick as with no browser at all.
    assert with_departed_s < GRACE_S / 2, f"stopped in {with_departed_s:.1f} s\n{log}"
    assert with_departed_s <= with_none_s + 3, f"{with_departed_s:.1f} s, with none {with_none_s:.1f} s"
    assert "CancelledError" not in log, log
