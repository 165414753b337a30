"""Crash points: the places between the pipeline's durable writes, where a crash leaves the catalog in a
state of its own. Every write of the catalog passes one before and one after it (``Catalog.committing``),
and publishing passes one after each view.

Recovery is proved by stopping the pipeline at each of them and running it again
(tests/spark/test_crash_recovery.py), and can be rehearsed on a real deployment: with
``LAKEMETA_CRASH_AT=<label>`` in its environment a process kills itself with SIGKILL on reaching the point
of that label, as a lost executor host or an out-of-memory kill would. Labels are logged at debug level
(``LAKEMETA_LOG_LEVEL=DEBUG``), for example ``after merge state/hll_counters``.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable

log = logging.getLogger(__name__)

ENVIRONMENT_VARIABLE = "LAKEMETA_CRASH_AT"


def kill_when_named(label: str) -> None:
    """SIGKILL this process when ``label`` is the one ``LAKEMETA_CRASH_AT`` names: no handler, no
    ``finally`` and no JVM shutdown hook runs, so the catalog is left exactly as the crash leaves it."""
    if os.environ.get(ENVIRONMENT_VARIABLE) == label:
        message = f"crash point {label!r} reached: {ENVIRONMENT_VARIABLE} kills process {os.getpid()}"
        log.warning(message)
        logging.shutdown()
        # A log handler may still hold the line when SIGKILL comes (an Airflow task's logs go to its
        # supervisor through a buffered socket): it goes to stderr too, written at once.
        os.write(2, f"{message}\n".encode())
        os.kill(os.getpid(), signal.SIGKILL)


# What reaching a crash point does; tests put an observer here that records or stops the run.
on_reach: Callable[[str], None] = kill_when_named


def crash_point(label: str) -> None:
    """Mark a point between durable writes, named by ``label``."""
    log.debug("crash point: %s", label)
    on_reach(label)
