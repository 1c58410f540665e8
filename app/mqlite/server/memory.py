"""Large buffers go back to the OS when freed (glibc's malloc; elsewhere nothing to do).

glibc serves an allocation of at least ``M_MMAP_THRESHOLD`` with its own ``mmap``, given
back by ``free``, but raises that threshold to the size of every such block freed (up to
32 MiB): after one 29 MB request body, every later 1 MiB body came from the heap and its
pages stayed with the process (8 large Sends left the worker at 219 MB instead of 40).
Setting the threshold fixes it (no dynamic raise), so request-sized buffers stay mmapped
and the worker's memory returns to its idle size after a burst.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3  # glibc <malloc.h>
MMAP_THRESHOLD_BYTES = 256 << 10


def pin_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """True when glibc took the setting."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, threshold))
