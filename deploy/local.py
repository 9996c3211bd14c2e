"""``make run``: Redis, every game service and the gateway on this machine, until Ctrl-C.

Each process logs JSON lines to this terminal. Settings come from the environment
(see README); the defaults suit one developer machine.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time

from deploy.redis_server import running_redis, wait_for_port
from services.catalog import GAME_PACKAGES

FIRST_SERVICE_PORT = 50061


def main() -> None:
    redis_port = int(os.environ.get("MOGAMES_REDIS_PORT", "6379"))
    replicas = int(os.environ.get("MOGAMES_REPLICAS", "1"))
    env = dict(os.environ)
    env.setdefault("MOGAMES_TOKEN_SECRET", secrets.token_urlsafe(32))
    processes: list[subprocess.Popen[bytes]] = []
    with running_redis(redis_port) as redis_url:
        env.setdefault("MOGAMES_REDIS_URL", redis_url)
        print(f"redis: {env['MOGAMES_REDIS_URL']}", flush=True)
        port = FIRST_SERVICE_PORT
        for game in GAME_PACKAGES:
            addresses = []
            for _ in range(replicas):
                listen = f"127.0.0.1:{port}"
                service_env = {**env, "MOGAMES_LISTEN": listen}
                processes.append(subprocess.Popen([sys.executable, "-m", "services", game], env=service_env))
                addresses.append(listen)
                port += 1
            env[f"MOGAMES_BACKENDS_{game.upper()}"] = ",".join(addresses)
        for address in (a for g in GAME_PACKAGES for a in env[f"MOGAMES_BACKENDS_{g.upper()}"].split(",")):
            wait_for_port(int(address.rsplit(":", 1)[1]), timeout_s=30)
        processes.append(subprocess.Popen([sys.executable, "-m", "gateway"], env=env))
        listen = env.get("MOGAMES_GATEWAY_LISTEN", "0.0.0.0:50051")
        wait_for_port(int(listen.rsplit(":", 1)[1]), timeout_s=30)
        print(f"mogames is up: gateway on {listen}. Ctrl-C stops everything.", flush=True)
        stopping = False

        def stop(*_: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping and all(p.poll() is None for p in processes):
                time.sleep(0.2)
        finally:
            for process in processes:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in processes:
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
        failed = [p.args for p in processes if p.returncode not in (0, -signal.SIGTERM)]
        if failed and not stopping:
            sys.exit(f"a process stopped unexpectedly: {failed}")


if __name__ == "__main__":
    main()
