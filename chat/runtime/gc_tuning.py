"""The garbage collector of a server process, tuned for a long-lived event loop.

Measured at 100 streams (README "Live path performance"), Python's default collector paused the
process for about 0.6 s over a 10 s phase: 73 young collections (up to 22 ms each), 6 middle ones
(up to 36 ms) and one full collection of 223 ms, which walked the 300,000 objects that Django,
the SDK and the app create at start-up and keep for the process's life. Every pause stops every
stream of the process at once, so they were the tail of the relay latency.

``tune`` runs once the server's loop is up (``manage.py tandem``):

* ``gc.freeze()`` moves every object alive then into the permanent generation, which no
  collection walks again (``TANDEM_GC_FREEZE``);
* the young generation is collected after ``TANDEM_GC_GEN0_THRESHOLD`` allocations instead of
  2,000, so the short-lived objects of a frame are mostly freed by reference counting before a
  collection has to look at them. Cycles are still found, a little later.
"""

from __future__ import annotations

import gc

from django.conf import settings


def tune() -> None:
    threshold = settings.TANDEM_GC_GEN0_THRESHOLD
    if threshold > 0:
        _, middle, old = gc.get_threshold()
        gc.set_threshold(threshold, middle, old)
    if settings.TANDEM_GC_FREEZE:
        gc.collect()
        gc.freeze()
