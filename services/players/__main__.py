"""``python -m services.players`` runs the players service (see services.players.server)."""

import sys

from services.runtime.grpc_core import apply_core_settings

apply_core_settings()

from services.players.server import cli  # noqa: E402  (grpc loads after its core settings)

cli(sys.argv[1:])
