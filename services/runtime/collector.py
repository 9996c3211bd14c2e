"""The cyclic garbage collector, paced for a process holding many long-lived streams.

CPython's collector decides by counts: a young collection once allocations outnumber
deallocations by the first threshold, a full one once the objects promoted to the oldest
generation reach a quarter of it. A server holding thousands of streams defeats both. Each
message a stream receives replaces the handful of objects of its pending read (coroutine,
future, callbacks), which live until the next message, seconds later: they are promoted,
so full collections, each a walk over every stream's state with the event loop stopped,
come as often as messages flow; and their deaths, counted against the young generation's
allocations, let it grow far past its threshold.

So collections are paced by time and by the size of the heap instead:

- every ``YOUNG_EVERY_S`` the young generations are collected and what survives is frozen
  (``gc.freeze``): a pause walks only what was allocated since the last one and is still
  alive, and no collection walks the streams' long-lived state again. Frozen objects are
  still freed by reference counting as soon as they are unreferenced, as nearly all are;
- a full collection (everything unfrozen first) runs when the heap has doubled or halved
  since the last one (Python's allocated blocks): it reclaims the garbage cycles among
  objects frozen while alive, which are then never more than the heap itself, and after a
  halving (streams dropped) finds them while the walk is short. A process holding a steady
  number of connections runs none.

The count-based collector stays on as a back-stop between two paces (a burst of
allocations in one callback).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time

import structlog

log = structlog.get_logger("collector")

# The young collections' threshold, used between two paces only: high, as a move
# allocates a few hundred short-lived containers, nearly all freed by reference counting.
FIRST_GENERATION = 50_000
YOUNG_EVERY_S = 0.1
# Paces between two looks at the heap's size (sys.getallocatedblocks walks the allocator's
# pools: half a ms at a GB).
HEAP_LOOK_EVERY = 10
# The heap's size (pymalloc blocks) against the last full collection's that starts another.
FULL_WHEN_GROWN, FULL_WHEN_SHRUNK = 2.0, 0.5
# A full collection that held the event loop longer than this is logged as a warning, with
# its time: a latency figure that includes it can be told from one that does not.
FULL_PAUSE_WARNING_S = 0.1


def configure() -> None:
    """Sets the thresholds and freezes what start-up made (modules, the catalog, generated
    messages): it lives as long as the process. Called once, before the event loop."""
    _, second, third = gc.get_threshold()
    gc.set_threshold(FIRST_GENERATION, second, third)
    gc.freeze()


class Pacer:
    """Collects and freezes on each ``pace()``; runs a full collection when the heap has
    doubled or halved since the last one."""

    def __init__(self, heap_look_every: int = HEAP_LOOK_EVERY) -> None:
        self._heap_at_full = sys.getallocatedblocks()
        self._heap_look_every = heap_look_every
        self._paces = 0
        self.full_collections = 0

    def pace(self) -> None:
        gc.collect(1)
        self._paces += 1
        if self._paces % self._heap_look_every == 0 and self._heap_changed():
            self._collect_all()
        gc.freeze()

    def _collect_all(self) -> None:
        heap_before, started = sys.getallocatedblocks(), time.thread_time()
        gc.unfreeze()
        collected = gc.collect()
        self._heap_at_full = sys.getallocatedblocks()
        self.full_collections += 1
        pause_s = time.thread_time() - started
        (log.warning if pause_s > FULL_PAUSE_WARNING_S else log.info)(
            "full_collection",
            cpu_ms=round(pause_s * 1000, 1),
            collected=collected,
            heap_blocks_before=heap_before,
            heap_blocks_after=self._heap_at_full,
        )

    def _heap_changed(self) -> bool:
        heap = sys.getallocatedblocks()
        return not FULL_WHEN_SHRUNK * self._heap_at_full < heap < FULL_WHEN_GROWN * self._heap_at_full


async def keep_collecting(every_s: float = YOUNG_EVERY_S) -> None:
    pacer = Pacer()
    while True:
        await asyncio.sleep(every_s)
        pacer.pace()
