"""``python -m services <game>`` runs one game service (see services.runtime.server)."""

import sys

from services.runtime.server import cli

cli(sys.argv[1:])
