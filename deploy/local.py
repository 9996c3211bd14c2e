"""``make run``: Redis, every game service, the players service, the ratings worker (and
the notifier when MOGAMES_WEBHOOK_URL is set) and the gateway on this machine, until Ctrl-C.

Everything that must survive a restart lives in the data folder (``.run/data/`` unless
``MOGAMES_DATA_DIR`` says otherwise): Redis's append-only file, the token secret and the
Redis password, each generated on the first run (and ``processes.json``, the pid of each
child while it runs). Stopping and starting again keeps every
match, and tokens handed out before stay valid. ``make clean-data`` wipes it.

Each process runs under a supervisor (deploy/supervisor.py): one that crashes is started
again with backoff while the others keep serving. Each logs JSON lines to this terminal.
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from deploy import nginx
from deploy.redis_server import APPENDFSYNC, durable_redis_command, free_port, listening
from deploy.supervisor import Child, Supervisor, log_line
from services.catalog import GAME_PACKAGES

PROJECT = Path(__file__).resolve().parents[1]


class RunSettingsError(RuntimeError):
    pass


@dataclass(frozen=True)
class RunSettings:
    data_dir: Path
    games: list[str]
    replicas: int
    redis_port: int
    first_service_port: int  # 0: any free ports
    gateway_listen: str
    # nginx in front (deploy/nginx.py), the Python gateway behind it for the rest.
    nginx: bool
    # Redis's appendfsync: everysec, or always (nothing acknowledged is lost, even when
    # the disk lags; an fsync per write).
    appendfsync: str = "everysec"

    @classmethod
    def from_env(cls) -> RunSettings:
        games = [g for g in os.environ.get("MOGAMES_RUN_GAMES", "").split(",") if g] or list(GAME_PACKAGES)
        unknown = sorted(set(games) - set(GAME_PACKAGES))
        if unknown:
            raise RunSettingsError(f"MOGAMES_RUN_GAMES: unknown games {', '.join(unknown)}")
        appendfsync = os.environ.get("MOGAMES_REDIS_APPENDFSYNC", "everysec")
        if appendfsync not in APPENDFSYNC:
            raise RunSettingsError(
                f"MOGAMES_REDIS_APPENDFSYNC must be one of {', '.join(APPENDFSYNC)}, got {appendfsync!r}"
            )
        try:
            return cls(
                data_dir=Path(os.environ.get("MOGAMES_DATA_DIR") or PROJECT / ".run" / "data"),
                games=games,
                replicas=int(os.environ.get("MOGAMES_REPLICAS", "1")),
                redis_port=int(os.environ.get("MOGAMES_REDIS_PORT", "6379")),
                first_service_port=int(os.environ.get("MOGAMES_FIRST_SERVICE_PORT", "50061")),
                gateway_listen=os.environ.get("MOGAMES_GATEWAY_LISTEN", "127.0.0.1:50051"),
                nginx=os.environ.get("MOGAMES_NGINX", "").lower() not in ("false", "0")
                and nginx.nginx_executable() is not None,
                appendfsync=appendfsync,
            )
        except ValueError as error:
            raise RunSettingsError(f"MOGAMES_REPLICAS and the ports must be integers: {error}") from None


def kept_secret(path: Path, override: str | None) -> str:
    """``override`` if set, else the secret stored at ``path``, made on first use."""
    if override:
        return override
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(secrets.token_urlsafe(32))
    return path.read_text().strip()


def _port_of(listen: str) -> int:
    return int(listen.rsplit(":", 1)[1])


def _when_listening(port: int) -> Callable[[], bool]:
    return lambda: listening(port)


def children(settings: RunSettings, workdir: Path) -> list[Child]:
    """Redis first, then every service replica and the players service, then the gateway
    (then nginx in front)."""
    data = settings.data_dir
    password = kept_secret(data / "redis-password", os.environ.get("MOGAMES_REDIS_PASSWORD"))
    env = {
        **os.environ,
        "MOGAMES_TOKEN_SECRET": kept_secret(data / "token-secret", os.environ.get("MOGAMES_TOKEN_SECRET")),
        "MOGAMES_REDIS_URL": f"redis://127.0.0.1:{settings.redis_port}/0",
        "MOGAMES_REDIS_PASSWORD": password,
    }
    redis_command = durable_redis_command(settings.redis_port, data / "redis", password, settings.appendfsync)
    plan = [Child("redis", redis_command, env, ready=_when_listening(settings.redis_port), stop_last=True)]
    port = settings.first_service_port
    for game in settings.games:
        addresses = []
        for replica in range(settings.replicas):
            listen = f"127.0.0.1:{port or free_port()}"
            port = port + 1 if port else 0
            service_env = {**env, "MOGAMES_LISTEN": listen}
            command = [sys.executable, "-m", "services", game]
            ready = _when_listening(_port_of(listen))
            plan.append(Child(f"{game}-{replica}", command, service_env, ready=ready, stage=1))
            addresses.append(listen)
        env[f"MOGAMES_BACKENDS_{game.upper()}"] = ",".join(addresses)
    # The players service (sign-in, sessions, my matches), behind the gateway like a game.
    players_listen = f"127.0.0.1:{port or free_port()}"
    command = [sys.executable, "-m", "services.players"]
    ready = _when_listening(_port_of(players_listen))
    plan.append(Child("players-0", command, {**env, "MOGAMES_LISTEN": players_listen}, ready=ready, stage=1))
    env["MOGAMES_BACKENDS_PLAYERS"] = players_listen
    # The workers (services/workers): ratings always, the notifier once a webhook is set.
    workers = ["ratings", "notifier"] if os.environ.get("MOGAMES_WEBHOOK_URL") else ["ratings"]
    for kind in workers:
        worker_env = {
            **env,
            "MOGAMES_WORKER_NAME": f"{kind}-0",
            "MOGAMES_RUN_GAMES": ",".join(settings.games),
        }
        plan.append(Child(f"{kind}-0", [sys.executable, "-m", "services.workers", kind], worker_env, stage=1))
    gateway_listen = f"127.0.0.1:{free_port()}" if settings.nginx else settings.gateway_listen
    gateway_env = {**env, "MOGAMES_GATEWAY_LISTEN": gateway_listen}
    if settings.nginx:
        # nginx, on loopback, names each client to the gateway (the lobby's budgets).
        gateway_env.setdefault("MOGAMES_TRUSTED_PROXIES", "127.0.0.1")
    ready = _when_listening(_port_of(gateway_listen))
    plan.append(Child("gateway", [sys.executable, "-m", "gateway"], gateway_env, ready=ready, stage=2))
    if settings.nginx:
        backends = {g: env[f"MOGAMES_BACKENDS_{g.upper()}"].split(",") for g in settings.games}
        config = nginx.write_config(
            settings.gateway_listen, gateway_listen, backends, workdir, supervised=True
        )
        ready = _when_listening(_port_of(settings.gateway_listen))
        plan.append(Child("nginx", nginx.command(config), env, ready=ready, stage=3))
    return plan


def main() -> None:
    try:
        settings = RunSettings.from_env()
    except RunSettingsError as error:
        sys.exit(f"mogames: bad settings: {error}")
    stopping = False

    workdir = tempfile.TemporaryDirectory(prefix="mogames-run-")
    supervisor = Supervisor(
        children(settings, Path(workdir.name)), pid_file=settings.data_dir / "processes.json"
    )

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True
        supervisor.interrupt()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        if not supervisor.start():
            return
        front = "nginx, the gateway behind it" if settings.nginx else "the gateway"
        log_line("mogames_up", listen=settings.gateway_listen, front=front, data_dir=str(settings.data_dir))
        print(
            f"mogames is up: {front} on {settings.gateway_listen}, data in {settings.data_dir}. "
            "Ctrl-C stops everything.",
            flush=True,
        )
        # The gateway's web port (Connect, gRPC-Web and the page; docs/protocol.md, "The web page").
        web = os.environ.get("MOGAMES_WEB_LISTEN", "127.0.0.1:8080")
        if web:
            print(f"web page: http://{web.replace('0.0.0.0', '127.0.0.1')}/", flush=True)
        while not stopping:
            supervisor.check()
            time.sleep(0.1)
    finally:
        supervisor.stop()
        workdir.cleanup()


if __name__ == "__main__":
    main()
