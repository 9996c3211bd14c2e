"""Stopping asyncio tasks for certain.

On Python 3.11 a cancellation can be lost on its way: one that lands inside a Redis call's
own timeout comes out as that call's TimeoutError, which redis-py may retry, and the task
goes on as if never cancelled. So a task that must end is cancelled again until it has.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

# How long a cancelled task gets to end before it is cancelled again.
RECANCEL_AFTER_S = 0.5


async def cancel_until_done(tasks: Iterable[asyncio.Task[object]]) -> None:
    pending = [task for task in tasks if not task.done()]
    while pending:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=RECANCEL_AFTER_S)
        pending = [task for task in pending if not task.done()]
