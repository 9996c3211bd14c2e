"""``make run``: Redis, every game service and the gateway on this machine, until Ctrl-C.

Each process logs JSON lines to this terminal. Settings come from the environment
(see README); the defaults suit one developer machine.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from deploy.launcher import running_system
from services.catalog import GAME_PACKAGES


def main() -> None:
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    with running_system(
        list(GAME_PACKAGES),
        replicas=int(os.environ.get("MOGAMES_REPLICAS", "1")),
        gateway_listen=os.environ.get("MOGAMES_GATEWAY_LISTEN", "0.0.0.0:50051"),
        redis_port=int(os.environ.get("MOGAMES_REDIS_PORT", "6379")),
        first_service_port=int(os.environ.get("MOGAMES_FIRST_SERVICE_PORT", "50061")),
    ) as system:
        print(f"redis: {system.redis_url}", flush=True)
        print(f"mogames is up: gateway on {system.gateway}. Ctrl-C stops everything.", flush=True)
        while not stopping and system.all_running():
            time.sleep(0.2)
        if not stopping:
            sys.exit("a process stopped unexpectedly; stopping the rest")


if __name__ == "__main__":
    main()
