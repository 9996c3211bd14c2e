"""The players service as a real process, for the players tests."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

from deploy.redis_server import free_port, wait_for_port
from tests.conftest import TOKEN_SECRET
from tests.test_processes import spawn


@contextlib.contextmanager
def running_players(redis_url: str, log: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """A players service process on a free loopback port (its address yielded), with the
    tests' token secret and ``env`` on top; stopped after."""
    for _attempt in range(3):
        address = f"127.0.0.1:{free_port()}"
        settings = {
            "MOGAMES_TOKEN_SECRET": TOKEN_SECRET.decode(),
            "MOGAMES_REDIS_URL": redis_url,
            "MOGAMES_LISTEN": address,
            "MOGAMES_LOG_LEVEL": "warning",
            **(env or {}),
        }
        process = spawn(["-m", "services.players"], settings, log)
        try:
            wait_for_port(int(address.rsplit(":", 1)[1]), 30)
        except BaseException:
            _stop(process)
            raise
        if process.poll() is None:  # not another process's port (ours then exits)
            break
        _stop(process)
    else:
        raise RuntimeError(f"the players service kept exiting at start: see {log}")
    try:
        yield address
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(timeout=20)
