"""The DAGs' Python tasks: the audits, which need no JVM. DAG files import this when they are parsed, so it
imports only the configuration and the gate (Great Expectations loads when a task runs)."""

from __future__ import annotations

from lakemeta.config import load_config
from lakemeta.logs import configure_logging
from lakemeta.quality.gate import audit_batches, audit_catalog, require_success


def quality_gate() -> str:
    """Audit the configured catalog; the results' path, or QualityGateError naming the failed expectations
    (the run fails and nothing is published)."""
    configure_logging()
    _lake, catalog = load_config().require_paths()
    return str(require_success(audit_catalog(catalog)).path)


def batch_audit() -> str | None:
    """Check the running run's batches for schema drift; the results' path (None when no run is in
    progress). Drift is reported in the log and the results, and the run goes on."""
    configure_logging()
    lake, catalog = load_config().require_paths()
    audit = audit_batches(catalog, lake)
    return None if audit is None else str(audit.path)
