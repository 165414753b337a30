"""What a DAG task's step read and wrote, as OpenLineage datasets for Airflow's OpenLineage provider.

The provider emits a START and a COMPLETE (or FAIL) event for every task once a transport is configured
(``AIRFLOW__OPENLINEAGE__TRANSPORT``; without one it is off and nothing here runs). For a task that runs
a step on the Spark Connect server the datasets come from here, through the operator's
``get_openlineage_facets_on_complete`` (the provider's DefaultExtractor):

- outputs: the catalog's Delta tables (results, bookkeeping, ``state/...``) that the task's process
  committed to, through Spark or delta-rs, or found committed to by an earlier attempt of the same write
  (a retry skips it), each with its version once the step finished: the catalog reports every such table
  to its write observers (``lakemeta.catalog.store.write_observers``), which the task's process watches
  while its step runs; a task running beside it is another process and is not counted.
- inputs: the lake tables of the run's batches, each at the version the batch reads up to, for the steps
  of an incremental run (``scan_batches``, ``update_state``, ``commit_batches``); the state tables, which
  every discovery step and the joinable search derive their results from; the catalog's result tables,
  which a publication publishes.

Dataset names follow OpenLineage's naming (``spec/Naming.md``): namespace ``s3://BUCKET`` and the key
below it for object storage, namespace ``file`` and the absolute path for a local file system.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deltalake.exceptions import TableNotFoundError

from lakemeta.catalog import store
from lakemeta.storage import Location

# The steps whose inputs are the running run's batches.
BATCH_STEPS = frozenset({"scan_batches", "update_state", "commit_batches"})
STATE_READERS = frozenset({"discover", "joinable_search"})


def lineage_enabled() -> bool:
    """Whether Airflow's OpenLineage provider emits events here (a transport or configuration given)."""
    try:
        from airflow.providers.openlineage.conf import is_disabled
    except ImportError:  # the provider is not installed
        return False
    return not is_disabled()


def dataset_name(location: Location) -> tuple[str, str]:
    """OpenLineage's namespace and name of the table at ``location``."""
    if location.is_local:
        return "file", location.uri
    bucket, _, key = location.uri.partition("://")[2].partition("/")
    return f"{location.scheme}://{bucket}", key


@dataclass(frozen=True)
class TableVersion:
    """A Delta table and one of its versions (None: unknown)."""

    location: Location
    version: int | None


@dataclass
class StepLineage:
    """What a step read and wrote."""

    inputs: list[TableVersion] = field(default_factory=list)
    outputs: list[TableVersion] = field(default_factory=list)

    def operator_lineage(self) -> Any:
        """The provider's ``OperatorLineage`` of these tables, with each one's version as a facet."""
        from airflow.providers.openlineage.extractors import OperatorLineage
        from openlineage.client.event_v2 import InputDataset, OutputDataset
        from openlineage.client.facet_v2 import dataset_version_dataset, datasource_dataset

        def facets(table: TableVersion) -> dict[str, Any]:
            namespace, _name = dataset_name(table.location)
            found: dict[str, Any] = {
                "dataSource": datasource_dataset.DatasourceDatasetFacet(name=namespace, uri=namespace)
            }
            if table.version is not None:
                found["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(
                    datasetVersion=str(table.version)
                )
            return found

        return OperatorLineage(
            inputs=[InputDataset(*dataset_name(t.location), facets=facets(t)) for t in self.inputs],
            outputs=[OutputDataset(*dataset_name(t.location), facets=facets(t)) for t in self.outputs],
        )


def _version(location: Location) -> int | None:
    try:
        return location.delta_table().version()
    except TableNotFoundError:
        return None


class StepWatch:
    """Started before a step runs in this process, finished after: the step's :class:`StepLineage`."""

    def __init__(self, step: str) -> None:
        from lakemeta.config import load_config
        from lakemeta.lake.batches import running_plan
        from lakemeta.registry import all_schemas

        self.lake, self.catalog = load_config().require_paths()
        self.tables = set(all_schemas())
        self.inputs: list[TableVersion] = []
        if step in BATCH_STEPS and (plan := running_plan(self.catalog)) is not None:
            self.inputs = [
                TableVersion(self.lake / batch.table_name, batch.to_version)
                for batch in plan.batches
                if batch.to_version is not None  # a dropped table is read no more
            ]
        elif step in STATE_READERS or step == "publish_catalog":
            state = step in STATE_READERS
            read = sorted(name for name in self.tables if name.startswith("state/") == state)
            versions = {name: _version(self.catalog / name) for name in read}
            self.inputs = [
                TableVersion(self.catalog / name, version)
                for name, version in versions.items()
                if version is not None
            ]
        self.written: set[str] = set()
        store.write_observers.append(self._written)

    def _written(self, name: str) -> None:
        if name in self.tables:
            self.written.add(name)

    def finish(self) -> StepLineage:
        """The lineage of the step, once it has run (or failed)."""
        store.write_observers.remove(self._written)
        outputs = [
            TableVersion(self.catalog / name, _version(self.catalog / name)) for name in sorted(self.written)
        ]
        return StepLineage(self.inputs, outputs)
