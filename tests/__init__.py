"""The test session's gRPC core settings are the servers' own (services/runtime/grpc_core.py):
this package loads before any test module, and so before grpc. A server process that serves a
game kept in the tests (``MOGAMES_EXTRA_GAMES=tests.nim``) applied them itself at start."""

import os
import sys

from services.runtime.grpc_core import apply_core_settings

if "grpc" not in sys.modules or "GRPC_EXPERIMENTS" not in os.environ:
    apply_core_settings()
