"""When a quiet stream (WatchMatch, PlayMatch) sends its first heartbeat."""

from __future__ import annotations

import random

# A stream's first heartbeat comes after a random share of the interval, no less than this:
# streams opened together (clients reconnecting after a restart or a cut) would otherwise
# beat together for as long as they stay quiet, thousands of messages in one moment.
FIRST_HEARTBEAT_SHARE = 0.5


def first_heartbeat_s(heartbeat_s: float) -> float:
    """When a quiet stream opened now sends its first heartbeat; the next ones come every
    ``heartbeat_s`` after it, so the stream keeps the phase drawn here."""
    return heartbeat_s * random.uniform(FIRST_HEARTBEAT_SHARE, 1.0)
