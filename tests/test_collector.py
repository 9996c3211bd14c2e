"""The paced collector (services/runtime/collector.py): a pace collects the young garbage
cycles and freezes what survives, so no later young collection walks it again; a cycle
frozen while alive and dropped afterwards is reclaimed once the heap halves or doubles, by a
full collection that is logged.

Each case runs in a process of its own: freezing is global to the interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PRELUDE = """
import gc, weakref
from services.runtime.collector import Pacer

class Node:
    def __init__(self):
        self.other = self

def dead_cycle():
    node = Node()
    return weakref.ref(node)

def pace_until_collected(pacer, ref, paces):
    for n in range(paces):
        if ref() is None:
            return n
        pacer.pace()
    return None if ref() is not None else paces
"""


def run(code: str) -> tuple[str, str]:
    """The script's last line of output, and its log lines before it."""
    script = PRELUDE + textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    *logged, last = done.stdout.strip().splitlines()
    return last, "\n".join(logged)


def test_a_pace_collects_young_garbage_cycles_and_freezes_the_survivors() -> None:
    out, logged = run(
        """
        gc.disable()  # only the pace collects
        pacer = Pacer(heap_look_every=1_000_000)
        garbage = dead_cycle()
        kept = [Node() for _ in range(1000)]
        frozen_before = gc.get_freeze_count()
        pacer.pace()
        print(garbage() is None, gc.get_freeze_count() - frozen_before >= 1000, len(gc.get_objects(0)))
        """
    )
    assert out == "True True 0"
    assert "full_collection" not in logged


def test_a_cycle_frozen_alive_then_dropped_is_reclaimed_once_the_heap_halves() -> None:
    out, logged = run(
        """
        gc.disable()
        heap = [[n] for n in range(500_000)]
        pacer = Pacer(heap_look_every=1)
        node = Node()
        ref = weakref.ref(node)
        pacer.pace()  # node is frozen while alive
        del node
        pacer.pace()
        frozen_kept = ref() is not None and pacer.full_collections == 0
        del heap  # the heap halves: the next look at it runs a full collection
        print(frozen_kept, pace_until_collected(pacer, ref, 3), pacer.full_collections)
        """
    )
    assert out == "True 1 1"
    assert logged.count("full_collection") == 1, logged


def test_a_cycle_frozen_alive_then_dropped_is_reclaimed_once_the_heap_doubles() -> None:
    out, logged = run(
        """
        gc.disable()
        pacer = Pacer(heap_look_every=1)
        node = Node()
        ref = weakref.ref(node)
        pacer.pace()
        del node
        pacer.pace()
        frozen_kept = ref() is not None and pacer.full_collections == 0
        heap = [[n] for n in range(2_000_000)]
        print(frozen_kept, pace_until_collected(pacer, ref, 3), pacer.full_collections)
        """
    )
    assert out == "True 1 1"
    assert logged.count("full_collection") == 1, logged
