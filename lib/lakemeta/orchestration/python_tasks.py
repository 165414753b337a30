"""The DAGs' Python tasks: the steps that need no Spark (planning, the batch audit, maintenance). DAG
files import this when they are parsed, so it imports only the configuration and the logs; a task
imports what it runs when it runs."""

from __future__ import annotations

from lakemeta.config import load_config
from lakemeta.logs import configure_logging


def detect_batches() -> bool:
    """Plan a run from the Delta logs (or resume the unfinished one); False when no table changed and no
    run was opened, which skips the rest of the DAG run: no state step, no commit, no asset, no
    discovery."""
    from lakemeta.orchestration.pipeline import Pipeline

    configure_logging()
    return Pipeline(None, load_config()).detect_batches() is not None


def batch_audit() -> str | None:
    """Check the running run's batches for schema drift; the results' path (None when no run is in
    progress). Drift is reported in the log and the results, and the run goes on."""
    from lakemeta.quality.gate import audit_batches

    configure_logging()
    lake, catalog = load_config().require_paths()
    audit = audit_batches(catalog, lake)
    return None if audit is None else str(audit.path)


def maintain_catalog() -> int:
    """Compact, checkpoint and VACUUM the configured catalog's tables (``maintenance``); the number of
    tables maintained."""
    from lakemeta.orchestration.maintenance import maintain_tables

    configure_logging()
    config = load_config()
    _lake, catalog = config.require_paths()
    return len(maintain_tables(catalog, config.maintenance.retention).tables)
