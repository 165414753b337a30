"""Stopping the Spark work of a step that was stopped: a task killed by its timeout or by Airflow, a
``lakemeta run`` stopped with Ctrl-C.

The step's process stops waiting at once (the timeout's exception, SIGTERM, KeyboardInterrupt), but the
Spark jobs it started go on: on a Spark Connect server they belong to the server, in a classic session to
this process's JVM. A job that goes on may commit after the step let go of the lease that kept other
writers out (``lakemeta.catalog.leases``), and Airflow's retry of the task would race it. So a step tags
its operations (``task_tag``), and before a lease is let go after such a stop (``Catalog``'s holds), and in
the operator's ``on_kill``, the tagged operations are interrupted (Spark Connect's ``interruptTag``; a
classic session cancels its jobs) until none is left running.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lakemeta.spark.portable import is_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

TASK_TAG_PREFIX = "lakemeta-task-"
# After the first interruption, how often the tag is interrupted again: an operation the stopped step's
# thread started meanwhile (a ``finally`` that reads) is found by the next round.
_ROUND_SECONDS = 0.25
# Rounds in a row that must find nothing left running before the work counts as stopped.
_QUIET_ROUNDS = 2


def task_tag() -> str:
    """A tag for the operations of one attempt of one step, unique across attempts and processes (Spark
    Connect tags may not hold commas)."""
    return f"{TASK_TAG_PREFIX}{uuid.uuid4().hex}"


def interrupt_tagged(spark: SparkSession, tag: str, timeout: float = 60.0) -> list[str]:
    """Interrupt the operations of ``spark``'s Connect session that carry ``tag``, round after round until
    ``_QUIET_ROUNDS`` rounds in a row find none running (or ``timeout`` seconds pass: then a warning);
    returns the ids of the operations interrupted."""
    interrupted: list[str] = []
    quiet, deadline = 0, time.monotonic() + timeout
    while quiet < _QUIET_ROUNDS:
        found = spark.interruptTag(tag)
        interrupted += found
        quiet = 0 if found else quiet + 1
        if time.monotonic() > deadline:
            log.warning("operations tagged %s still started after %.0f s of interrupting", tag, timeout)
            break
        if quiet < _QUIET_ROUNDS:
            time.sleep(_ROUND_SECONDS)
    if interrupted:
        log.warning("interrupted %d Spark Connect operations of %s", len(interrupted), tag)
    return interrupted


def stop_own_work(spark: SparkSession, tags: Sequence[str] | None = None) -> None:
    """Stop the Spark work this thread started on ``spark``: over Spark Connect, the operations of the
    thread's task tags (``task_tag``; or of ``tags``, the tags of the thread that did the work, when another
    thread stops it), or of the whole session where there are none (a session of its own: ``lakemeta run
    --remote``); in a classic session, every job of this process's JVM, which runs nothing but this
    process's work."""
    if not is_connect(spark):
        spark.sparkContext.cancelAllJobs()
        log.warning("cancelled the Spark jobs of this process")
        return
    tags = [tag for tag in (spark.getTags() if tags is None else tags) if tag.startswith(TASK_TAG_PREFIX)]
    if not tags:
        stopped = spark.interruptAll()
        if stopped:
            log.warning("interrupted %d Spark Connect operations of this session", len(stopped))
        return
    for tag in tags:
        interrupt_tagged(spark, tag)


def is_stop(error: BaseException) -> bool:
    """Whether ``error`` stopped the step from outside rather than came from its work: a timeout
    (Airflow's ``AirflowTaskTimeout``), a kill turned into an exception, Ctrl-C. These derive from
    ``BaseException`` alone, so that no ``except Exception`` swallows them."""
    return not isinstance(error, Exception)
