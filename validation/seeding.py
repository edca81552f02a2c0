"""The one seeding scheme of igbsym's validation layer.

Every random draw (weights, data blocks, fresh per-init data, dropout masks, check samples) is seeded by
:func:`derive_seed` from a root seed and a tuple of words (a stream number, an init index, a check name...),
through numpy's ``SeedSequence``: distinct tuples give statistically independent streams, and init ``i`` of a
run is reproducible on its own (so a run split over workers or resumed draws the same weights).
"""
from __future__ import annotations

import zlib

import numpy as np

WEIGHTS, DATA, FRESH, DROPOUT = 1, 2, 3, 4   # stream numbers


def derive_seed(*words) -> int:
    """A 63-bit seed from ``words`` (ints, or anything else hashed by crc32 of its ``str``)."""
    ints = [abs(int(w)) if isinstance(w, (int, np.integer)) else zlib.crc32(str(w).encode()) for w in words]
    state = np.random.SeedSequence(ints).generate_state(2, np.uint32)
    return int(state[0]) << 31 | int(state[1]) >> 1
