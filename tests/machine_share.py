"""Tests marked ``alone`` run while no other test of the same run does.

A few tests bound the latency of calls (the issue's "no call slowed past 100 ms"). Under
pytest-xdist the other workers' tests share the machine's cores, and their load, not the
code under test, would decide such a bound. So every test holds a shared lock on one file
of the run, and an ``alone`` test holds it exclusively: it waits for the tests running
now to end, and the workers start no other test until it has ended.

A second lock, taken briefly before the shared one, is the turnstile an ``alone`` test
holds while it waits, so a stream of short tests on the other workers cannot starve it.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "alone: runs while no other test of the run does")


def _lock_file(name: str) -> IO[bytes]:
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", f"pid{os.getpid()}")
    return Path(tempfile.gettempdir(), f"mogames-tests-{run}.{name}").open("ab")


@pytest.fixture(autouse=True)
def machine_share(request: pytest.FixtureRequest) -> Iterator[None]:
    alone = request.node.get_closest_marker("alone") is not None
    with _lock_file("turnstile") as turnstile, _lock_file("machine") as machine:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(machine, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(machine, fcntl.LOCK_UN)
