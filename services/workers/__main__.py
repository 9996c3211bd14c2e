"""``python -m services.workers notifier|ratings``: one worker process until SIGTERM or Ctrl-C."""

from services.workers.process import cli

cli()
