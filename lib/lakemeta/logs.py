"""Logging set-up for the CLI and the jobs: counts go to stderr, one line per thing done."""

from __future__ import annotations

import logging
import os


def configure_logging() -> None:
    logging.basicConfig(
        level=os.environ.get("LAKEMETA_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Libraries that log their internals at INFO: Great Expectations writes some 200 lines a run about
    # the functions of its own API it did not register.
    for noisy in ("py4j", "numba", "great_expectations"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
