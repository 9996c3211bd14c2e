"""Keep a set of child processes running: one that exits is started again, with backoff.

``make run`` (deploy/local.py) puts Redis, every game service replica and the gateway
under one supervisor, so a crash of one of them costs that process a restart, not the
whole system: the others keep serving, and Redis comes back with its data.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

FIRST_BACKOFF_S = 0.25
MAX_BACKOFF_S = 10.0
# A child that stayed up this long counts as healthy again: its next crash restarts fast.
STABLE_AFTER_S = 30.0
# While a child starts (Redis loading a large file, a service waiting for it), one line
# this often says what start-up still waits for.
STILL_WAITING_EVERY_S = 15.0


def log_line(event: str, **fields: object) -> None:
    """One JSON line on stderr, like the children's own logs, in one write: the children share
    the file, and a line written in two pieces may be cut by another's."""
    record = {"event": event, "service": "supervisor", "timestamp": time.time(), **fields}
    sys.stderr.write(json.dumps(record) + "\n")
    sys.stderr.flush()


@dataclass
class Child:
    name: str
    command: list[str]
    env: dict[str, str]
    # Whether it is ready now (e.g. it listens); start-up waits for it, however long.
    ready: Callable[[], bool] | None = None
    # Stopped after every other child (Redis, so the others finish their calls first).
    stop_last: bool = False
    # Children of one stage start together; each stage once the one before is ready.
    stage: int = 0
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restarts: int = 0
    backoff_s: float = FIRST_BACKOFF_S
    restart_at: float | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None and self.process.poll() is None else None


@dataclass
class Supervisor:
    children: list[Child]
    # Where each child's pid is written after every (re)start, for operators and tests.
    pid_file: Path | None = None
    log: IO[bytes] | None = None
    _stopping: bool = field(default=False, init=False)
    _interrupted: bool = field(default=False, init=False)

    def interrupt(self) -> None:
        """Make a start() under way return (from a signal handler)."""
        self._interrupted = True

    def start(self) -> bool:
        """Start every child, stage by stage (Redis, then the services, then the gateway);
        True once all are ready, False if interrupted first. A child that exits before it
        is ready is started again with backoff: start-up waits, it does not give up."""
        for stage in sorted({child.stage for child in self.children}):
            starting = [child for child in self.children if child.stage == stage]
            for child in starting:
                self._launch(child)
            for child in starting:
                if not self._wait_ready(child):
                    return False
        self._write_pids()
        return True

    def _launch(self, child: Child) -> None:
        # Its own session: Ctrl-C reaches the supervisor only, which stops children in order.
        child.process = subprocess.Popen(
            child.command, env=child.env, stdout=self.log, stderr=self.log, start_new_session=True
        )
        child.started_at = time.monotonic()
        child.restart_at = None

    def _wait_ready(self, child: Child) -> bool:
        began = told = time.monotonic()
        while not self._interrupted:
            assert child.process is not None
            code = child.process.poll()
            if code is not None:
                log_line("process_exited", name=child.name, code=code, restart_in_s=child.backoff_s)
                if not self._pause(child.backoff_s):
                    break
                child.backoff_s = min(child.backoff_s * 2, MAX_BACKOFF_S)
                child.restarts += 1
                self._launch(child)
                continue
            if child.ready is None or child.ready():
                log_line("process_started", name=child.name, pid=child.process.pid, restarts=child.restarts)
                return True
            if time.monotonic() - told >= STILL_WAITING_EVERY_S:
                told = time.monotonic()
                log_line("process_starting", name=child.name, waited_s=round(told - began))
            time.sleep(0.05)
        return False

    def _pause(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless interrupted; False if interrupted."""
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            if self._interrupted:
                return False
            time.sleep(0.05)
        return not self._interrupted

    def check(self) -> None:
        """Restart what exited (once its backoff has passed); call it often."""
        now = time.monotonic()
        changed = False
        for child in self.children:
            if child.process is None or self._stopping:
                continue
            code = child.process.poll()
            if code is None:
                if now - child.started_at > STABLE_AFTER_S:
                    child.backoff_s = FIRST_BACKOFF_S
                continue
            if child.restart_at is None:
                child.restart_at = now + child.backoff_s
                log_line("process_exited", name=child.name, code=code, restart_in_s=child.backoff_s)
                child.backoff_s = min(child.backoff_s * 2, MAX_BACKOFF_S)
            elif now >= child.restart_at:
                child.restarts += 1
                try:
                    # Not waited for: the others keep being watched meanwhile.
                    self._launch(child)
                    log_line("process_restarted", name=child.name, pid=child.pid, restarts=child.restarts)
                except OSError as error:
                    log_line("process_restart_failed", name=child.name, error=str(error))
                    child.restart_at = time.monotonic() + child.backoff_s
                changed = True
        if changed:
            self._write_pids()

    def _write_pids(self) -> None:
        if self.pid_file is None:
            return
        pids = {child.name: child.pid for child in self.children}
        temporary = self.pid_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(pids))
        os.replace(temporary, self.pid_file)

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERM to every child at once, then to the ``stop_last`` ones (Redis)."""
        self._stopping = True
        for last in (False, True):
            running = [
                c.process
                for c in self.children
                if c.stop_last == last and c.process is not None and c.process.poll() is None
            ]
            for process in running:
                process.send_signal(signal.SIGTERM)
            for process in running:
                try:
                    process.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        if self.pid_file is not None:
            self.pid_file.unlink(missing_ok=True)
