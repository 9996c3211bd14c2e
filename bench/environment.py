"""The server settings every bench starts its processes with."""

from __future__ import annotations

import os

# A bench creates every match from one address and picks seeds to replay deals: the
# per-client guards and the refusal of client seeds are lifted; only warnings are logged.
BENCH_ENVIRONMENT = {
    "MOGAMES_LOG_LEVEL": "warning",
    "MOGAMES_ALLOW_CLIENT_SEED": "true",
    "MOGAMES_CREATE_LIMIT": "0",
    "MOGAMES_JOIN_LIMIT": "0",
    "MOGAMES_MAX_WAITING_PER_CLIENT": "0",
}


def use_bench_environment(**extra: str) -> None:
    """Sets the bench's settings (and ``extra``) where the environment does not set them."""
    for name, value in {**BENCH_ENVIRONMENT, **extra}.items():
        os.environ.setdefault(name, value)
