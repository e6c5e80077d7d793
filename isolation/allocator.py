"""glibc malloc settings for processes that move records in batches (workers, plugin hosts).

With glibc's defaults a process hands freed memory back to the kernel as soon as more than
128 KiB is free at the top of the heap, and takes large blocks straight from mmap. A task
loop allocates a batch of records (a few MB), frees it, and allocates the next one, so every
batch paid for its pages again in page faults: on the 1 KiB sink path that was 10-15 % of
the throughput (docs/benchmarks.md). These settings keep up to 64 MiB of freed memory for
reuse and serve blocks up to 32 MiB from the heap.

An operator's own ``MALLOC_*_`` environment variables win: nothing is changed where any of
them is set. Other platforms and C libraries are left alone.

The cyclic garbage collector is tuned for the same pattern (:func:`tune_gc`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import os
import sys
from collections.abc import Mapping

log = logging.getLogger("copycat.allocator")

# mallopt() parameters (malloc.h) and the environment variables glibc reads at start.
_SETTINGS = (
    # (mallopt param, env var, value)
    (-1, "MALLOC_TRIM_THRESHOLD_", 64 << 20),  # M_TRIM_THRESHOLD
    (-2, "MALLOC_TOP_PAD_", 16 << 20),  # M_TOP_PAD
    (-3, "MALLOC_MMAP_THRESHOLD_", 32 << 20),  # M_MMAP_THRESHOLD (glibc's maximum)
)

_tuned = False


def _operator_chose(environ: Mapping[str, str]) -> bool:
    return any(name in environ for _, name, _ in _SETTINGS)


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to add to a child process's environment (none if the operator set any)."""
    if not sys.platform.startswith("linux") or _operator_chose(environ):
        return {}
    return {name: str(value) for _, name, value in _SETTINGS}


def tune_this_process() -> bool:
    """Apply the settings to the running process once; True if they are in effect."""
    global _tuned
    if _tuned:
        return True
    if not sys.platform.startswith("linux") or _operator_chose(os.environ):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    for param, name, value in _SETTINGS:
        if mallopt(param, value) != 1:
            log.debug("mallopt refused %s=%d; keeping glibc's default", name, value)
    _tuned = True
    return True


# Net allocations of container objects that start a young-generation collection (CPython's
# default is 700). A batch holds thousands of records or consumed messages, so with the
# default each batch started a few young collections, its objects survived them into the old
# generations and made full collections of the whole heap frequent: 0.2 us per record in the
# worker and as much in a sink's plugin host (docs/benchmarks.md). Batches are freed by
# reference counting, so the higher threshold only delays collecting real cycles. The plugin
# host sets the same value (isolation/_hostside/copycat_host.py).
GC_YOUNG_THRESHOLD = 50_000


def tune_gc() -> None:
    """Raise the young-generation threshold of the cyclic collector, if still lower."""
    young, *older = gc.get_threshold()
    if 0 < young < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, *older)
