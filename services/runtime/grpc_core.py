"""The gRPC core settings every process of ours starts with.

grpc reads ``GRPC_EXPERIMENTS`` once, when its core loads, so each entry point
(``python -m services``, ``python -m gateway``, the test session) applies these before it
imports grpc; a ``GRPC_EXPERIMENTS`` already in the environment (even an empty one: grpc's
defaults) is left as it is.

grpcio serves sockets through the PosixEventEngine by default (the ``event_engine_*``
experiments): its own threads read and write, and hand each completion over to grpc.aio's
poller thread, which wakes the event loop. Turning those experiments off brings back grpc's
polling, where the poller thread does the socket work itself. For messages on open streams,
which is how moves are played (``PlayMatch``) and relayed (the gateway), that costs less CPU
per move, though a bare unary call costs a little more (docs/benchmarks.md). A grpc release
that drops these experiments logs "Unknown experiment" at start and runs on its defaults
(tests/test_grpc_core.py fails then, as a reminder to measure again).
"""

from __future__ import annotations

import os
import sys

EXPERIMENTS = "-event_engine_client,-event_engine_listener,-event_engine_for_all_other_endpoints"


def apply_core_settings() -> None:
    """Set the settings for grpc to read when it loads (it must not have loaded yet)."""
    if "grpc" in sys.modules:
        raise RuntimeError("grpc is loaded already: its core settings come before importing it")
    os.environ.setdefault("GRPC_EXPERIMENTS", EXPERIMENTS)
