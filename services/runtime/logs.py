"""structlog set-up shared by every process: JSON lines on stdout, request context from contextvars."""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

# A log line quotes client input (a player name, a refused move) at most this long.
MAX_VALUE_CHARS = 500


def _clip_values(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key, value in event.items():
        if key != "exception" and isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
            event[key] = f"{value[:MAX_VALUE_CHARS]}... ({len(value) - MAX_VALUE_CHARS} more characters)"
    return event


def configure(level: str = "info", service: str = "", replica: str = "") -> None:
    """``service`` and ``replica`` (its listen address) and the host name go on every line."""
    fixed = {"service": service, "host": socket.gethostname(), "replica": replica}
    fixed = {k: v for k, v in fixed.items() if v}

    def add_fixed(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        # A processor, not a context variable: each call clears its context on entry.
        for key, value in fixed.items():
            event.setdefault(key, value)
        return event

    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            add_fixed,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _clip_values,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelNamesMapping()[level.upper()]),
        logger_factory=structlog.WriteLoggerFactory(sys.stdout),
        cache_logger_on_first_use=True,
    )
