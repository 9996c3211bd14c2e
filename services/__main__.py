"""``python -m services <game>`` runs one game service (see services.runtime.server)."""

import sys

from services.runtime.grpc_core import apply_core_settings

apply_core_settings()

from services.runtime.server import cli  # noqa: E402  (grpc loads after its core settings)

cli(sys.argv[1:])
