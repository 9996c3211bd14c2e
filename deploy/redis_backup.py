"""Backing up a Redis and restoring the backup (docs/operations.md, "Backup and restore").

``python -m deploy.redis_backup backup URL FILE`` writes the Redis at URL's data to FILE as
an RDB file, as the Kubernetes CronJobs do: ``redis-cli --rdb`` (a replication snapshot:
Redis goes on serving; the password from MOGAMES_REDIS_PASSWORD or the URL).

``python -m deploy.redis_backup restore FILE DATA_DIR`` makes an empty DATA_DIR hold that
data as a durable Redis keeps it, an append-only file: a redis-server loads the RDB file
there with the append-only file off, turns it on (Redis rewrites the whole data set into
it), then stops. A Redis started on DATA_DIR with ``appendonly yes`` (``make run``'s,
``deploy/kubernetes/redis``'s) then serves every match of the backup.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import redis

from deploy.redis_server import free_port, redis_executable, tuning_args, wait_for_port

# Where a restored Redis keeps its append-only file (a file before Redis 7, a folder since).
APPEND_ONLY = ("appendonly.aof", "appendonlydir")


class BackupError(RuntimeError):
    pass


def redis_cli() -> str:
    """redis-cli on PATH, else the one beside the redis-server this project runs."""
    found = shutil.which("redis-cli") or str(Path(redis_executable()).with_name("redis-cli"))
    if not os.access(found, os.X_OK):
        raise BackupError("redis-cli not found: install Redis's tools (apt-get install redis-tools)")
    return found


def backup(url: str, into: Path, password: str | None = None) -> Path:
    """The data of the Redis at ``url`` as an RDB file at ``into`` (written whole or not at all)."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        raise BackupError(f"a backup is of one Redis (redis://host:port), not {url!r}")
    environment = {**os.environ, "REDISCLI_AUTH": parts.password or password or ""}
    partial = into.with_name(into.name + ".part")
    command = [redis_cli(), "-h", parts.hostname, "-p", str(parts.port or 6379)]
    if parts.scheme == "rediss":
        command.append("--tls")
    done = subprocess.run(
        [*command, "--rdb", str(partial)], env=environment, capture_output=True, text=True, timeout=3600
    )
    if done.returncode != 0 or not partial.exists():
        partial.unlink(missing_ok=True)
        raise BackupError(f"redis-cli --rdb failed: {(done.stderr or done.stdout).strip()}")
    partial.replace(into)
    return into


def restore(rdb: Path, data_dir: Path, timeout_s: float = 600.0) -> int:
    """An append-only file in ``data_dir`` holding the data of ``rdb``; the number of keys."""
    data_dir.mkdir(parents=True, exist_ok=True)
    if any((data_dir / name).exists() for name in (*APPEND_ONLY, "dump.rdb")):
        raise BackupError(f"{data_dir} holds data already: restore into an empty folder")
    shutil.copyfile(rdb, data_dir / "dump.rdb")
    port = free_port()
    process = subprocess.Popen(
        [
            redis_executable(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(data_dir.resolve()),
            "--dbfilename",
            "dump.rdb",
            "--appendonly",
            "no",
            "--save",
            "",
            *tuning_args(),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, timeout_s)
        client = redis.Redis(port=port, socket_timeout=timeout_s)
        deadline = time.monotonic() + timeout_s
        while _persistence(client, deadline)["loading"] != "0":
            time.sleep(0.05)
        keys = int(client.dbsize())
        client.config_set("appendonly", "yes")
        while True:
            state = _persistence(client, deadline)
            if state["aof_last_bgrewrite_status"] != "ok":
                raise BackupError("Redis could not write the append-only file")
            rewriting = "1" in (state["aof_rewrite_in_progress"], state["aof_rewrite_scheduled"])
            if state["aof_enabled"] == "1" and not rewriting:
                break
            time.sleep(0.05)
        client.shutdown(nosave=True)  # the append-only file is flushed as Redis stops
        if process.wait(timeout=timeout_s) != 0:
            raise BackupError(f"the restoring redis-server exited with {process.returncode}")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    (data_dir / "dump.rdb").unlink()
    return keys


def _persistence(client: redis.Redis, deadline: float) -> dict[str, str]:
    if time.monotonic() > deadline:
        raise BackupError("the restoring redis-server took too long")
    try:
        info = client.info("persistence")
    except redis.BusyLoadingError:
        return {"loading": "1"}
    return {name: str(value) for name, value in info.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m deploy.redis_backup", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    saving = commands.add_parser("backup", help="write a Redis's data to an RDB file")
    saving.add_argument("url")
    saving.add_argument("file", type=Path)
    loading = commands.add_parser("restore", help="make an empty data folder hold an RDB file's data")
    loading.add_argument("file", type=Path)
    loading.add_argument("data_dir", type=Path)
    args = parser.parse_args()
    try:
        if args.command == "backup":
            backup(args.url, args.file, os.environ.get("MOGAMES_REDIS_PASSWORD"))
            print(f"backed up to {args.file}")
        else:
            keys = restore(args.file, args.data_dir)
            print(f"restored {keys} keys into {args.data_dir}")
    except BackupError as error:
        sys.exit(f"mogames redis_backup: {error}")


if __name__ == "__main__":
    main()
