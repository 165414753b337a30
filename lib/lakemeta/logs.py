"""Logging set-up for the CLI and the jobs: counts go to stderr, one line per thing done."""

from __future__ import annotations

import logging
import os


def configure_logging() -> None:
    logging.basicConfig(
        level=os.environ.get("LAKEMETA_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in ("py4j", "numba"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
